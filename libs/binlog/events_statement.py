"""Statement events: Query (2), MariaDB Query_compressed (165), Intvar (5), Rand (13),
User_var (14), and the LOAD DATA family: Begin_load_query (17), Execute_load_query (18),
Append_block (9), Exec_load (10), Delete_file (11). Layouts: `statement_events.h`
(Query_event, Intvar_event, Rand_event, User_var_event), `load_data_events.h`; status-variable
codes from `statement_events.h` (0-20) and MariaDB `log_event.h` (128-131, 255).
"""
from __future__ import annotations

import struct
from dataclasses import dataclass, field

from libs.binlog.compression import binlog_buf_compress, binlog_buf_uncompress
from libs.binlog.constants import EventType
from libs.binlog.dummy import query_dummy, user_var_dummy
from libs.binlog.errors import MalformedError
from libs.binlog.wire import U32, Cursor, Layout, layout_codec


# ---- records ----------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class Query:
    thread_id: int
    exec_time: int
    error_code: int
    db: str
    query: bytes  # exact bytes, for byte-exact re-encoding
    status_vars: bytes  # raw block, for byte-exact re-encoding
    status: dict = field(default_factory=dict)  # decoded status variables by name

    @property
    def sql(self) -> str:
        return self.query.decode("utf-8", errors="replace")


@dataclass(frozen=True, slots=True)
class Intvar:
    """Intvar (5): 1 = LAST_INSERT_ID, 2 = INSERT_ID (statement_events.h)."""

    kind: int
    value: int

    @property
    def name(self) -> str:
        return {1: "LAST_INSERT_ID", 2: "INSERT_ID"}.get(self.kind, f"INVALID_INT_{self.kind}")


@dataclass(frozen=True, slots=True)
class Rand:
    seed1: int
    seed2: int


@dataclass(frozen=True, slots=True)
class UserVar:
    """User_var (14). value_type: 0 STRING, 1 REAL, 2 INT, 4 DECIMAL (Item_result)."""

    name: bytes
    is_null: bool
    value_type: int | None = None
    charset: int | None = None
    value: bytes | None = None  # raw value bytes as logged
    flags: int | None = None  # UNSIGNED_F etc.; None when the byte is absent (older servers)


@dataclass(frozen=True, slots=True)
class CompressedQuery(Query):
    """MariaDB Query_compressed (165): a Query whose text is stored zlib-compressed; `query` holds
    the decompressed text, `compressed` the exact stored bytes."""

    compressed: bytes = b""


@dataclass(frozen=True, slots=True)
class ExecuteLoadQuery(Query):
    """Execute_load_query (18): a Query plus the LOAD DATA file reference."""

    file_id: int = 0
    fn_pos_start: int = 0
    fn_pos_end: int = 0
    dup_handling: int = 0


@dataclass(frozen=True, slots=True)
class LoadBlock:
    """Begin_load_query (17) / Append_block (9): a chunk of a LOAD DATA file."""

    file_id: int
    data: bytes


@dataclass(frozen=True, slots=True)
class LoadFileRef:
    """Delete_file (11) / Exec_load (10): refer to a LOAD DATA file by id."""

    file_id: int

QUERY_POST = Layout([("thread_id", "I"), ("exec_time", "I"), ("db_len", "B"),
                     ("error_code", "H"), ("status_vars_len", "H")])
QUERY_POST_V3 = Layout([("thread_id", "I"), ("exec_time", "I"), ("db_len", "B"),
                        ("error_code", "H")])
EXEC_LOAD_EXTRA = Layout([("file_id", "I"), ("fn_pos_start", "I"), ("fn_pos_end", "I"),
                          ("dup_handling", "B")])
FILE_REF_LAYOUT = Layout([("file_id", "I")])
INTVAR_LAYOUT = Layout([("kind", "B"), ("value", "Q")])
RAND_LAYOUT = Layout([("seed1", "Q"), ("seed2", "Q")])
USER_VAR_VALUE = Layout([("value_type", "B"), ("charset", "I"), ("value_len", "I")])
OVER_MAX_DBS_IN_EVENT_MTS = 254
MARIA_FL3_ALTER_SEQ = 0x04 | 0x08  # FL_COMMIT_ALTER_E1 | FL_ROLLBACK_ALTER_E1 carry sa_seq_no


def _fixed(n: int, fmt: str | None = None):
    st = struct.Struct("<" + fmt) if fmt else None

    def read(cur: Cursor):
        raw = cur.take(n, "status variable")
        return st.unpack(raw) if st else int.from_bytes(raw, "little")
    return read


def _len_str(cur: Cursor):
    return cur.take(cur.u8("string length"), "status string")


def _catalog(cur: Cursor):  # Q_CATALOG_CODE (5.0.0-5.0.3): length, string, NUL
    s = _len_str(cur)
    cur.take(1, "catalog NUL")
    return s


def _invoker(cur: Cursor):
    return _len_str(cur), _len_str(cur)


def _updated_dbs(cur: Cursor):
    n = cur.u8("updated db count")
    if n == OVER_MAX_DBS_IN_EVENT_MTS:
        return ()
    return tuple(cur.cstring("updated db name") for _ in range(n))


def _gtid_flags3(cur: Cursor):
    flags = cur.u8("gtid flags3")
    return (flags, cur.u64("sa_seq_no")) if flags & MARIA_FL3_ALTER_SEQ else (flags, None)


def _charset_collations(cur: Cursor):
    """Q_CHARACTER_SET_COLLATIONS (131, MariaDB 11.2+ @@character_set_collations), as written by
    Charset_collation_map_st::to_binary (sql/charset_collations.h): count u8, then per entry
    the charset's default collation id u16 and the collation it maps to u16, little endian.
    Returns ((from_id, to_id), ...)."""
    count = cur.u8("character_set_collations count")
    return tuple((cur.u16("charset id"), cur.u16("collation id")) for _ in range(count))


def _dummy_pad(cur: Cursor):  # Q_DUMMY: padding in a BEGIN replacing a GTID; rest of the block
    return cur.rest()


# code -> (name, reader); a code missing here ends status parsing, the text stays intact
STATUS_VARS = {
    0: ("flags2", _fixed(4)), 1: ("sql_mode", _fixed(8)), 2: ("catalog", _catalog),
    3: ("auto_increment", _fixed(4, "HH")), 4: ("charset", _fixed(6, "HHH")),
    5: ("time_zone", _len_str), 6: ("catalog_nz", _len_str), 7: ("lc_time_names", _fixed(2)),
    8: ("charset_database", _fixed(2)), 9: ("table_map_for_update", _fixed(8)),
    10: ("master_data_written", _fixed(4)), 11: ("invoker", _invoker),
    12: ("updated_db_names", _updated_dbs), 13: ("microseconds", _fixed(3)),
    14: ("commit_ts", _fixed(8)), 15: ("commit_ts2", _fixed(8)),
    16: ("explicit_defaults_for_timestamp", _fixed(1)), 17: ("ddl_logged_with_xid", _fixed(8)),
    18: ("default_collation_for_utf8mb4", _fixed(2)), 19: ("sql_require_primary_key", _fixed(1)),
    20: ("default_table_encryption", _fixed(1)),
    128: ("hrnow", _fixed(3)), 129: ("xid", _fixed(8)), 130: ("gtid_flags3", _gtid_flags3),
    131: ("character_set_collations", _charset_collations),
    255: ("dummy", _dummy_pad),
}


def parse_status_vars(block: bytes) -> dict:
    """Decode the status-variable block into {name: value}. An unknown code stops decoding
    (its length is unknown) and is reported under "unknown_code"; the query text is located by
    status_vars_len, never by this walk, so it is never lost."""
    out: dict = {}
    cur = Cursor(block)
    while cur.remaining:
        code = cur.u8("status code")
        entry = STATUS_VARS.get(code)
        if entry is None:
            out["unknown_code"] = code
            break
        try:
            out[entry[0]] = entry[1](cur)
        except MalformedError:
            out["unknown_code"] = code  # overruns the block: keep what we have
            break
    return out


def _decode_query_parts(header, body: bytes, ctx, type_code: int, extra: Layout | None):
    cur = Cursor(body)
    default = 13 + (extra.size if extra else 0)
    post_len = ctx.post_header_len(type_code, default)
    if post_len == QUERY_POST_V3.size and extra is None:  # binlog v3: no status variables
        thread_id, exec_time, db_len, error_code = cur.fields(QUERY_POST_V3)
        status_len = 0
    else:
        thread_id, exec_time, db_len, error_code, status_len = cur.fields(QUERY_POST)
    extra_vals = cur.fields(extra) if extra else ()
    status = cur.take(status_len, "status variables")
    db = cur.take(db_len, "db name")
    if cur.u8("db terminator") != 0:
        raise MalformedError("db name not NUL-terminated")
    return (thread_id, exec_time, error_code, db, status, cur.rest()), extra_vals


def _text(raw: bytes) -> str:
    return raw.decode("utf-8", errors="surrogateescape")


def decode_query(header, body: bytes, ctx):
    (tid, etime, err, db, status, text), _ = _decode_query_parts(header, body, ctx,
                                                                EventType.QUERY, None)
    dummy = query_dummy(header, tid, etime, db, err, status, text, body)
    if dummy is not None:
        return dummy
    return Query(tid, etime, err, _text(db), text, status, parse_status_vars(status))


def _encode_query_parts(rec, type_code, ctx, extra: bytes = b"", query: bytes | None = None):
    db = rec.db.encode("utf-8", errors="surrogateescape")
    if ctx.post_header_len(type_code, 13) == QUERY_POST_V3.size and not extra:
        post = QUERY_POST_V3.pack(rec.thread_id, rec.exec_time, len(db), rec.error_code)
    else:
        post = QUERY_POST.pack(rec.thread_id, rec.exec_time, len(db), rec.error_code,
                               len(rec.status_vars))
    return post + extra + rec.status_vars + db + b"\0" + (rec.query if query is None else query)


def encode_query(rec, header, ctx) -> bytes:
    if hasattr(rec, "carrier"):  # a DummyEvent decoded from a Query
        return rec.raw
    return _encode_query_parts(rec, EventType.QUERY, ctx)


# ---- Query_compressed (165): MariaDB log_event.cc binlog_buf_compress ----------------------

def decode_query_compressed(header, body: bytes, ctx) -> CompressedQuery:
    (tid, etime, err, db, status, packed), _ = _decode_query_parts(
        header, body, ctx, EventType.QUERY_COMPRESSED, None)
    text = binlog_buf_uncompress(packed, "compressed query", ctx.limits)
    return CompressedQuery(tid, etime, err, _text(db), text, status, parse_status_vars(status),
                           compressed=packed)


def encode_query_compressed(rec: CompressedQuery, header, ctx) -> bytes:
    packed = rec.compressed
    if not packed:
        packed = binlog_buf_compress(rec.query)
    return _encode_query_parts(rec, EventType.QUERY_COMPRESSED, ctx, query=packed)


# ---- Execute_load_query (18) ------------------------------------------------------------------

def decode_execute_load_query(header, body: bytes, ctx) -> ExecuteLoadQuery:
    (tid, etime, err, db, status, text), (fid, start, end, dup) = _decode_query_parts(
        header, body, ctx, EventType.EXECUTE_LOAD_QUERY, EXEC_LOAD_EXTRA)
    return ExecuteLoadQuery(tid, etime, err, _text(db), text, status, parse_status_vars(status),
                            file_id=fid, fn_pos_start=start, fn_pos_end=end, dup_handling=dup)


def encode_execute_load_query(rec: ExecuteLoadQuery, header, ctx) -> bytes:
    extra = EXEC_LOAD_EXTRA.pack(rec.file_id, rec.fn_pos_start, rec.fn_pos_end, rec.dup_handling)
    return _encode_query_parts(rec, EventType.EXECUTE_LOAD_QUERY, ctx, extra=extra)


# ---- Begin_load_query (17), Append_block (9), Exec_load (10), Delete_file (11) -------------

def decode_load_block(header, body: bytes, ctx) -> LoadBlock:
    cur = Cursor(body)
    return LoadBlock(cur.u32("file_id"), cur.rest())


def encode_load_block(rec: LoadBlock, header, ctx) -> bytes:
    return U32.pack(rec.file_id) + rec.data


# Exec_load / Delete_file: the body is exactly the 4-byte file id (load_data_events.h).
decode_file_ref, encode_file_ref = layout_codec(FILE_REF_LAYOUT, LoadFileRef)


# ---- Intvar (5), Rand (13), User_var (14) ----------------------------------------------------

# Both bodies are exactly one fixed field table (statement_events.h Intvar_event, Rand_event).
decode_intvar, encode_intvar = layout_codec(INTVAR_LAYOUT, Intvar)
decode_rand, encode_rand = layout_codec(RAND_LAYOUT, Rand)


def decode_user_var(header, body: bytes, ctx):
    cur = Cursor(body)
    name = cur.take(cur.u32("name length"), "name")
    is_null = cur.u8("is_null")
    if is_null:
        cur.end()
        return user_var_dummy(name, True, body) or UserVar(name, True)
    vtype, charset, vlen = cur.fields(USER_VAR_VALUE)
    value = cur.take(vlen, "value")
    flags = cur.u8("flags") if cur.remaining else None
    cur.end()
    return UserVar(name, False, vtype, charset, value, flags)


def encode_user_var(rec, header, ctx) -> bytes:
    if hasattr(rec, "carrier"):
        return rec.raw
    out = U32.pack(len(rec.name)) + rec.name
    if rec.is_null:
        return out + b"\x01"
    out += b"\x00" + USER_VAR_VALUE.pack(rec.value_type, rec.charset, len(rec.value)) + rec.value
    return out + (bytes((rec.flags,)) if rec.flags is not None else b"")


STATEMENT_CODECS = {
    EventType.QUERY: (decode_query, encode_query),
    EventType.QUERY_COMPRESSED: (decode_query_compressed, encode_query_compressed),
    EventType.EXECUTE_LOAD_QUERY: (decode_execute_load_query, encode_execute_load_query),
    EventType.BEGIN_LOAD_QUERY: (decode_load_block, encode_load_block),
    EventType.APPEND_BLOCK: (decode_load_block, encode_load_block),
    EventType.EXEC_LOAD: (decode_file_ref, encode_file_ref),
    EventType.DELETE_FILE: (decode_file_ref, encode_file_ref),
    EventType.INTVAR: (decode_intvar, encode_intvar),
    EventType.RAND: (decode_rand, encode_rand),
    EventType.USER_VAR: (decode_user_var, encode_user_var),
}

"""Table_map (19) codec (rows_event.h Table_map_event).

  post-header: its length is the FDE's post_header_len[TABLE_MAP - 1] (ctx.post_header_len):
               8 = table_id u48, flags u16 (5.1.4+); 6 = table_id u32, flags u16 (servers
               before 5.1.4, e.g. the pre-GA 5.1/5.2 trees of corpus ver_5_1-wl2325_r.001);
               a longer post-header is skipped up to its length, as the server does
  body:        db_len u8, db, 0x00, table_len u8, table, 0x00, column_count (packed),
               column types [column_count], then, when the body goes on (pre-GA trees end
               here: no metadata, no null bitmap):
               metadata_len (packed), metadata,
               null bitmap ((column_count + 7) / 8 bytes, LSB first),
               optional metadata (MySQL 8.0.1+ / MariaDB 10.5+ binlog_row_metadata):
               TLV records `type u8, length (packed), value` (Optional_metadata_field_type).
"""
from __future__ import annotations

from dataclasses import dataclass

from libs.binlog.column_meta import ENUM_OR_SET, read_metas, real_type, write_metas
from libs.binlog.constants import ColumnType as T
from libs.binlog.context import DecodeContext
from libs.binlog.errors import BinlogError, LimitError, MalformedError
from libs.binlog.packed import read_bitmap, read_msb_bitmap, read_packed, write_bitmap, write_packed


# ---- records ----------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class TableMap:
    """Table_map (19) body (rows_event.h Table_map_event), optional metadata decoded.

    `column_types` are the *real* types: an ENUM/SET hidden behind STRING (its metadata's first
    byte) is reported as ENUM/SET; `wire_column_types` keep the bytes as written. `column_metas`
    are integers in the convention `mariadb-binlog -vv` prints (`meta=`): STRING/ENUM/SET/
    NEWDECIMAL = first byte << 8 | second byte, VARCHAR = u16 LE, BIT = bits%8 | bytes << 8,
    one-byte metadata as is, 0 when the type has none.
    Optional metadata fields are None when the Table_map did not carry them (NO_LOG/MINIMAL).
    """

    table_id: int
    flags: int
    database: str
    table: str
    column_types: tuple[int, ...]
    column_metas: tuple[int, ...]
    nullable: tuple[bool, ...]
    wire_column_types: tuple[int, ...] = ()
    raw_metadata: bytes = b""  # the field-metadata block exactly as written
    raw_optional_metadata: bytes = b""  # the TLV block exactly as written
    signedness: tuple[bool, ...] | None = None  # per column: True = UNSIGNED (numeric only)
    default_charset: int | None = None  # collation id
    column_charsets: tuple[int | None, ...] | None = None  # per column collation (None: not text)
    column_names: tuple[str, ...] | None = None
    set_values: tuple[tuple[bytes, ...] | None, ...] | None = None  # per column
    enum_values: tuple[tuple[bytes, ...] | None, ...] | None = None  # per column
    geometry_types: tuple[int | None, ...] | None = None  # per column
    primary_key: tuple[int, ...] | None = None  # column ordinals
    primary_key_prefixes: tuple[tuple[int, int], ...] | None = None  # (ordinal, prefix; 0 = whole)
    column_visibility: tuple[bool, ...] | None = None  # True = visible
    enum_set_default_charset: int | None = None
    enum_set_column_charsets: tuple[int | None, ...] | None = None
    unknown_optional_fields: tuple[tuple[int, bytes], ...] = ()
    # False: the body ended after the column types (MySQL 5.1 pre-GA trees): no metadata block
    # and no null bitmap were logged, `nullable` is then all True (unknown).
    metadata_block: bool = True

    @property
    def column_count(self) -> int:
        return len(self.column_types)

NUMERIC_TYPES = frozenset((T.TINY, T.SHORT, T.INT24, T.LONG, T.LONGLONG, T.NEWDECIMAL,
                           T.FLOAT, T.DOUBLE))
# Columns that get an entry in the charset lists. VECTOR is included: MySQL 9 logs one for it
# (corpus vector.binlog: the TEXT after a VECTOR column is character column #1).
CHARACTER_TYPES = frozenset((T.STRING, T.VAR_STRING, T.VARCHAR, T.BLOB, T.TINY_BLOB,
                             T.MEDIUM_BLOB, T.LONG_BLOB, T.VECTOR))

# Optional_metadata_field_type (rows_event.h)
SIGNEDNESS, DEFAULT_CHARSET, COLUMN_CHARSET, COLUMN_NAME = 1, 2, 3, 4
SET_STR_VALUE, ENUM_STR_VALUE, GEOMETRY_TYPE, SIMPLE_PRIMARY_KEY = 5, 6, 7, 8
PRIMARY_KEY_WITH_PREFIX, ENUM_AND_SET_DEFAULT_CHARSET = 9, 10
ENUM_AND_SET_COLUMN_CHARSET, COLUMN_VISIBILITY = 11, 12


TABLE_MAP_POST_HEADER = 8  # TABLE_MAP_HEADER_LEN (rows_event.h) when the FDE says nothing
OLD_POST_HEADER = 6  # before 5.1.4: 4-byte table id + flags


def post_header_length(ctx: DecodeContext) -> int:
    """Table_map post-header length from the stream's FDE (rows_event.h Table_map_event reads
    post_header_len[TABLE_MAP_EVENT - 1] the same way)."""
    return ctx.post_header_len(19, TABLE_MAP_POST_HEADER)


def table_id_width(ctx: DecodeContext) -> int:
    # Servers before 5.1.4 wrote a 4-byte table id; the FDE's post-header length tells (6 vs 8).
    return 4 if post_header_length(ctx) == OLD_POST_HEADER else 6


# Decoded Table_maps keyed on their raw body bytes (+ what else the decode reads from the
# context): MariaDB logs a fresh, byte-identical Table_map per transaction (50k of them in the
# corpus' small_trx file), and TableMap records are immutable, so one decode serves them all.
_TM_CACHE: dict[tuple, TableMap] = {}
_TM_CACHE_MAX = 4096


def decode_table_map(body: bytes, ctx: DecodeContext) -> TableMap:
    if type(body) is not bytes:
        body = bytes(body)
    # Everything _decode reads besides the body must be in the key.
    key = (body, post_header_length(ctx), ctx.flavour, ctx.limits.max_columns)
    hit = _TM_CACHE.get(key)
    if hit is not None:
        return hit
    try:
        tm = _decode(memoryview(body), ctx)
    except BinlogError as exc:
        raise exc.located(file=ctx.file, source=ctx.source).__class__(
            exc.message, exc.file or ctx.file, exc.pos, 19, bytes(body), exc.source or ctx.source)
    except (IndexError, ValueError, UnicodeDecodeError) as exc:
        raise MalformedError(f"Table_map: {exc}", ctx.file, None, 19, bytes(body), ctx.source) from None
    if len(_TM_CACHE) >= _TM_CACHE_MAX:
        _TM_CACHE.clear()
    _TM_CACHE[key] = tm
    return tm


def _name(buf, pos: int, end: int) -> tuple[str, int]:
    if pos >= end:
        raise MalformedError("Table_map name length missing")
    n = buf[pos]
    if pos + 1 + n + 1 > end:
        raise MalformedError("Table_map name runs past the end of the body")
    if buf[pos + 1 + n] != 0:
        raise MalformedError("Table_map name not NUL-terminated")
    return bytes(buf[pos + 1:pos + 1 + n]).decode("utf-8", "surrogateescape"), pos + 2 + n


def _decode(buf, ctx: DecodeContext) -> TableMap:
    end = len(buf)
    post_len = post_header_length(ctx)
    if post_len != OLD_POST_HEADER and post_len < TABLE_MAP_POST_HEADER:
        raise MalformedError(f"Table_map post-header length {post_len} in the FDE is impossible")
    idw = table_id_width(ctx)
    if end < post_len:
        raise MalformedError("Table_map post-header runs past the end of the body")
    table_id = int.from_bytes(buf[:idw], "little")
    flags = buf[idw] | buf[idw + 1] << 8
    database, pos = _name(buf, post_len, end)
    table, pos = _name(buf, pos, end)
    ncols, pos = read_packed(buf, pos, end)
    if ncols > ctx.limits.max_columns:
        raise LimitError(f"Table_map {database}.{table} has {ncols} columns, more than max_columns "
                         f"{ctx.limits.max_columns} (MAX_FIELDS)")
    if pos + ncols > end:
        raise MalformedError("Table_map column types runs past the end of the body")
    wire_types = tuple(buf[pos:pos + ncols])
    pos += ncols
    if pos == end:
        # Pre-GA 5.1 trees logged no metadata and no null bitmap (the server reads them only
        # "if (bytes_read < event_len)"): metadata 0, nullability unknown -> nullable.
        return TableMap(table_id, flags, database, table, wire_types, (0,) * ncols,
                        (True,) * ncols, wire_types, metadata_block=False)
    meta_len, pos = read_packed(buf, pos, end)
    if pos + meta_len > end:
        raise MalformedError("Table_map metadata runs past the end of the body")
    raw_meta = bytes(buf[pos:pos + meta_len])
    metas = read_metas(wire_types, raw_meta)
    pos += meta_len
    nullable, pos = read_bitmap(buf, pos, ncols, end)
    types = tuple(real_type(t, m) for t, m in zip(wire_types, metas))
    raw_opt = bytes(buf[pos:end])
    fields = _decode_optional(raw_opt, types, ctx.flavour)
    return TableMap(table_id, flags, database, table, types, metas, nullable, wire_types,
                    raw_meta, raw_opt, **fields)


def _character_columns(types, flavour: str) -> list[int]:
    # MariaDB counts GEOMETRY as a character column ("base class is blob", log_event_server.cc).
    chars = CHARACTER_TYPES | ({T.GEOMETRY} if flavour == "mariadb" else set())
    return [i for i, t in enumerate(types) if t in chars]


def _per_column(ncols: int, indexes: list[int], values: list) -> tuple:
    out = [None] * ncols
    for i, v in zip(indexes, values):
        out[i] = v
    return tuple(out)


def _charsets(value: bytes, columns: list[int], ncols: int, with_default: bool):
    pos, end = 0, len(value)
    if with_default:
        default, pos = read_packed(value, pos, end)
        collations = [default] * len(columns)
        while pos < end:
            idx, pos = read_packed(value, pos, end)
            coll, pos = read_packed(value, pos, end)
            if idx >= len(columns):
                raise MalformedError("charset override for a column that is not character")
            collations[idx] = coll
        return default, _per_column(ncols, columns, collations)
    collations = []
    while pos < end:
        coll, pos = read_packed(value, pos, end)
        collations.append(coll)
    return None, _per_column(ncols, columns, collations)


def _str_values(value: bytes, columns: list[int], ncols: int):
    pos, end, lists = 0, len(value), []
    while pos < end:
        count, pos = read_packed(value, pos, end)
        items = []
        for _ in range(count):
            n, pos = read_packed(value, pos, end)
            if pos + n > end:
                raise MalformedError("ENUM/SET value list runs past the end of the body")
            items.append(bytes(value[pos:pos + n]))
            pos += n
        lists.append(tuple(items))
    return _per_column(ncols, columns, lists)


def _packed_list(value: bytes) -> list[int]:
    pos, out = 0, []
    while pos < len(value):
        v, pos = read_packed(value, pos)
        out.append(v)
    return out


def _decode_optional(raw: bytes, types, flavour: str) -> dict:
    ncols = len(types)
    fields: dict = {}
    unknown = []
    pos, end = 0, len(raw)
    numeric = [i for i, t in enumerate(types) if t in NUMERIC_TYPES]
    chars = _character_columns(types, flavour)
    enum_set = [i for i, t in enumerate(types) if t in ENUM_OR_SET]
    while pos < end:
        ftype = raw[pos]
        length, pos = read_packed(raw, pos + 1, end)
        if pos + length > end:
            raise MalformedError(f"Table_map optional metadata field {ftype} runs past the end of the body")
        value = raw[pos:pos + length]
        pos += length
        if ftype == SIGNEDNESS:
            if len(value) * 8 < len(numeric):
                raise MalformedError("SIGNEDNESS bitmap shorter than the numeric columns")
            bits = read_msb_bitmap(value, 0, len(numeric))
            fields["signedness"] = tuple(bool(v) for v in _per_column(ncols, numeric, bits))
        elif ftype in (DEFAULT_CHARSET, COLUMN_CHARSET):
            default, per_col = _charsets(value, chars, ncols, ftype == DEFAULT_CHARSET)
            fields["default_charset"], fields["column_charsets"] = default, per_col
        elif ftype in (ENUM_AND_SET_DEFAULT_CHARSET, ENUM_AND_SET_COLUMN_CHARSET):
            default, per_col = _charsets(value, enum_set, ncols, ftype == ENUM_AND_SET_DEFAULT_CHARSET)
            fields["enum_set_default_charset"], fields["enum_set_column_charsets"] = default, per_col
        elif ftype == COLUMN_NAME:
            names, vpos = [], 0
            while vpos < len(value):
                n, vpos = read_packed(value, vpos)
                if vpos + n > len(value):
                    raise MalformedError("COLUMN_NAME runs past the end of the body")
                names.append(bytes(value[vpos:vpos + n]).decode("utf-8", "surrogateescape"))
                vpos += n
            fields["column_names"] = tuple(names)
        elif ftype == SET_STR_VALUE:
            fields["set_values"] = _str_values(value, [i for i in enum_set if types[i] == T.SET], ncols)
        elif ftype == ENUM_STR_VALUE:
            fields["enum_values"] = _str_values(value, [i for i in enum_set if types[i] == T.ENUM], ncols)
        elif ftype == GEOMETRY_TYPE:
            geo = [i for i, t in enumerate(types) if t == T.GEOMETRY]
            fields["geometry_types"] = _per_column(ncols, geo, _packed_list(value))
        elif ftype == SIMPLE_PRIMARY_KEY:
            fields["primary_key"] = tuple(_packed_list(value))
        elif ftype == PRIMARY_KEY_WITH_PREFIX:
            flat = _packed_list(value)
            if len(flat) % 2:
                raise MalformedError("PRIMARY_KEY_WITH_PREFIX has an odd number of integers")
            pairs = tuple(zip(flat[0::2], flat[1::2]))
            fields["primary_key_prefixes"] = pairs
            fields["primary_key"] = tuple(i for i, _ in pairs)
        elif ftype == COLUMN_VISIBILITY:
            if len(value) * 8 < ncols:
                raise MalformedError("COLUMN_VISIBILITY bitmap too short")
            fields["column_visibility"] = read_msb_bitmap(value, 0, ncols)
        else:
            unknown.append((ftype, bytes(value)))
    if unknown:
        fields["unknown_optional_fields"] = tuple(unknown)
    return fields


def encode_table_map(tm: TableMap, ctx: DecodeContext) -> bytes:
    """Inverse of decode_table_map. Byte-exact: wire types, metadata and the optional-metadata
    block are written as recorded (wire types default to the real types, ENUM/SET as STRING)."""
    wire = tm.wire_column_types or tuple(
        T.STRING if t in ENUM_OR_SET else t for t in tm.column_types)
    meta = tm.raw_metadata or write_metas(wire, tm.column_metas)
    db = tm.database.encode("utf-8", "surrogateescape")
    name = tm.table.encode("utf-8", "surrogateescape")
    post_len = post_header_length(ctx)
    head = tm.table_id.to_bytes(table_id_width(ctx), "little") + tm.flags.to_bytes(2, "little")
    head += bytes(max(0, post_len - len(head)))  # unknown longer post-header: zero-filled
    names = b"".join((bytes((len(db),)), db, b"\0", bytes((len(name),)), name, b"\0",
                      write_packed(len(wire)), bytes(wire)))
    if not tm.metadata_block:
        return head + names
    return b"".join((head, names, write_packed(len(meta)), meta, write_bitmap(tm.nullable),
                     tm.raw_optional_metadata))

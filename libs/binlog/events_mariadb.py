"""MariaDB events: Annotate_rows (160), Binlog_checkpoint (161), Gtid (162), Gtid_list (163),
Start_encryption (164, refused). Also MySQL Rows_query (29), the other "statement behind the
rows" event (WL#4033). Layouts: MariaDB `sql/log_event.h` / `log_event.cc`
(Gtid_log_event::write, Gtid_list_log_event, Binlog_checkpoint_log_event), MySQL
`rows_event.h` Rows_query_event.
"""
from __future__ import annotations

from dataclasses import dataclass

from libs.binlog.constants import (MARIA_FL_COMPLETED_XA, MARIA_FL_GROUP_COMMIT_ID, MARIA_FL_PREPARED_XA,
                        MARIA_FL_STANDALONE, EventType)
from libs.binlog.errors import MalformedError, UnsupportedError
from libs.binlog.fastrec import fast_constructor
from libs.binlog.wire import U32, U64, Cursor, Layout


# ---- records ----------------------------------------------------------------------------------

class MariaGtidText:
    """`gtid` of a record holding a MariaDB GTID triple (MariaGtid, GtidListEntry): the text form
    domain-server-sequence (MariaDB GTID docs, as @@gtid_binlog_pos and mariadb-binlog print it)."""

    __slots__ = ()  # a base of slotted records: adds no per-instance dict

    @property
    def gtid(self) -> str:
        return f"{self.domain_id}-{self.server_id}-{self.seq_no}"


@dataclass(frozen=True, slots=True)
class MariaGtid(MariaGtidText):
    """MariaDB Gtid (162). Opens a transaction unless FL_STANDALONE is set (WL#4162 flavour)."""

    seq_no: int
    domain_id: int
    flags: int
    server_id: int
    commit_id: int | None = None
    xa_format_id: int | None = None
    xa_gtrid: bytes | None = None
    xa_bqual: bytes | None = None
    extra: bytes = b""  # flags_extra and anything newer, kept for byte-exact re-encoding

    @property
    def standalone(self) -> bool:
        return bool(self.flags & MARIA_FL_STANDALONE)


@dataclass(frozen=True, slots=True)
class RowsQuery:
    """Rows_query (29, WL#4033) or MariaDB Annotate_rows (160): the statement behind rows."""

    text: str
    raw: bytes = b""


@dataclass(frozen=True, slots=True)
class BinlogCheckpoint:
    """MariaDB Binlog_checkpoint (161)."""

    file: str


@dataclass(frozen=True, slots=True)
class GtidListEntry(MariaGtidText):
    domain_id: int
    server_id: int
    seq_no: int


@dataclass(frozen=True, slots=True)
class GtidList:
    """MariaDB Gtid_list (163). flags = high 4 bits of the count word."""

    entries: tuple
    flags: int = 0
    padding: bytes = b""  # MariaDB pads an empty list so a dummy (>= 25 bytes) can replace it

GTID_FIXED = Layout([("seq_no", "Q"), ("domain_id", "I"), ("flags2", "B")])
GTID_XA = Layout([("format_id", "i"), ("gtrid_len", "B"), ("bqual_len", "B")])
GTID_HEADER_LEN = 19  # Gtid_log_event::GTID_HEADER_LEN: the body is zero-padded up to it
GTID_LIST_ENTRY = Layout([("domain_id", "I"), ("server_id", "I"), ("seq_no", "Q")])
GTID_LIST_COUNT_MASK = (1 << 28) - 1  # high 4 bits of the count word are flags


def _text(raw: bytes) -> str:
    return raw.decode("utf-8", errors="surrogateescape")


# One Annotate_rows and one Gtid per MariaDB transaction: built without dataclass __init__.
_make_rows_query = fast_constructor(RowsQuery)
_make_gtid = fast_constructor(MariaGtid)


# ---- Annotate_rows (160) / Rows_query (29) ---------------------------------------------------

def decode_annotate_rows(header, body: bytes, ctx) -> RowsQuery:
    return _make_rows_query(_text(body), bytes(body))


def decode_rows_query(header, body: bytes, ctx) -> RowsQuery:
    # rows_event.h Rows_query_event: a 1-byte length (unreliable beyond 255, MySQL ignores it)
    # then the text up to the end of the body.
    if not body:
        raise MalformedError("Rows_query without length byte")
    return RowsQuery(_text(body[1:]), bytes(body))


def encode_rows_query(rec: RowsQuery, header, ctx) -> bytes:
    if rec.raw:
        return rec.raw
    text = rec.text.encode("utf-8", errors="surrogateescape")
    if header.type_code == EventType.ROWS_QUERY:
        return bytes((min(len(text), 255),)) + text
    return text


# ---- Binlog_checkpoint (161) -------------------------------------------------------------------

def decode_binlog_checkpoint(header, body: bytes, ctx) -> BinlogCheckpoint:
    cur = Cursor(body)
    name = cur.take(cur.u32("name length"), "file name")
    cur.end()
    return BinlogCheckpoint(_text(name))


def encode_binlog_checkpoint(rec: BinlogCheckpoint, header, ctx) -> bytes:
    name = rec.file.encode("utf-8", errors="surrogateescape")
    return U32.pack(len(name)) + name


# ---- Gtid (162) ----------------------------------------------------------------------------

_GTID_FIXED_UNPACK = GTID_FIXED.struct.unpack_from
_GTID_SLOW_FLAGS = MARIA_FL_GROUP_COMMIT_ID | MARIA_FL_PREPARED_XA | MARIA_FL_COMPLETED_XA


def decode_maria_gtid(header, body: bytes, ctx) -> MariaGtid:
    if len(body) >= 13:  # cheap path (one per transaction): no commit id, no XA ids
        seq_no, domain_id, flags = _GTID_FIXED_UNPACK(body, 0)
        if not flags & _GTID_SLOW_FLAGS:
            return _make_gtid(seq_no, domain_id, flags, header.server_id, None, None, None, None,
                              bytes(body[13:]))
    cur = Cursor(body)
    seq_no, domain_id, flags = cur.fields(GTID_FIXED)
    commit_id = fmt = gtrid = bqual = None
    if flags & MARIA_FL_GROUP_COMMIT_ID:
        commit_id = cur.u64("commit_id")
    if flags & (MARIA_FL_PREPARED_XA | MARIA_FL_COMPLETED_XA):
        fmt, glen, blen = cur.fields(GTID_XA)
        if glen > 64 or blen > 64:
            raise MalformedError(f"GTID XA id lengths {glen}/{blen} exceed 64")
        gtrid = cur.take(glen, "gtrid")
        bqual = cur.take(blen, "bqual")
    # flags_extra, extra_engines, sa_seq_no (10.5+) and the zero padding up to 19 bytes:
    # kept verbatim so re-encoding is exact.
    extra = cur.rest()
    return MariaGtid(seq_no, domain_id, flags, header.server_id, commit_id, fmt, gtrid, bqual,
                     extra)


def encode_maria_gtid(rec: MariaGtid, header, ctx) -> bytes:
    out = GTID_FIXED.pack(rec.seq_no, rec.domain_id, rec.flags)
    if rec.flags & MARIA_FL_GROUP_COMMIT_ID:
        out += U64.pack(rec.commit_id or 0)
    if rec.flags & (MARIA_FL_PREPARED_XA | MARIA_FL_COMPLETED_XA):
        out += GTID_XA.pack(rec.xa_format_id, len(rec.xa_gtrid), len(rec.xa_bqual))
        out += rec.xa_gtrid + rec.xa_bqual
    out += rec.extra
    return out.ljust(GTID_HEADER_LEN, b"\0")


# ---- Gtid_list (163) ---------------------------------------------------------------------------

def decode_gtid_list(header, body: bytes, ctx) -> GtidList:
    cur = Cursor(body)
    word = cur.u32("count")
    count = word & GTID_LIST_COUNT_MASK
    if count * GTID_LIST_ENTRY.size > cur.remaining:
        raise MalformedError(f"Gtid_list: {count} entries need {count * 16} bytes, "
                             f"{cur.remaining} left")
    entries = tuple(GtidListEntry(*cur.fields(GTID_LIST_ENTRY)) for _ in range(count))
    padding = cur.rest()
    if padding.strip(b"\0") or len(padding) >= GTID_LIST_ENTRY.size:
        raise MalformedError(f"Gtid_list: {len(padding)} unexpected trailing bytes")
    return GtidList(entries, word >> 28, padding)


def encode_gtid_list(rec: GtidList, header, ctx) -> bytes:
    out = [U32.pack(len(rec.entries) | (rec.flags << 28))]
    out.extend(GTID_LIST_ENTRY.pack(e.domain_id, e.server_id, e.seq_no) for e in rec.entries)
    return b"".join(out) + rec.padding


# ---- Start_encryption (164) ----------------------------------------------------------------------

def decode_start_encryption(header, body: bytes, ctx):
    raise UnsupportedError("encrypted binlog not supported")


def encode_start_encryption(rec, header, ctx) -> bytes:
    raise UnsupportedError("encrypted binlog not supported")


MARIADB_CODECS = {
    EventType.ANNOTATE_ROWS: (decode_annotate_rows, encode_rows_query),
    EventType.ROWS_QUERY: (decode_rows_query, encode_rows_query),
    EventType.BINLOG_CHECKPOINT: (decode_binlog_checkpoint, encode_binlog_checkpoint),
    EventType.MARIA_GTID: (decode_maria_gtid, encode_maria_gtid),
    EventType.GTID_LIST: (decode_gtid_list, encode_gtid_list),
    EventType.START_ENCRYPTION: (decode_start_encryption, encode_start_encryption),
}

"""Immutable records the codec produces: the event envelope and one body type per event family.

Contract for every consumer (boundary parser, assembler, rows, dump, shipper): field names here
are stable. Decoders may add fields; renaming one means updating every user in the same change.
Column values inside row images are keyed by 0-based column ordinal and hold only the columns
*present* in the image (WL#5092: absent is not NULL); SQL NULL is Python None.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .constants import MARIA_FL_STANDALONE, BoundaryType, EventType, boundary_marker


@dataclass(frozen=True, slots=True)
class Header:
    """The 19-byte common header (binlog_event.h Log_event_header)."""

    timestamp: int
    type_code: int
    server_id: int
    event_size: int
    log_pos: int
    flags: int


@dataclass(frozen=True, slots=True)
class Event:
    """One decoded event. `pos` is its start offset in the binlog file, computed from the byte
    stream (never from header.log_pos: MariaDB 11.4+ writes 0 inside transactions)."""

    header: Header
    pos: int
    body: Any
    checksum_ok: bool | None = None  # None: the stream carries no checksums
    file: str | None = None

    @property
    def type_code(self) -> int:
        return self.header.type_code

    @property
    def end_pos(self) -> int:
        return self.pos + self.header.event_size

    @property
    def boundary_marker(self) -> BoundaryType:
        return boundary_marker(self.header.flags)

    @property
    def type_name(self) -> str:
        try:
            return EventType(self.header.type_code).name
        except ValueError:
            return f"UNKNOWN_{self.header.type_code}"


# ---- control events -------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class FormatDescription:
    binlog_version: int
    server_version: str
    create_timestamp: int
    header_length: int
    post_header_lengths: bytes
    checksum_alg: int  # CHECKSUM_OFF / CHECKSUM_CRC32 / CHECKSUM_UNDEFINED (pre-5.6.1 servers)
    flavour: str  # "mysql" | "mariadb"


@dataclass(frozen=True, slots=True)
class Rotate:
    position: int
    next_file: str


@dataclass(frozen=True, slots=True)
class Stop:
    pass


@dataclass(frozen=True, slots=True)
class Xid:
    xid: int


@dataclass(frozen=True, slots=True)
class MysqlGtid:
    """Gtid (33) / Anonymous_gtid (34) / tagged Gtid (42) (control_events.h Gtid_event)."""

    anonymous: bool
    commit_flag: int
    sid: str  # uuid text
    gno: int
    tag: str | None = None
    last_committed: int | None = None
    sequence_number: int | None = None
    immediate_commit_ts: int | None = None
    original_commit_ts: int | None = None
    transaction_length: int | None = None
    immediate_server_version: int | None = None
    original_server_version: int | None = None

    @property
    def gtid(self) -> str:
        return f"{self.sid}:{self.tag}:{self.gno}" if self.tag else f"{self.sid}:{self.gno}"


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
class XaPrepare:
    one_phase: bool
    format_id: int
    gtrid: bytes
    bqual: bytes


# ---- statement events -----------------------------------------------------------------------

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
class RowsQuery:
    """Rows_query (29, WL#4033) or MariaDB Annotate_rows (160): the statement behind rows."""

    text: str
    raw: bytes = b""


@dataclass(frozen=True, slots=True)
class Dummy:
    """MariaDB dummy event: a Query or User_var placeholder replacing an event a consumer with a
    low capability cannot handle (MariaDB task 'dummy events'). Never applied."""

    carrier: str  # "query" | "user_var"
    replaced_type: int | None  # from the comment text when it still holds it


@dataclass(frozen=True, slots=True)
class Ignorable:
    """Unknown type code with LOG_EVENT_IGNORABLE_F (WL#4033): skipped and counted."""

    type_code: int
    data: bytes = b""


# ---- row events -----------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class RowChange:
    before: dict[int, Any] | None  # present columns only (0-based ordinal -> value)
    after: dict[int, Any] | None


ROW_OPERATIONS = ("insert", "update", "delete")


# ---- row half: Table_map and rows events (issue #3) ------------------------------------------

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


@dataclass(frozen=True, slots=True)
class JsonDiff:
    """One MySQL partial JSON update (Partial_update_rows, 39): json_diff.h enum_json_diff_operation."""

    operation: str  # "replace" | "insert" | "remove"
    path: str
    value: str | None  # JSON text; None for remove


@dataclass(frozen=True, slots=True)
class Rows:
    """Write/Update/Delete rows (v1 23-25, v2 30-32, partial 39, MariaDB compressed 166-171).

    Each RowChange holds only the columns present in its image (WL#5092): `before` for
    update/delete, `after` for insert/update; the other side is None. Partial JSON updates put a
    tuple[JsonDiff] in the after image in place of the whole document.
    """

    kind: str  # "insert" | "update" | "delete"
    table_id: int
    flags: int  # STMT_END_F = 1, NO_FOREIGN_KEY_CHECKS_F = 2, RELAXED_UNIQUE_CHECKS_F = 4, ...
    extra_info: bytes  # v2 extra row info (without its 2-byte length); b"" for v1
    column_count: int
    columns_present_before: tuple[bool, ...] | None
    columns_present_after: tuple[bool, ...] | None
    rows: tuple[RowChange, ...]
    type_code: int = 0
    compressed_payload: bytes | None = None  # MariaDB compressed events: the payload as written
    wire: Any = None  # RowsWireDetail (byte-exact re-encoding only)


@dataclass(frozen=True, slots=True)
class RowsWireDetail:
    """Bits servers fill differently and decoding does not need, kept for byte-exact
    re-encoding of Rows: the columns-present bitmaps as written (MySQL and older MariaDB set
    the unused high bits, MariaDB 10.11 clears them) and whether unused NULL-bitmap bits are
    set (MariaDB) or clear (MySQL 8), read from the first row image."""

    present_bitmaps: tuple[bytes, ...] = ()
    null_padding_ones: bool = True

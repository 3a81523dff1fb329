"""Immutable records the codec produces: the event envelope and one body type per event family.

Contract for every consumer (boundary parser, assembler, rows, dump, shipper): field names here
are stable. Decoders may add fields; renaming one means updating every user in the same change.
Column values inside row images are keyed by 0-based column ordinal and hold only the columns
*present* in the image (WL#5092: absent is not NULL); SQL NULL is Python None.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .constants import BoundaryType, EventType, boundary_marker


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


# MariaDB Gtid_log_event flags (sql/log_event.h)
MARIA_FL_STANDALONE = 0x01
MARIA_FL_GROUP_COMMIT_ID = 0x02
MARIA_FL_TRANSACTIONAL = 0x04
MARIA_FL_ALLOW_PARALLEL = 0x08
MARIA_FL_WAITED = 0x10
MARIA_FL_DDL = 0x20
MARIA_FL_PREPARED_XA = 0x40
MARIA_FL_COMPLETED_XA = 0x80


@dataclass(frozen=True, slots=True)
class MariaGtid:
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

    @property
    def gtid(self) -> str:
        return f"{self.domain_id}-{self.server_id}-{self.seq_no}"


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

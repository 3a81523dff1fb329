"""Records of the events records.py does not define: the rarer control and statement events,
the LOAD DATA family, MySQL GTID sets and group replication, MariaDB Gtid_list and
Binlog_checkpoint, Query's variants (CompressedQuery, ExecuteLoadQuery) and DummyEvent.

Why two modules: records.py holds what the pipeline reads (boundary, assembler, rows); these are
decoded for the dump, the simulator and byte-exact re-encoding, and of them only
TransactionPayload is read downstream (the assembler unwraps it). The split began as parallel
work on issue #3. The repeated @dataclass shape is not shared logic: each class is its own wire
layout, and one module would hold the same declarations. `libs.binlog` re-exports both.
Same contract: frozen, field names stable, exact bytes kept wherever the wire has freedom the
fields would not capture (for byte-exact re-encoding).
"""
from __future__ import annotations

from dataclasses import dataclass

from .records import Dummy, MariaGtidText, Query


@dataclass(frozen=True, slots=True)
class StartV3:
    """Start_event_v3 (1): the first event of binlog v1/v3 files (MySQL 3.23-4.x)."""

    binlog_version: int
    server_version: str
    create_timestamp: int


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
class Incident:
    incident: int  # 1 = LOST_EVENTS
    message: bytes


@dataclass(frozen=True, slots=True)
class Heartbeat:
    """Heartbeat (27): log file name; Heartbeat_v2 (41): the same as TLV fields (raw kept)."""

    log_file: str
    log_position: int | None = None  # v2 only
    fields: tuple = ()  # v2: ((type, value_bytes), ...) in wire order


@dataclass(frozen=True, slots=True)
class GtidInterval:
    start: int
    end: int  # exclusive, as on the wire


@dataclass(frozen=True, slots=True)
class PreviousGtids:
    """Previous_gtids (35): (sid, tag, intervals) per source; `fmt` is the 8.4 format byte
    (0 untagged, 1 tagged), kept so re-encoding is exact."""

    sets: tuple  # ((sid_text, tag or None, (GtidInterval, ...)), ...)
    fmt: int = 0


@dataclass(frozen=True, slots=True)
class TransactionContext:
    """Transaction_context (36, group replication)."""

    server_uuid: bytes
    thread_id: int
    gtid_specified: int
    snapshot_version: bytes
    write_set: tuple  # of bytes
    read_set: tuple


@dataclass(frozen=True, slots=True)
class ViewChange:
    """View_change (37, group replication)."""

    view_id: bytes  # 40-byte field as logged
    seq_number: int
    certification_info: tuple  # ((key bytes, value bytes), ...)


@dataclass(frozen=True, slots=True)
class TransactionPayload:
    """Transaction_payload (40): compressed inner events. `events` are decoded inner events whose
    `pos` is the offset inside the uncompressed payload (relative to the payload event, whose own
    file position is the enclosing Event.pos). `compressed` keeps the exact stored bytes."""

    compression_type: int  # 0 ZSTD, 255 NONE
    uncompressed_size: int
    payload_size: int
    events: tuple
    compressed: bytes
    header_fields: tuple = ()  # ((type, value bytes), ...) as on the wire, for exact re-encoding


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


@dataclass(frozen=True, slots=True)
class Opaque:
    """A known, framed and classified event whose body this codec keeps as bytes (legacy
    LOAD/Create_file of v3 files, MySQL 5.1 pre-GA rows events 20-22, Slave 7)."""

    type_code: int
    data: bytes


@dataclass(frozen=True, slots=True)
class DummyEvent(Dummy):
    """Dummy (records.py) plus the exact body bytes, for byte-exact re-encoding."""

    raw: bytes = b""

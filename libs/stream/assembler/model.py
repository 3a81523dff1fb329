"""What goes into and comes out of the assembler (one source stream = one Kafka key)."""
from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Iterator, NamedTuple

from libs.binlog.errors import BinlogError
from libs.binlog.header import event_type


class UnknownEventPolicy(Enum):
    """An unknown type code without LOG_EVENT_IGNORABLE_F (WL#4033): stop, or quarantine the frame."""

    FAIL = "fail"
    QUARANTINE = "quarantine"


@dataclass(frozen=True)
class AssemblerConfig:
    unknown_event_policy: UnknownEventPolicy = UnknownEventPolicy.FAIL
    """What to do with an unknown, non-ignorable event (DESIGN.md 'Ignorable events')."""
    chunk_max_events: int = 512
    """Open-transaction frames buffered in memory before a chunk is written to the SpillStore."""
    chunk_max_bytes: int = 4 << 20
    """Raw bytes buffered in memory before a chunk is written to the SpillStore."""
    open_trx_timeout_seconds: int | None = None
    """Quarantine an open transaction when its source was idle this long; None: keep it forever."""

    def __post_init__(self) -> None:
        if self.chunk_max_events < 1 or self.chunk_max_bytes < 1:
            raise ValueError("chunk limits must be positive")
        if self.open_trx_timeout_seconds is not None and self.open_trx_timeout_seconds <= 0:
            raise ValueError("open_trx_timeout_seconds must be positive or None")


class _InputFields(NamedTuple):
    raw: bytes
    file: str | None
    pos: int | None
    event: Any = None  # libs.binlog.Event
    error: BinlogError | None = None
    kafka_partition: int | None = None
    kafka_offset: int | None = None
    # A dump's Format_description shipped as a format record (libs/contracts/topic.py): the
    # stream's decoding context, not file content (no position to track, nothing to apply).
    format_record: bool = False


class AssembledInput(_InputFields):
    """One Kafka record after decoding: the decoded event, or the decode error for its frame.
    `file`/`pos` come from the Kafka headers (the shipper computed them from the byte stream).
    An immutable tuple, not a frozen dataclass: one is built per frame on the source's one core,
    and a frozen dataclass' __init__ cost 1.6 us of it, a tuple 0.5 us (bench/README.md)."""

    __slots__ = ()

    def __new__(cls, raw, file, pos, event=None, error=None, kafka_partition=None, kafka_offset=None,
                format_record=False):
        if (event is None) == (error is None):
            raise ValueError("an input holds exactly one of event / error")
        return tuple.__new__(cls, (raw, file, pos, event, error, kafka_partition, kafka_offset,
                                   format_record))

    @property
    def type_code(self) -> int | None:
        if self.event is not None:
            return self.event.header.type_code
        return self.error.type_code if self.error.type_code is not None else raw_type_code(self.raw)


def raw_type_code(raw: bytes) -> int | None:
    return event_type(raw) if len(raw) > 4 else None  # common header: timestamp u32, then type u8


@dataclass(frozen=True, slots=True)
class Frame:
    """One frame kept for an open transaction: what is needed to emit or to quarantine it."""

    file: str | None
    pos: int | None
    raw: bytes
    kafka_partition: int | None
    kafka_offset: int | None
    event: Any


@dataclass(frozen=True)
class Quarantined:
    """A frame that cannot be applied (schemas/quarantine_record.avsc without quarantined_at,
    which the Spark stage stamps so this module never reads a clock)."""

    source: str
    binlog_file: str | None
    binlog_pos: int | None
    type_code: int | None
    kind: str
    reason: str
    raw: bytes
    kafka_partition: int | None = None
    kafka_offset: int | None = None

    def to_record(self, quarantined_at_micros: int) -> dict:
        return {"source": self.source, "binlog_file": self.binlog_file, "binlog_pos": self.binlog_pos,
                "type_code": self.type_code, "kind": self.kind, "reason": self.reason, "raw": self.raw,
                "kafka_partition": self.kafka_partition, "kafka_offset": self.kafka_offset,
                "quarantined_at": quarantined_at_micros}


@dataclass(frozen=True)
class SpillRef:
    """Chunks 0..chunk_count-1 of one group in the SpillStore."""

    trx_key: str
    chunk_count: int


@dataclass(frozen=True, slots=True)
class Transaction:
    """A COMPLETE source transaction (its commit was seen). `payload` iterates its statement and
    row frames (with their Table_map and Rows_query/Annotate_rows frames) in binlog order, reading
    spilled chunks lazily: the SpillStore must keep them until the output is consumed (see
    AssemblerOutput.released). Slotted, so that the assembler builds one per transaction with
    libs.binlog.fastrec (1 us instead of 5)."""

    source: str
    trx_id: str  # GTID, else "file:pos" of the first event
    gtid: str | None
    xid: int | None
    commit_ts_micros: int
    server_id: int
    file: str  # binlog file of the commit event
    end_pos: int  # end position of the commit event: where a resumed reader continues
    start_file: str | None
    start_pos: int | None
    event_count: int
    frames: Any = field(repr=False, compare=False)  # re-iterable of Frame (payload only)
    xa_xid: str | None = None  # "format_id:gtrid_hex:bqual_hex" of an XA transaction

    @property
    def payload(self) -> Iterator[Frame]:
        return iter(self.frames)


@dataclass
class AssemblerOutput:
    transactions: list[Transaction] = field(default_factory=list)
    quarantined: list[Quarantined] = field(default_factory=list)
    released: list[SpillRef] = field(default_factory=list)
    """Chunks no longer referenced by the new state. Delete them (libs.stream.assembler.spill.release)
    only after this batch's outputs AND state are durably committed: a retried batch restarts
    from the previous state, which still references them."""
    counters: dict[str, int] = field(default_factory=dict)  # cumulative, after this feed


class StreamGapError(Exception):
    """The next frame does not start where the previous one ended in the same file: lost frames."""

    def __init__(self, source: str, file: str, expected_pos: int, got_pos: int):
        self.source, self.file, self.expected_pos, self.got_pos = source, file, expected_pos, got_pos
        super().__init__(f"gap in source {source}, file {file}: previous frame ended at {expected_pos}, "
                         f"next frame starts at {got_pos}")

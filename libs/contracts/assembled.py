"""The assembled record's kinds (schemas/assembled_record.avsc, field `kind`, enum AssembledKind),
declared once: what the assemble stage (libs/stages/assembly.py, pipelines/stages/assemble.py)
hands the rows and apply stages (pipelines/stages/sink.py). The members are the avsc's symbols,
in its order (tests/unit/stream/test_record_kinds.py).

A StrEnum: a member equals its text and is the same text in Spark and Avro. Spark columns are
compared with the members (F.col("kind") == RecordKind.SEGMENT); a record built as a dict carries
the member's `.value`, the wire's plain text: spark.createDataFrame fails on a str subclass.
"""
from __future__ import annotations

from enum import StrEnum
from typing import TypedDict


class RecordKind(StrEnum):
    """What an assembled record is (the avsc's doc):

    SEGMENT     a bounded slice of a COMPLETE transaction's frames (a large transaction becomes
                several segments, decoded in parallel)
    QUARANTINE  one frame that must not be applied
    RELEASE     spill chunks the new state no longer references (deleted once the batch that
                released them is committed)
    SNAPSHOT    one snapshot record (schemas/snapshot_record.avsc) as the one frame of a segment,
                at its run's position (libs/snapshot/changes.py)
    HEARTBEAT   the source is caught up to (binlog_file, binlog_pos) as of commit_ts, every
                transaction before it complete (schemas/heartbeat_record.avsc)
    COUNTERS    one per source and batch, the assembler's counts after the batch and the oldest
                Kafka time of the source's records in it, read by the driver for its metrics
                only (libs/stages/counters.py)
    """

    SEGMENT = "segment"
    QUARANTINE = "quarantine"
    RELEASE = "release"
    SNAPSHOT = "snapshot"
    HEARTBEAT = "heartbeat"
    COUNTERS = "counters"


class SegmentFrame(TypedDict):
    """One frame of a segment (the avsc's SegmentFrame)."""

    file: str | None
    pos: int | None
    raw: bytes  # the event's exact bytes
    event_index: int  # its place in its transaction's payload; -1: context only
    context: bool  # a Table_map / Rows_query repeated from an earlier segment: decoding context only


class Segment(TypedDict):
    """A SEGMENT record as the assemble stage builds it (libs/stages/assembly.py segment_records):
    the avsc's fields a segment sets, the others absent (null on the wire). A plain dict: the
    rows stage reads thousands per batch through pandas and Arrow."""

    kind: str  # RecordKind.SEGMENT.value
    source: str
    trx_id: str
    gtid: str | None
    xid: int | None
    server_id: int
    commit_ts: int  # epoch micros
    trx_file: str
    trx_end_pos: int
    fde: bytes | None  # the Format_description in force
    segment_no: int
    frames: list[SegmentFrame]
    ddl: bool  # a DDL statement among its frames

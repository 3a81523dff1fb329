"""Pure core of the assemble and rows stages (DESIGN.md "Dataflow": assemble, rows). No Spark.

assemble_group: one source's frames of a micro-batch (Kafka offset order) + its stored state ->
  assembled records (schemas/assembled_record.avsc) + the new state row. A COMPLETE transaction
  leaves as bounded *segments* of raw frames; each segment repeats the Table_map and
  Rows_query/Annotate_rows frames it needs, so segments decode independently and in parallel.
decode_segment: one segment -> change records (schemas/change_record.avsc).

Row images are decoded in decode_segment (parallel, any executor), not in assemble_group, which
runs once per source (a single Spark task): heavy row decoding must not serialise on it
(DESIGN.md "Dataflow").
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from typing import Iterable, Iterator

from libs.stream.assembler import (
    AssembledInput, Assembler, AssemblerConfig, AssemblerState, Frame, SpillStore, Transaction,
    iter_change_records,
)
from libs.stream.assembler.change_records import ROWS_PER_EVENT, is_ddl
from libs.binlog import BinlogError, DecodeContext, DecodeLimits, RowsQuery, decode_event
from libs.binlog.constants import STMT_END_F
from libs.binlog.header import event_type
from libs.binlog.shapes import is_rows, is_table_map
from libs.stream.boundary import QUERY_TYPES, query_text
from libs.contracts.assembled import RecordKind, Segment, SegmentFrame
from libs.contracts.heartbeat import HeartbeatRecord
from libs.contracts.topic import TopicKind
from libs.snapshot import changes as snapshot_changes
from libs.snapshot.record import SnapshotRecord
from libs.targets.decoding import DecodeHints



@dataclass(frozen=True, slots=True)
class InputFrame:
    """One Kafka record of the topic (DESIGN.md "Kafka record"). Slotted: the assemble stage
    builds one per record with libs.binlog.fastrec (pipelines/stages/assemble.py)."""

    raw: bytes
    file: str | None
    pos: int | None
    kafka_partition: int | None = None
    kafka_offset: int | None = None
    kind: str = TopicKind.BINLOG  # or another TopicKind's text: a side record (libs/contracts/topic.py)


_BESIDE = frozenset({TopicKind.SNAPSHOT, TopicKind.HEARTBEAT})  # side records the assembler does not read


@dataclass(frozen=True)
class StageConfig:
    assembler: AssemblerConfig = field(default_factory=AssemblerConfig)
    segment_max_frames: int = 256  # frames per segment: the unit of parallel row decoding
    segment_max_bytes: int = 8 << 20
    limits: DecodeLimits = field(default_factory=DecodeLimits)  # what one frame may cost to decode


def context_for(state: AssemblerState, limits: DecodeLimits = DecodeLimits()) -> DecodeContext:
    """Decode context of a source from its stored state (the current Format_description)."""
    return _context(state.source, state.fde, limits)


def _context(source: str, fde: bytes | None, limits: DecodeLimits) -> DecodeContext:
    """A fresh decode context (no table maps) under the Format_description frame `fde`."""
    return DecodeContext(source=source, fde=_format_description(fde) if fde is not None else None,
                         limits=limits)


@lru_cache(maxsize=64)
def _format_description(fde: bytes):
    """The decoded Format_description (an immutable record) of an FDE frame. The same frame
    heads every segment of a binlog file and every batch of its source; decoding it per
    segment was ~10% of decode_segment (bench/assembler_cost.py)."""
    ctx = DecodeContext()
    decode_event(fde, 4, ctx)
    return ctx.fde


def _decoded(frames: Iterable[InputFrame], ctx: DecodeContext, source: str) -> Iterator[AssembledInput]:
    fmt = TopicKind.FORMAT  # a local: Python 3.11 takes ~0.13 us per enum member lookup
    for f in frames:  # positional arguments: this runs once per frame on the source's one core
        try:
            event = decode_event(f.raw, f.pos if f.pos is not None else 0, ctx, file=f.file, source=source)
            yield AssembledInput(f.raw, f.file, f.pos, event, None, f.kafka_partition, f.kafka_offset,
                                 f.kind == fmt)
        except BinlogError as err:
            yield AssembledInput(f.raw, f.file, f.pos, None, err, f.kafka_partition, f.kafka_offset,
                                 f.kind == fmt)


def assemble_group(source: str, state_row: dict | None, frames: Iterable[InputFrame], store: SpillStore,
                   config: StageConfig = StageConfig(), now: int | None = None) -> tuple[list[dict], dict]:
    """Feed one micro-batch of one source; returns (assembled records, new state row).

    Raises UnknownEventError / StreamGapError when the policy says stop: the batch then fails and
    Spark retries it from the previous state (nothing is stored)."""
    state = AssemblerState.from_row(state_row) if state_row is not None else AssemblerState(source)
    assembler = Assembler(source, store, config.assembler, state)
    ctx = context_for(state, config.limits)
    ctx.defer_rows = True  # row images are decoded by decode_segment, in parallel
    frames = list(frames)
    snapshot, heartbeat = TopicKind.SNAPSHOT, TopicKind.HEARTBEAT  # looked up once, not per frame
    # Snapshot records pass through as they are: the apply stage orders them by their position
    # and supersedes older binlog changes (libs/snapshot/protocol.py), not this stage.
    records: list[dict] = [snapshot_changes.assembled_record(source, f.raw, f.file, f.pos, f.kafka_partition,
                                                             f.kafka_offset)
                           for f in frames if f.kind == snapshot]
    beats = [(i, heartbeat_record(source, f)) for i, f in enumerate(frames) if f.kind == heartbeat]
    records.extend(b for _, b in beats if b["kind"] == RecordKind.QUARANTINE)
    # The batch's last good heartbeat counts only if no transaction is open at its place, so
    # that everything before it is complete, in this batch's records or in earlier ones (issue
    # #20 item 1): the frames before it are fed first, then those after it.
    at, beat = next(((i, b) for i, b in reversed(beats) if b["kind"] == RecordKind.HEARTBEAT),
                    (len(frames), None))
    records.extend(_feed(assembler, _binlog_frames(frames[:at]), ctx, config, now))
    if beat is not None and assembler.state.open is None:
        records.append(beat)
    after = _binlog_frames(frames[at:])
    if after:
        records.extend(_feed(assembler, after, ctx, config, now))
    return records, assembler.state.to_row()


def _feed(assembler: Assembler, frames: list[InputFrame], ctx: DecodeContext, config: StageConfig,
          now: int | None) -> list[dict]:
    """Binlog frames in offset order -> the assembled records of what they complete or reject."""
    out = assembler.feed(_decoded(frames, ctx, assembler.source), now=now)
    fde = assembler.state.fde  # the state is folded on each read: once, not per transaction
    records = [r for trx in out.transactions for r in segment_records(trx, fde, config)]
    records.extend(quarantine_record(q) for q in out.quarantined)
    records.extend({"kind": RecordKind.RELEASE.value, "source": assembler.source,
                    "release_trx_key": ref.trx_key, "release_chunk_count": ref.chunk_count}
                   for ref in out.released if ref.chunk_count)
    return records


def _binlog_frames(frames: list[InputFrame]) -> list[InputFrame]:
    """The frames the assembler reads (not the snapshot and heartbeat records beside them)."""
    return [f for f in frames if f.kind not in _BESIDE]


def heartbeat_record(source: str, frame: InputFrame) -> dict:
    """The assembled record of a heartbeat: the source is caught up to (binlog_file,
    binlog_pos) as of commit_ts. One that does not decode is quarantined (nothing is dropped)."""
    where = {"source": source, "binlog_file": frame.file, "binlog_pos": frame.pos,
             "kafka_partition": frame.kafka_partition, "kafka_offset": frame.kafka_offset}
    try:
        beat = HeartbeatRecord.decode(frame.raw)
    except ValueError as exc:
        return {"kind": RecordKind.QUARANTINE.value, **where, "type_code": None,
                "q_kind": "bad_heartbeat_record",
                "reason": f"heartbeat record: {exc} (source {source}, offset {frame.kafka_offset})",
                "raw": frame.raw}
    return {"kind": RecordKind.HEARTBEAT.value, **where, "commit_ts": beat.caught_up_as_of_micros}


def quarantine_record(q) -> dict:
    return {"kind": RecordKind.QUARANTINE.value, "source": q.source, "binlog_file": q.binlog_file,
            "binlog_pos": q.binlog_pos, "type_code": q.type_code, "q_kind": q.kind, "reason": q.reason,
            "raw": q.raw, "kafka_partition": q.kafka_partition, "kafka_offset": q.kafka_offset}


def _segment_frame(frame: Frame, event_index: int, context: bool) -> SegmentFrame:
    return {"file": frame.file, "pos": frame.pos, "raw": frame.raw, "event_index": event_index,
            "context": context}


def segment_records(trx: Transaction, fde: bytes | None, config: StageConfig) -> Iterator[Segment]:
    """Slice a complete transaction into segments of at most segment_max_frames content frames.
    Each later segment starts with the Table_map frames in force and the open Rows_query frame."""
    base = {"kind": RecordKind.SEGMENT.value, "source": trx.source, "trx_id": trx.trx_id, "gtid": trx.gtid,
            "xid": trx.xid, "server_id": trx.server_id, "commit_ts": trx.commit_ts_micros,
            "trx_file": trx.file, "trx_end_pos": trx.end_pos, "fde": fde}
    table_maps: dict[int, Frame] = {}
    statement: Frame | None = None
    current: list[SegmentFrame] = []
    size, segment_no, ddl = 0, 0, False
    for index, frame in enumerate(trx.payload):
        if current and (len(current) >= config.segment_max_frames or size >= config.segment_max_bytes):
            yield {**base, "segment_no": segment_no, "frames": current, "ddl": ddl}
            segment_no, ddl = segment_no + 1, False
            current = [_segment_frame(f, -1, True) for f in table_maps.values()]
            if statement is not None:
                current.append(_segment_frame(statement, -1, True))
            size = 0
        current.append(_segment_frame(frame, index, False))
        size += len(frame.raw)
        body = frame.event.body
        if is_table_map(frame.event):
            table_maps[body.table_id] = frame
        elif isinstance(body, RowsQuery):
            statement = frame
        elif is_rows(frame.event):
            if body.flags & STMT_END_F:
                statement = None
        else:
            sql = query_text(frame.event)
            if sql is not None:
                statement = None
                ddl = ddl or is_ddl(sql)
    yield {**base, "segment_no": segment_no, "frames": current, "ddl": ddl}


def _versions_change_inside(segment: dict, hints: DecodeHints) -> bool:
    """Does a schema version start between the segment's first and last frame? (Rarely: then
    each frame takes the overrides of its own position; else the first frame's serve all.)"""
    source, frames = segment["source"], segment["frames"]
    if not frames or not hints.versioned(source) or frames[0]["file"] is None or frames[-1]["file"] is None:
        return False
    return (hints.span(source, frames[0]["file"], frames[0]["pos"])
            != hints.span(source, frames[-1]["file"], frames[-1]["pos"]))


@dataclass(frozen=True)
class DdlEvent:
    """A DDL statement of the stream, where it was logged and in which default database."""

    source: str
    file: str
    pos: int
    default_db: str
    statement: str
    commit_ts: int | None  # epoch micros
    server_version: str | None = None  # the Format_description's: what executable comments execute


def segment_ddl(segment: dict, limits: DecodeLimits = DecodeLimits()) -> list[DdlEvent]:
    """The DDL statements of a segment flagged `ddl` (the driver reads them before the batch's
    rows are decoded: libs/schema_history). Only Query events are decoded."""
    fde = segment["fde"]
    ctx = _context(segment["source"], bytes(fde) if fde is not None else None, limits)
    out = []
    for f in segment["frames"]:
        # a CREATE ... SELECT's rows stay undecoded
        if f["context"] or event_type(f["raw"]) not in QUERY_TYPES:
            continue
        event = decode_event(bytes(f["raw"]), f["pos"], ctx, file=f["file"], source=segment["source"])
        sql = query_text(event)
        if sql is not None and is_ddl(sql):
            out.append(DdlEvent(segment["source"], f["file"], f["pos"], event.body.db or "", sql,
                                segment["commit_ts"],
                                ctx.fde.server_version if ctx.fde is not None else None))
    return out


def decode_segment(segment: dict, limits: DecodeLimits = DecodeLimits(), hints: DecodeHints | None = None
                   ) -> list[dict]:
    """Decode one segment's frames into change records (raises BinlogError / ValueError on a row
    image that does not match its table map: the caller quarantines the whole transaction).
    `hints`: what the target declarations know that the Table_maps may not say (UNSIGNED,
    fsp of old temporal types, charsets, ENUM/SET labels: libs/targets/decoding.py).
    A snapshot record's segment (kind snapshot) holds its record as its one frame; its chunk's
    server bytes are converted here, by the binlog path's rules (libs/snapshot/changes.py)."""
    if segment.get("kind") == RecordKind.SNAPSHOT:
        return snapshot_changes.change_records(segment["source"],
                                               SnapshotRecord.decode(segment["frames"][0]["raw"]))
    ctx = _context(segment["source"], segment["fde"], limits)
    if hints is not None:
        ctx.unsigned_overrides = hints.unsigned_overrides
        ctx.old_temporal_fsp = hints.old_temporal_fsp
        first = segment["frames"][0] if segment["frames"] else None
        if hints.versioned(segment["source"]) and first is not None and first["file"] is not None:
            ctx.unsigned_overrides, ctx.old_temporal_fsp = hints.overrides_at(
                segment["source"], first["file"], first["pos"])
    per_frame = hints is not None and _versions_change_inside(segment, hints)
    frames, index_of = [], {}
    for f in segment["frames"]:
        # the schema version in force at the event (libs/targets/decoding.py)
        if per_frame and f["file"] is not None:
            ctx.unsigned_overrides, ctx.old_temporal_fsp = hints.overrides_at(
                segment["source"], f["file"], f["pos"])
        event = decode_event(f["raw"], f["pos"], ctx, file=f["file"], source=segment["source"])
        frames.append(Frame(f["file"], f["pos"], f["raw"], None, None, event))
        if not f["context"]:
            index_of[(f["file"], f["pos"])] = f["event_index"]
    trx = Transaction(
        source=segment["source"], trx_id=segment["trx_id"], gtid=segment["gtid"], xid=segment["xid"],
        commit_ts_micros=segment["commit_ts"], server_id=segment["server_id"], file=segment["trx_file"],
        end_pos=segment["trx_end_pos"], start_file=None, start_pos=None, event_count=len(frames),
        frames=frames)
    records, last_key, row_in_event = [], None, 0
    for rec in iter_change_records(trx, hints):
        key = (rec["binlog_file"], rec["binlog_pos"])
        row_in_event = row_in_event + 1 if key == last_key else 0
        last_key = key
        rec["change_seq"] = index_of[key] * ROWS_PER_EVENT | row_in_event
        records.append(rec)
    return records

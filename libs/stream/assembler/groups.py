"""The WL#4162 groups of one source's stream, START to END, as the boundary parser marks their
frames (DESIGN.md 'Whole transactions'): the open group's frames go to the SpillStore in
chunks, so the stored state stays small; its END emits a COMPLETE Transaction, a ROLLBACK emits
nothing, an XA PREPARE holds the group in the state until its XA COMMIT or XA ROLLBACK; a group
that cannot be applied goes to quarantine whole ('Bad input')."""
from __future__ import annotations

import logging
from typing import Iterable

from libs.binlog import MariaGtid, MysqlGtid, TransactionPayload, XaPrepare, Xid
from libs.binlog.constants import BoundaryType, EventType
from libs.binlog.fastrec import fast_constructor
from libs.stream.boundary import QueryKind, ends_prepared_xa, query_kind, query_text

from libs.stream.assembler.model import (
    AssemblerConfig, AssemblerOutput, Frame, Quarantined, Transaction, raw_type_code,
)
from libs.stream.assembler.payload import is_payload
from libs.stream.assembler.spill import SpillStore, SpilledFrames, encode_chunk
from libs.stream.assembler.state import AssemblerState, OpenGroup, PreparedXa, evolve
from libs.stream.assembler.xa import xid_key, xid_key_from_query

log = logging.getLogger(__name__)
B = BoundaryType
_make_transaction = fast_constructor(Transaction)


class TransactionGroups:
    """The groups' part of the Assembler (libs/stream/assembler/assembler.py), which reads the frames
    and steps the parser: it owns the open group (`_open_trx`, its event count, the tail of
    frames not yet spilled), the feed's output and the counters, and keeps `_state.xa_prepared`."""

    def __init__(self, source: str, store: SpillStore, config: AssemblerConfig, state: AssemblerState):
        self.source, self.store, self.config = source, store, config
        self._state = state
        self._open_trx = state.open  # its event_count is _open_trx_events, not its own field
        self._open_trx_events = state.open.event_count if state.open is not None else 0
        self._counters = dict(state.counters)  # our own copy: counted in place
        self._tail: list[Frame] = []  # open-group frames not yet spilled; empty between feed() calls
        self._tail_bytes = 0
        self._out = AssemblerOutput()

    def _open_group(self) -> OpenGroup | None:
        """The open group as the state stores it (with its current event count)."""
        group = self._open_trx
        if group is None or group.event_count == self._open_trx_events:
            return group
        return evolve(group, event_count=self._open_trx_events)

    def _count(self, name: str, n: int = 1) -> None:
        self._counters[name] += n

    def _accept(self, frame: Frame, boundary: BoundaryType, now: int | None) -> None:
        """A frame the parser accepted as `boundary` (IGNORE: nothing to do)."""
        if boundary is B.INSIDE:
            self._append(frame)
        elif boundary is B.START:
            self._open(frame, now)
        elif boundary is B.END:
            self._append(frame)
            self._close(frame)
        elif boundary is B.SELF_CONTAINED:
            self._self_contained(frame)


    def _open(self, frame: Frame, now: int | None) -> None:
        body, gtid, commit_ts = frame.event.body, None, None
        if isinstance(body, MysqlGtid) and not body.anonymous:
            gtid, commit_ts = body.gtid, body.immediate_commit_ts
        elif isinstance(body, MariaGtid):
            gtid = body.gtid
        self._open_trx = OpenGroup(f"{frame.file}:{frame.pos}", frame.file, frame.pos, gtid=gtid,
                               commit_ts_micros=commit_ts, since=now)
        self._open_trx_events = 0
        self._append(frame)

    def _append(self, frame: Frame) -> None:
        group = self._open_trx
        assert group is not None, "the parser accepted INSIDE/END with no open group"
        self._open_trx_events += 1
        if group.poison is not None:
            self._quarantine([frame], "bad_transaction", self._poison_reason(group))
            return
        self._tail.append(frame)
        self._tail_bytes += len(frame.raw)
        if len(self._tail) >= self.config.chunk_max_events or self._tail_bytes >= self.config.chunk_max_bytes:
            self._spill_tail()

    def _spill_tail(self) -> None:
        group = self._open_trx
        if group is None or not self._tail:
            return
        chunk = encode_chunk(self._tail)
        self.store.put(self.source, group.trx_key, group.chunk_count, chunk)
        self._open_trx = evolve(group, chunk_count=group.chunk_count + 1)
        self._count("spilled_bytes", len(chunk))
        self._tail, self._tail_bytes = [], 0

    def _detach_open(self) -> tuple[OpenGroup, SpilledFrames]:
        group, tail = self._open_group(), tuple(self._tail)
        self._tail, self._tail_bytes = [], 0
        self._open_trx, self._open_trx_events = None, 0
        ref = group.ref if group.chunk_count else None
        return group, SpilledFrames(self.store, self.source, ref, tail)

    def _close(self, end: Frame) -> None:
        event, sql = end.event, query_text(end.event)
        kind = query_kind(sql) if sql is not None else None
        if self._open_trx.poison is None and ends_prepared_xa(event):
            self._spill_tail()  # a held group lives in the store only
            group, frames = self._detach_open()
            self._hold_prepared(group, frames, event)
            return
        group, frames = self._detach_open()
        self._out.released.append(group.ref)
        if group.poison is not None:
            pass  # every frame, this END included, is already in quarantine (_poison_open)
        elif kind is QueryKind.ROLLBACK:
            self._count("rollbacks")  # rolled back: applies nothing
        elif kind in (QueryKind.XA_COMMIT, QueryKind.XA_ROLLBACK):
            self._resolve_xa(kind, sql, group, frames, end)
        else:
            self._emit(group.gtid, group.start_file, group.start_pos, group.commit_ts_micros,
                       group.event_count, None, frames, end)

    def _self_contained(self, frame: Frame) -> None:
        code, sql = frame.event.header.type_code, query_text(frame.event)
        if code == EventType.INCIDENT:
            # The master lost events (Incident_log_event): a real replica stops here.
            log.error("Incident event (source %s, file %s, pos %s)", self.source, frame.file, frame.pos)
            self._quarantine([frame], "incident", f"incident event: the master reports lost changes "
                             f"(source {self.source}, file {frame.file}, pos {frame.pos})")
            return
        if sql is None:
            return  # Stop, real Rotate, Previous_gtids, Gtid_list, Binlog_checkpoint: no data
        kind = query_kind(sql)
        if kind in (QueryKind.XA_COMMIT, QueryKind.XA_ROLLBACK):
            self._resolve_xa(kind, sql, None, (frame,), frame)
        else:  # an auto-committed statement (DDL, statement DML) is a transaction of its own
            self._emit(None, frame.file, frame.pos, None, 1, None, (frame,), frame)

    def _hold_prepared(self, group: OpenGroup, frames, event) -> None:
        body = event.body
        key = xid_key(body.format_id, body.gtrid, body.bqual) if isinstance(body, XaPrepare) \
            else xid_key_from_query(query_text(event))
        if key is None:
            self._out.released.append(group.ref)
            self._quarantine(frames, "xa_unknown", f"XA PREPARE with an unreadable xid (source "
                             f"{self.source}, transaction {group.trx_key})")
            return
        held = PreparedXa(group.trx_key, group.chunk_count, group.event_count, group.gtid,
                          group.start_file, group.start_pos)
        self._state = evolve(self._state, xa_prepared={**self._state.xa_prepared, key: held})
        self._count("xa_prepared")

    def _resolve_xa(self, kind: QueryKind, sql: str, group: OpenGroup | None, frames, end: Frame) -> None:
        key = xid_key_from_query(sql)
        held = self._state.xa_prepared.get(key) if key is not None else None
        if held is None:
            self._count("xa_unknown")
            if kind is QueryKind.XA_COMMIT:  # its XA PREPARE came before this stream: data unseen
                self._quarantine(frames, "xa_unknown", f"XA COMMIT of xid {key} whose XA PREPARE this "
                                 f"stream never saw (source {self.source}, file {end.file}, pos {end.pos})")
            return
        self._state = evolve(self._state,
                             xa_prepared={k: v for k, v in self._state.xa_prepared.items() if k != key})
        self._out.released.append(held.ref)
        if kind is QueryKind.XA_ROLLBACK:
            self._count("rollbacks")
            return
        prepared = SpilledFrames(self.store, self.source, held.ref, ())
        # Identity of the commit (where the data becomes visible); rows keep their own positions.
        gtid = group.gtid if group is not None else None
        start = (group.start_file, group.start_pos) if group is not None else (end.file, end.pos)
        self._emit(gtid, *start, group.commit_ts_micros if group else None, held.event_count, key,
                   prepared, end)

    def _emit(self, gtid, start_file, start_pos, commit_ts_micros, event_count, xa_key, frames, end: Frame):
        header = end.event.header
        body = end.event.body
        if not isinstance(frames, SpilledFrames):
            frames = SpilledFrames(self.store, self.source, None, tuple(frames))
        # positional, in Transaction's field order (fast constructors take no keywords)
        self._out.transactions.append(_make_transaction(
            self.source, gtid or f"{start_file}:{start_pos}", gtid, _xid_of(body),
            commit_ts_micros or header.timestamp * 1_000_000, header.server_id, end.file,
            end.pos + len(end.raw), start_file, start_pos, event_count, frames.only(is_payload), xa_key))
        self._count("transactions_emitted")

    def _quarantine_open(self, kind: str, reason: str) -> None:
        group, frames = self._detach_open()
        self._out.released.append(group.ref)
        self._quarantine(frames, kind, reason)

    def _quarantine(self, frames: Iterable[Frame], kind: str, reason: str,
                    type_code: int | None = None) -> None:
        n = 0
        for frame in frames:
            if frame.event is not None:
                code = frame.event.header.type_code
            else:
                code = type_code if type_code is not None else raw_type_code(frame.raw)
            self._out.quarantined.append(Quarantined(
                self.source, frame.file, frame.pos, code, kind, reason, frame.raw,
                frame.kafka_partition, frame.kafka_offset))
            n += 1
        self._count("quarantined_frames", n)

    def _poison_open(self, error: str) -> None:
        """The open group lost a frame: it can never be applied. Its frames so far go to
        quarantine now, and every later frame of it as it arrives (_append), so the whole group
        is in quarantine even when the lost frame was its END (e.g. an Xid failing its
        checksum) or the stream stops before the END."""
        self._spill_tail()
        group = self._open_trx
        frames = SpilledFrames(self.store, self.source, group.ref if group.chunk_count else None, ())
        self._out.released.append(group.ref)
        poisoned = self._open_trx = evolve(group, poison=error, chunk_count=0)  # never spills again
        self._quarantine(frames, "bad_transaction", self._poison_reason(poisoned))

    def _poison_reason(self, group: OpenGroup) -> str:
        return (f"transaction {group.trx_key} of source {self.source} holds a frame that could not "
                f"be decoded: {group.poison}")


def _xid_of(body) -> int | None:
    """The Xid that committed the group: the END event's, or the one inside a Transaction_payload."""
    if isinstance(body, Xid):
        return body.xid
    if isinstance(body, TransactionPayload):
        return next((e.body.xid for e in body.events if isinstance(e.body, Xid)), None)
    return None

"""Per-source transaction assembler: decoded frames in Kafka offset order -> COMPLETE transactions
and quarantine records (DESIGN.md 'Whole transactions', 'Bad input').

    assembler = Assembler(source, spill_store, config, AssemblerState.from_row(row))
    out = assembler.feed(inputs, now=batch_epoch_seconds)
    row = assembler.state.to_row()          # store; then release(store, source, out.released)

Boundaries come from the WL#4162 parser (libs.boundary). The open group's frames go to the
SpillStore in chunks, so the state stays small; a transaction is emitted only when its END is
seen, a ROLLBACK emits nothing, an XA-prepared group waits for its XA COMMIT."""
from __future__ import annotations

import logging
from typing import Iterable

from libs.binlog.constants import BoundaryType, EventType
from libs.binlog.errors import UnknownEventError
from libs.binlog import (Dummy, FormatDescription, Ignorable, MariaGtid, MysqlGtid,
                         TransactionPayload, XaPrepare, Xid)
from libs.binlog.event_class import EventClass, event_class
from libs.binlog.file_names import binlog_sort_key, split_epoch
from libs.binlog.shapes import undecoded, undecoded_error
from libs.binlog.fastrec import fast_constructor
from libs.boundary import (
    INITIAL, QueryKind, advance_cached, ends_prepared_xa, is_fake_rotate, query_kind, query_text,
)

from .model import (
    AssembledInput, AssemblerConfig, AssemblerOutput, Frame, Quarantined, StreamGapError,
    Transaction, UnknownEventPolicy, raw_type_code,
)
from .payload import is_payload
from .spill import SpillStore, SpilledFrames, encode_chunk
from .state import AssemblerState, OpenGroup, PreparedXa, evolve
from .xa import xid_key, xid_key_from_query

log = logging.getLogger(__name__)
B = BoundaryType
_NEW_FILE, _NEXT, _DUPLICATE = "new_file", "next", "duplicate"
_make_frame = fast_constructor(Frame)
_make_transaction = fast_constructor(Transaction)
_ROTATE = EventType.ROTATE
_HEARTBEATS = (EventType.HEARTBEAT, EventType.HEARTBEAT_V2)
# Types _feed_one handles before the boundary parser: never on the fast path (_feed_plain).
_SPECIAL_TYPES = frozenset({EventType.FORMAT_DESCRIPTION, EventType.START_V3, _ROTATE, *_HEARTBEATS})
# The fast path of feed() (_feed_plain); False runs every frame through _feed_one. Only
# the equivalence tests turn it off (tests/unit/assembler/test_fast_path.py).
FAST_PATH = True


class Assembler:
    def __init__(self, source: str, store: SpillStore, config: AssemblerConfig = AssemblerConfig(),
                 state: AssemblerState | None = None, flavour: str = "mysql"):
        """`flavour` applies until the stream's first Format_description says otherwise."""
        self.source, self.store, self.config = source, store, config
        state = state if state is not None else AssemblerState(source, flavour=flavour)
        if state.source != source:
            raise ValueError(f"state of source {state.source!r} given to assembler of {source!r}")
        # The fields that change with (nearly) every frame are kept in plain attributes, current
        # at all times; `_state` holds the others (flavour, fde, xa_prepared, last_fed_at), and
        # the `state` property folds both into the frozen record. Copying the frozen record per
        # change was half of the assembler's time per frame (bench/README.md, issue #21).
        self._state = state
        self._parser = state.parser
        self._last_file, self._last_pos, self._last_end_pos = state.last_file, state.last_pos, state.last_end_pos
        self._open_trx = state.open  # its event_count is _open_trx_events, not its own field
        self._open_trx_events = state.open.event_count if state.open is not None else 0
        self._counters = dict(state.counters)  # our own copy: counted in place
        self._tail: list[Frame] = []  # open-group frames not yet spilled; empty between feed() calls
        self._tail_bytes = 0
        self._out = AssemblerOutput()
        self._plain: dict[tuple, bool] = {}  # _plain_event's memo

    @property
    def state(self) -> AssemblerState:
        """The state after the frames fed so far: what the caller stores (a new record each time,
        never changed afterwards)."""
        self._state = evolve(self._state, parser=self._parser, last_file=self._last_file,
                             last_pos=self._last_pos, last_end_pos=self._last_end_pos,
                             open=self._open_group(), counters=dict(self._counters))
        return self._state

    def _open_group(self) -> OpenGroup | None:
        """The open group as the state stores it (with its current event count)."""
        group = self._open_trx
        if group is None or group.event_count == self._open_trx_events:
            return group
        return evolve(group, event_count=self._open_trx_events)

    def _count(self, name: str, n: int = 1) -> None:
        self._counters[name] += n

    # ---- public -------------------------------------------------------------------------------

    def feed(self, inputs: Iterable[AssembledInput], now: int | None = None) -> AssemblerOutput:
        """Consume frames in offset order. Raises UnknownEventError (policy FAIL) and
        StreamGapError; then the caller must not store the state (the batch is retried)."""
        self._out = out = AssemblerOutput()
        plain = self._feed_plain if FAST_PATH else None
        for item in inputs:
            if plain is None or not plain(item, now):
                self._feed_one(item, now)
        self._spill_tail()  # the stored state references chunks only, never in-memory frames
        if now is not None:
            self._state = evolve(self._state, last_fed_at=now)
        out.counters = dict(self._counters)
        return out

    def expire_open(self, reason: str = "idle timeout") -> AssemblerOutput:
        """Quarantine the open group (IdleAction.QUARANTINE_OPEN) and reset the parser."""
        self._out = out = AssemblerOutput()
        if self._open_trx is not None:
            self._quarantine_open("open_timeout", f"open transaction expired ({reason})")
            self._parser = INITIAL
            self._count("open_expired")
        out.counters = dict(self._counters)
        return out

    # ---- one frame ----------------------------------------------------------------------------

    def _feed_one(self, item: AssembledInput, now: int | None) -> None:
        event = item.event
        where = item.error if event is None else event
        frame = _make_frame(item.file if item.file is not None else where.file,
                            item.pos if item.pos is not None else where.pos,
                            item.raw, item.kafka_partition, item.kafka_offset, event)
        if item.format_record:
            self._format_record(frame)
            return
        artificial = event is not None and _not_binlog_bytes(event)
        if artificial and not _in_file(frame):
            return  # fake Rotate / heartbeat of a dump stream: IGNORE (WL#4162 D2.1), no file bytes
        previous_file = self._last_file
        position = self._track_position(frame)
        if position == _DUPLICATE:
            self._count("duplicates_dropped")
            return
        if position == _NEW_FILE:
            self._cut_open_group(frame, previous_file)
        if artificial:
            return  # a relay log's (or capture's) fake Rotate: it occupies bytes, applies nothing
        if event is None:
            self._bad_frame(frame, item.error.located(file=frame.file, pos=frame.pos, source=self.source))
            return
        code = event.header.type_code
        # WL#4033 with the stream's flavour: the codec decodes either server's types, so a
        # MariaDB event in a MySQL stream reaches here decoded and is classified only now.
        known = event_class(code, event.header.flags, self._state.flavour)
        if isinstance(event.body, Ignorable) or known is EventClass.IGNORABLE:
            self._count("ignorable_skipped")  # WL#4033: skip, never fail
            return
        if known is EventClass.UNKNOWN:
            self._bad_frame(frame, UnknownEventError(
                f"unknown event type {code} without LOG_EVENT_IGNORABLE_F", frame.file, frame.pos, code,
                frame.raw, self.source))
            return
        if isinstance(event.body, Dummy):
            self._count("dummies_skipped")  # MariaDB placeholder: never applied
            return
        if code == EventType.FORMAT_DESCRIPTION:
            self._format_description(frame)
            return
        if code == EventType.START_V3:
            # binlog v3 (MySQL 4.x) has no Format_description: Start_v3 defines the format
            # (binlog_event.h), so it is what segments need to decode the file's events.
            self._state = evolve(self._state, fde=frame.raw)
        # The codec's rule (shapes.py): a body kept as bytes is never applied nor skipped. The
        # parser still steps over it, so the events after it keep their boundaries.
        unapplied = undecoded_error(event, file=frame.file, pos=frame.pos, source=self.source) \
            if undecoded(event) else None
        self._boundary(frame, now, unapplied)

    def _feed_plain(self, item: AssembledInput, now: int | None) -> bool:
        """_feed_one for the frames nearly all of a stream is made of, from memoized facts: a
        decoded event at the next position of the current file, of a type that goes straight to
        the boundary parser (_plain_event), which accepts it without a warning. Returns False,
        having changed nothing, for any other frame: _feed_one then takes it the whole way.
        Skipping _feed_one's checks saves about a quarter of Assembler.feed's own instructions
        per frame (bench/README.md, issue #21 goal 2)."""
        event, pos, file = item.event, item.pos, item.file
        if (event is None or item.format_record or pos is None or pos != self._last_end_pos
                or file is None or file != self._last_file):
            return False  # not what _track_position calls the next frame (or a decode error)
        header = event.header
        flavour = self._state.flavour
        key = (header.type_code, header.flags, type(event.body), flavour)
        plain = self._plain.get(key)
        if plain is None:
            plain = self._plain[key] = _plain_event(event, flavour)
        if not plain:
            return False
        step = advance_cached(self._parser, event, flavour)
        if step.warning is not None:
            return False
        raw = item.raw
        self._last_pos, self._last_end_pos = pos, pos + len(raw)  # _track_position's _NEXT
        self._parser = step.context
        self._accept(_make_frame(file, pos, raw, item.kafka_partition, item.kafka_offset, event), step.boundary, now)
        return True

    def _track_position(self, frame: Frame) -> str:
        """Dedup producer redeliveries and detect gaps inside one file (positions from the bytes)."""
        file, pos = frame.file, frame.pos
        if file is None or pos is None:
            return _NEXT
        status = _NEXT
        last_file, last_end_pos = self._last_file, self._last_end_pos
        if last_file is not None and last_end_pos is not None:
            if file == last_file:
                if pos < last_end_pos:
                    return _DUPLICATE
                if pos > last_end_pos:
                    raise StreamGapError(self.source, file, last_end_pos, pos)
            elif _file_order(file, last_file) < 0:
                return _DUPLICATE  # a frame of an earlier file: redelivered
            else:
                status = _NEW_FILE  # positions restart after Rotate: not compared across files
        else:
            status = _NEW_FILE
        self._last_file, self._last_pos, self._last_end_pos = file, pos, pos + len(frame.raw)
        return status

    def _bad_frame(self, frame: Frame, error) -> None:
        """A decode error row, or an unknown non-ignorable event: fail or quarantine by policy.
        The open group lost a frame, so it is poisoned: quarantined instead of applied."""
        unknown = isinstance(error, UnknownEventError)
        self._count("unknown_events" if unknown else "decode_errors")
        if unknown and self.config.unknown_event_policy is UnknownEventPolicy.FAIL:
            raise error
        self._quarantine([frame], error.kind, str(error), error.type_code)
        if self._open_trx is not None and self._open_trx.poison is None:
            self._poison_open(str(error))

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

    def _cut_open_group(self, frame: Frame, previous_file: str | None) -> None:
        """A group never spans files (servers rotate between groups), so one still open when a
        new file begins was cut by a crash: quarantine it, reset the parser."""
        if self._open_trx is None:
            return
        moved = split_epoch(frame.file)[0] != split_epoch(previous_file or "")[0]
        if moved:
            # cdc-ship moved to another server by GTID: its GTID state left this transaction
            # out, so the new server sends it again whole (libs/shipper/resume.py)
            self._count("cut_by_server_move")
            reason = (f"transaction cut when the source moved to another server's binlog at "
                      f"{frame.file} (source {self.source}); the new server sends it again whole")
        else:
            self._count("invalid_transitions")
            reason = (f"transaction did not end before binlog file {frame.file} began "
                      f"(source {self.source}, server restart?)")
        log.warning(reason)
        self._quarantine_open("boundary", reason)
        self._parser = INITIAL

    def _format_record(self, frame: Frame) -> None:
        """The Format_description a dump started inside a file sends (log_pos 0): the context
        of what follows; anything else in a format record is bad input, kept in quarantine."""
        if frame.event is not None and frame.event.header.type_code == EventType.FORMAT_DESCRIPTION:
            return self._format_description(frame)
        self._quarantine([frame], "bad_format_record", f"a format record that is not a Format_description "
                         f"(source {self.source}, file {frame.file}, pos {frame.pos})")

    def _format_description(self, frame: Frame) -> None:
        body = frame.event.body
        flavour = body.flavour if isinstance(body, FormatDescription) else self._state.flavour
        self._state = evolve(self._state, fde=frame.raw, flavour=flavour)

    def _boundary(self, frame: Frame, now: int | None, unapplied=None) -> None:
        step = advance_cached(self._parser, frame.event, self._state.flavour)
        self._parser = step.context
        if step.warning is not None:
            self._count("invalid_transitions")
            where = f"source {self.source}, file {frame.file}, pos {frame.pos}"
            log.warning("%s (%s)", step.warning, where)
            if self._open_trx is not None:
                self._quarantine_open("boundary", f"{step.warning} Partial transaction ({where}).")
            if step.boundary is None:
                self._quarantine([frame], "boundary", f"{step.warning} ({where})")
                return
        if unapplied is not None:
            self._bad_frame(frame, unapplied)  # quarantined; an open group is poisoned
            return
        self._accept(frame, step.boundary, now)

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

    # ---- groups -------------------------------------------------------------------------------

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
        self._state = evolve(self._state, xa_prepared={k: v for k, v in self._state.xa_prepared.items() if k != key})
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

    # ---- quarantine ---------------------------------------------------------------------------

    def _quarantine_open(self, kind: str, reason: str) -> None:
        group, frames = self._detach_open()
        self._out.released.append(group.ref)
        self._quarantine(frames, kind, reason)

    def _quarantine(self, frames: Iterable[Frame], kind: str, reason: str, type_code: int | None = None) -> None:
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


def _plain_event(event, flavour: str) -> bool:
    """Does _feed_one take this event, at the next position, straight to the boundary parser?
    A function of (type code, flags, body class, flavour), _feed_plain's memo key: not a type it
    handles first (_SPECIAL_TYPES: Format_description, Start_v3, fake Rotate, heartbeats),
    WL#4033-known in the stream's flavour, neither Ignorable nor Dummy, its body decoded
    (shapes.undecoded reads the body's class only)."""
    code = event.header.type_code
    return (code not in _SPECIAL_TYPES and event_class(code, event.header.flags, flavour) is EventClass.KNOWN
            and not isinstance(event.body, (Ignorable, Dummy)) and not undecoded(event))


def _not_binlog_bytes(event) -> bool:
    code = event.header.type_code
    return (code == _ROTATE and is_fake_rotate(event)) or code in _HEARTBEATS


def _xid_of(body) -> int | None:
    """The Xid that committed the group: the END event's, or the one inside a Transaction_payload."""
    if isinstance(body, Xid):
        return body.xid
    if isinstance(body, TransactionPayload):
        return next((e.body.xid for e in body.events if isinstance(e.body, Xid)), None)
    return None


def _in_file(frame: Frame) -> bool:
    """A fake Rotate shipped from a file (a relay log writes the master's fake Rotate into the
    file, e.g. at pos 106 before the master's FDE; a replica capture starts with one) occupies
    bytes there: its file position (>= 4, after the magic) keeps the gap check continuous. A
    dump stream's fake Rotate is never shipped, nor placed at a file position."""
    return frame.pos is not None and frame.pos >= 4


def _file_order(a: str, b: str) -> int:
    """Compare binlog file names [EPOCH/]base.NNNNNN: a later epoch (the source moved to another
    server, libs/binlog/file_names.py) is newer; names of different bases (or unnumbered) count
    as newer."""
    (epoch_a, base_a, na, _), (epoch_b, base_b, nb, _) = binlog_sort_key(a), binlog_sort_key(b)
    if epoch_a != epoch_b:
        return (epoch_a > epoch_b) - (epoch_a < epoch_b)
    if na >= 0 and nb >= 0 and base_a == base_b:
        return (na > nb) - (na < nb)
    return 1

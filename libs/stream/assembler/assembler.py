"""Per-source transaction assembler: decoded frames in Kafka offset order -> COMPLETE transactions
and quarantine records (DESIGN.md 'Whole transactions', 'Bad input').

    assembler = Assembler(source, spill_store, config, AssemblerState.from_row(row))
    out = assembler.feed(inputs, now=batch_epoch_seconds)
    row = assembler.state.to_row()          # store; then release(store, source, out.released)

Boundaries come from the WL#4162 parser (libs.stream.boundary): this module takes each frame to it
(its position, format descriptions, event classes, bad frames; frames.py says what a frame is),
and the groups it marks become transactions (groups.py): the open group's frames go to the
SpillStore in chunks, so the state stays small; a transaction is emitted only when its END is
seen, a ROLLBACK emits nothing, an XA-prepared group waits for its XA COMMIT."""
from __future__ import annotations

import logging
from typing import Iterable

from libs.binlog import Dummy, FormatDescription, Ignorable
from libs.binlog.constants import EventType
from libs.binlog.errors import UnknownEventError
from libs.binlog.event_class import EventClass, event_class
from libs.binlog.fastrec import fast_constructor
from libs.binlog.file_names import split_epoch
from libs.binlog.shapes import undecoded, undecoded_error
from libs.stream.boundary import INITIAL, advance_cached

from libs.stream.assembler.frames import (
    DUPLICATE, NEW_FILE, NEXT, in_file, not_binlog_bytes, placed, plain_event,
)
from libs.stream.assembler.groups import TransactionGroups
from libs.stream.assembler.model import (
    AssembledInput, AssemblerConfig, AssemblerOutput, Frame, UnknownEventPolicy,
)
from libs.stream.assembler.spill import SpillStore
from libs.stream.assembler.state import AssemblerState, evolve

log = logging.getLogger(__name__)
_make_frame = fast_constructor(Frame)
# The fast path of feed() (_feed_plain); False runs every frame through _feed_one. Only
# the equivalence tests turn it off (tests/unit/assembler/test_fast_path.py).
FAST_PATH = True


class Assembler(TransactionGroups):
    def __init__(self, source: str, store: SpillStore, config: AssemblerConfig = AssemblerConfig(),
                 state: AssemblerState | None = None, flavour: str = "mysql"):
        """`flavour` applies until the stream's first Format_description says otherwise."""
        state = state if state is not None else AssemblerState(source, flavour=flavour)
        if state.source != source:
            raise ValueError(f"state of source {state.source!r} given to assembler of {source!r}")
        # The fields that change with (nearly) every frame are kept in plain attributes, current
        # at all times; `_state` holds the others (flavour, fde, xa_prepared, last_fed_at), and
        # the `state` property folds both into the frozen record. Copying the frozen record per
        # change was half of the assembler's time per frame (bench/README.md, issue #21).
        super().__init__(source, store, config, state)
        self._parser = state.parser
        self._last_file, self._last_pos, self._last_end_pos = (state.last_file, state.last_pos,
                                                               state.last_end_pos)
        self._plain: dict[tuple, bool] = {}  # plain_event's memo

    @property
    def state(self) -> AssemblerState:
        """The state after the frames fed so far: what the caller stores (a new record each time,
        never changed afterwards)."""
        self._state = evolve(self._state, parser=self._parser, last_file=self._last_file,
                             last_pos=self._last_pos, last_end_pos=self._last_end_pos,
                             open=self._open_group(), counters=dict(self._counters))
        return self._state

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
        artificial = event is not None and not_binlog_bytes(event)
        if artificial and not in_file(frame):
            return  # fake Rotate / heartbeat of a dump stream: IGNORE (WL#4162 D2.1), no file bytes
        previous_file = self._last_file
        position = self._track_position(frame)
        if position == DUPLICATE:
            self._count("duplicates_dropped")
            return
        if position == NEW_FILE:
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
        the boundary parser (frames.plain_event), which accepts it without a warning. Returns False,
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
            plain = self._plain[key] = plain_event(event, flavour)
        if not plain:
            return False
        step = advance_cached(self._parser, event, flavour)
        if step.warning is not None:
            return False
        raw = item.raw
        self._last_pos, self._last_end_pos = pos, pos + len(raw)  # _track_position's NEXT
        self._parser = step.context
        self._accept(_make_frame(file, pos, raw, item.kafka_partition, item.kafka_offset, event),
                     step.boundary, now)
        return True

    def _track_position(self, frame: Frame) -> str:
        """Dedup producer redeliveries and detect gaps inside one file (frames.placed)."""
        file, pos = frame.file, frame.pos
        if file is None or pos is None:
            return NEXT
        status = placed(self.source, self._last_file, self._last_end_pos, file, pos)
        if status != DUPLICATE:
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

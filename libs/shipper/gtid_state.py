"""The GTID state of what a topic holds whole (pure: frames in, state out; no I/O).

A MariaDB GTID state is one `domain-server-seq` per replication domain: the last transaction of
each domain. It is what a replica hands a master in @slave_connect_state to continue after it,
on any server whose binlog holds those GTIDs (a promoted replica running log_slave_updates).
Only a transaction whose END was shipped counts: one cut in the middle is not in the state, so
a GTID resume sends it again from its start.

    >>> state = GtidState.parse("0-1-7,3-2-40")
    >>> str(state.advanced("0-2-8"))
    '0-2-8,3-2-40'
    >>> state.covers("3-2-39"), state.covers("0-1-8")
    (True, False)

GroupTracker follows the transaction boundaries of a stream (the WL#4162 parser, libs/stream/boundary)
and advances the state when a GTID group ends. MySQL GTID sets are not tracked (yet): a MySQL
stream's state stays unknown, and cdc-ship then cannot follow another server by GTID.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from libs.binlog import DecodeContext, MariaGtid, decode_event
from libs.binlog.constants import BoundaryType, EventType
from libs.binlog.errors import BinlogError
from libs.binlog.header import event_type, is_standalone_maria_gtid
from libs.stream.boundary import INITIAL, Opening, ParserContext, advance

B = BoundaryType
_GTID = re.compile(r"^(\d+)-(\d+)-(\d+)$")


def parse_gtid(text: str) -> tuple[int, int, int]:
    """'0-1-7' -> (domain, server_id, seq); ValueError naming the expected form."""
    m = _GTID.match(text.strip())
    if not m:
        raise ValueError(f"not a MariaDB GTID (domain-server-seq): {text!r}")
    return int(m[1]), int(m[2]), int(m[3])


@dataclass(frozen=True)
class GtidState:
    """domain -> (server_id, seq) of its last transaction."""

    domains: tuple[tuple[int, int, int], ...] = ()  # (domain, server_id, seq), sorted by domain

    @staticmethod
    def parse(text: str | None) -> "GtidState":
        """'' or None is the empty state (nothing shipped in any domain)."""
        parts = [p for p in (text or "").split(",") if p.strip()]
        by_domain: dict[int, tuple[int, int, int]] = {}
        for part in parts:
            gtid = parse_gtid(part)
            if gtid[0] in by_domain:
                raise ValueError(f"GTID state {text!r} names domain {gtid[0]} twice")
            by_domain[gtid[0]] = gtid
        return GtidState(tuple(sorted(by_domain.values())))

    def __str__(self) -> str:
        return ",".join(f"{d}-{s}-{n}" for d, s, n in self.domains)

    def __bool__(self) -> bool:
        """False for the empty state (no transaction of any domain)."""
        return bool(self.domains)

    def seq(self, domain: int) -> int | None:
        return next((n for d, _, n in self.domains if d == domain), None)

    def advanced(self, gtid: str) -> "GtidState":
        """The state after transaction `gtid` (it replaces its domain's entry: a domain's
        sequence numbers grow, whichever server wrote them)."""
        new = parse_gtid(gtid)
        return GtidState(tuple(sorted([g for g in self.domains if g[0] != new[0]] + [new])))

    def covers(self, gtid: str) -> bool:
        """Whether transaction `gtid` is at or before the state of its domain."""
        domain, _, seq = parse_gtid(gtid)
        last = self.seq(domain)
        return last is not None and seq <= last


@dataclass
class GroupTracker:
    """Feeds on the frames of a stream, in order; `state` holds the GTIDs of the groups that
    ended, `open_gtid` the GTID of the group in progress (None between groups).

    Frames are decoded only as far as the boundary parser needs (rows images deferred): the
    shipper keeps its speed. A frame the codec refuses counts as inside the current group; the
    shipper's own checks (size, CRC32) have already passed, so that is an event type or body
    this codec does not know, which never ends a group by itself."""

    state: GtidState = field(default_factory=GtidState)
    open_gtid: str | None = None
    parser: ParserContext = INITIAL
    context: DecodeContext = field(default_factory=DecodeContext)

    @staticmethod
    def resuming(state: GtidState, open_gtid: str | None, last_frame: bytes | None) -> "GroupTracker":
        """A tracker continuing after `last_frame` (the topic's last record): inside the group
        `open_gtid` when it had not ended there."""
        tracker = GroupTracker(state)
        if open_gtid is not None and not state.covers(open_gtid):
            tracker.open_gtid = open_gtid
            standalone = last_frame is not None and is_standalone_maria_gtid(last_frame)
            # after a standalone GTID one statement ends the group; else statements are INSIDE
            tracker.parser = (ParserContext(B.START, Opening.GTID) if standalone
                              else ParserContext(B.INSIDE, Opening.EXPLICIT))
        return tracker

    def format_description(self, fde: bytes) -> None:
        """The stream's current Format_description (checksum, post-header lengths)."""
        self.context = DecodeContext()
        self.context.defer_rows = True
        decode_event(fde, 4, self.context, verify_checksum=False)

    def feed(self, frame: bytes, pos: int) -> str | None:
        """Advance over one frame; returns the GTID of the group it belongs to (None outside
        GTID groups)."""
        if event_type(frame) == EventType.FORMAT_DESCRIPTION:
            self.format_description(frame)
            return self.open_gtid
        try:
            event = decode_event(frame, pos, self.context, verify_checksum=False)
        except BinlogError:
            return self.open_gtid
        step = advance(self.parser, event, self.context.flavour)
        self.parser = step.context
        if step.warning is not None:
            self.open_gtid = None  # the parser reset: the cut group never ends whole
        if step.boundary is B.START and isinstance(event.body, MariaGtid):
            self.open_gtid = event.body.gtid
        elif step.boundary is B.END and self.open_gtid is not None:
            ended, self.open_gtid = self.open_gtid, None
            self.state = self.state.advanced(ended)
            return ended
        return self.open_gtid

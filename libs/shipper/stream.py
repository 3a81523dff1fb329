"""Position tracking of a replica event stream (pure: bytes in, decisions out; no I/O).

What a MySQL/MariaDB master sends after COM_BINLOG_DUMP (MariaDB sql/sql_repl.cc
mysql_binlog_send, send_format_descriptor_event), per binlog file:

  1. a fake Rotate: timestamp 0, log_pos 0, flags LOG_EVENT_ARTIFICIAL_F, body = u64 position +
     file name (+ CRC32 only when the replica asked for checksums). Not file content: it tells
     the file name and the start position. Never published.
  2. the file's Format_description. At position 4 it is the real event (the master clears
     LOG_EVENT_BINLOG_IN_USE_F, which the file's CRC already assumes): published. When the
     dump starts mid-file the master re-sends it with log_pos 0 (and `created` 0): not file
     content, never published; it only tells the checksum algorithm.
  3. the file's events from the start position, byte for byte (with a capability < 4 some are
     replaced by same-size dummies, seed 003). A real Rotate/Stop ends the file; the next file
     starts again at 1.
  With a MariaDB GTID start the master skips the groups before the GTID state (a hole) and
  sends the file's FDE with `created` zeroed (checksum fixed): those records are not
  byte-identical to the file; file/pos starts are.
  Heartbeats (type 27, MySQL 8 also 41) arrive while the master waits: never published.
  Any other event flagged LOG_EVENT_ARTIFICIAL_F is master-made, not file content.

Every published frame's CRC32 is verified when the file's FDE says the stream has them (the
replica asks for the master's checksum algorithm; dummies the master substitutes carry a CRC32
it recomputed): a mismatch is refused, like cdc-ship --from-file refuses one (frame_check.py).

A GTID start (gtid_start=True) publishes nothing before the first group the master sends, the
first after the requested GTID state: the file's Format_description (its `created` zeroed, so
not file content) and the events before that group (Gtid_list, Binlog_checkpoint, and, when the
group lies in a later file, the earlier files' Rotates) are held back or skipped. The group's
first event then comes as PUBLISH with `format_first` = the held Format_description, which the
shipper sends as a format record at the group's position: what a file:pos dump starting there
would have sent.

Positions come from the byte stream: the fake Rotate gives the start, each published event
advances by its size. The header's log_pos is only a cross-check when non-zero (MariaDB 11.4+
writes 0 inside transactions): a mismatch means the master left a hole (capability 2/3
omitting events, or a GTID start skipping groups); we resynchronise and count it, because the
rebuilt file can then no longer be byte-identical.
"""
from __future__ import annotations

from dataclasses import dataclass

from libs.binlog import DecodeContext, decode_event
from libs.binlog.constants import COMMON_HEADER_LEN, LOG_EVENT_ARTIFICIAL_F, EventType
from libs.binlog.header import event_type, header_fields
from libs.binlog.errors import BinlogError

from libs.source.errors import FrameError, ShipError
from libs.shipper.frame_check import rotate_body
from libs.binlog.framing import crc_matches

ROTATE = int(EventType.ROTATE)
FDE = int(EventType.FORMAT_DESCRIPTION)
STOP = int(EventType.STOP)
HEARTBEATS = frozenset({int(EventType.HEARTBEAT), int(EventType.HEARTBEAT_V2)})

# Step kinds
PUBLISH = "publish"
FAKE_ROTATE = "fake_rotate"
ARTIFICIAL_FDE = "artificial_fde"
HEARTBEAT = "heartbeat"
ARTIFICIAL = "artificial"
SKIPPED = "skipped"  # file content before a GTID start's first group: not shipped

# Event types that open a GTID group: MariaDB Gtid, MySQL Gtid / Gtid_tagged
GROUP_STARTS = frozenset({int(EventType.MARIA_GTID), int(EventType.GTID), int(EventType.GTID_TAGGED)})


@dataclass(frozen=True)
class Step:
    """What to do with one received event: `kind`, and for PUBLISH its file and start pos."""

    kind: str
    file: str | None = None
    pos: int | None = None
    format_first: bytes | None = None  # GTID start: the Format_description to send before it


def parse_rotate(frame: bytes, checksum: bool | None) -> tuple[int, str]:
    """(position, next file name) of a Rotate frame. checksum None = unknown (before the FDE,
    as for the fake Rotate): a matching CRC32 over the frame decides. ValueError when the
    frame is too short or its name is not a plain UTF-8 file name (frame_check.rotate_body)."""
    return rotate_body(frame, crc_matches(frame) if checksum is None else checksum)


def fde_has_crc32(frame: bytes) -> bool:
    ctx = DecodeContext()
    decode_event(frame, 4, ctx, verify_checksum=False)
    return ctx.has_checksum


class StreamTracker:
    """Feeds on the events of one dump connection; says which are file content and where.

    >>> t = StreamTracker(source="s1")
    >>> step = t.feed(frame)   # Step(PUBLISH, "mdb-bin.000001", 256) or a non-publish kind
    """

    def __init__(self, source: str | None = None, *, gtid_start: bool = False):
        self.source = source
        self.awaiting_group = gtid_start  # a GTID start before its first group (module doc)
        self._held_fde: bytes | None = None
        self.file: str | None = None
        self.pos: int | None = None  # start of the next file event
        self.checksum: bool | None = None  # from the current file's FDE
        self.holes = 0
        self.last_timestamp = 0

    def _error(self, message: str, pos=None, cls: type[ShipError] = ShipError) -> ShipError:
        return cls(message, source=self.source, file=self.file,
                         pos=self.pos if pos is None else pos)

    def feed(self, frame: bytes) -> Step:
        step = self._feed(frame)
        if not self.awaiting_group or step.kind not in (PUBLISH, ARTIFICIAL_FDE):
            return step
        etype = event_type(frame)
        if etype == FDE:
            self._held_fde = frame
        elif etype in GROUP_STARTS:
            self.awaiting_group = False
            return Step(PUBLISH, step.file, step.pos, format_first=self._held_fde)
        return Step(SKIPPED, step.file, step.pos)

    def _feed(self, frame: bytes) -> Step:
        if len(frame) < COMMON_HEADER_LEN:
            raise self._error(f"packet of {len(frame)} bytes is shorter than an event header")
        header = header_fields(frame)
        ts, etype, size, log_pos, flags = (header.timestamp, header.type_code, header.event_size,
                                           header.log_pos, header.flags)
        if size != len(frame):
            raise self._error(f"event_size {size} but the packet holds {len(frame)} bytes "
                              f"(type {etype})")
        if etype in HEARTBEATS:
            return Step(HEARTBEAT)
        if etype == ROTATE and (flags & LOG_EVENT_ARTIFICIAL_F or (ts == 0 and log_pos == 0)):
            try:
                position, name = parse_rotate(frame, None)
            except ValueError as exc:
                raise self._error(f"bad fake Rotate: {exc}", cls=FrameError) from None
            self.file, self.pos, self.checksum = name, position, None
            return Step(FAKE_ROTATE, name, position)
        if self.file is None:
            raise self._error(f"stream did not start with a fake Rotate (first event type {etype})")
        if etype == FDE:
            try:
                self.checksum = fde_has_crc32(frame)
            except BinlogError as exc:
                raise self._error(f"bad Format_description: {exc.kind}: {exc.message}",
                                  cls=FrameError) from None
            if log_pos == 0:
                return Step(ARTIFICIAL_FDE, self.file, self.pos)
        elif flags & LOG_EVENT_ARTIFICIAL_F:
            return Step(ARTIFICIAL, self.file, self.pos)
        pos = self.pos
        if log_pos != 0 and log_pos != pos + size and log_pos >= size + 4:
            # a hole the master left (see module doc): resynchronise on the header; the skip
            # to a GTID start's first group is the one asked for, not a hole
            self.holes += not self.awaiting_group
            pos = log_pos - size
        if self.checksum and etype != FDE and not crc_matches(frame):
            # a file frame corrupted on the way (the master's own CRC32 does not match): never
            # published, so the topic only holds what the server wrote (DESIGN.md "Bad input")
            raise self._error(f"CRC32 mismatch (event type {etype})", pos, cls=FrameError)
        step = Step(PUBLISH, self.file, pos)
        self.pos = pos + size
        self.last_timestamp = ts or self.last_timestamp
        if etype == ROTATE:
            # the real Rotate ends this file; the master follows with a fake Rotate anyway
            try:
                position, name = parse_rotate(frame, self.checksum)
            except ValueError as exc:
                raise self._error(f"bad Rotate: {exc}", pos, cls=FrameError) from None
            self.file, self.pos = name, position
        return step

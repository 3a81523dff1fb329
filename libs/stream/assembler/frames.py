"""What the assembler reads off a frame before the boundary parser takes it (libs/stream/assembler/
assembler.py): is it an event with no binlog bytes (a fake Rotate, a heartbeat) and does it
stand in a file anyway, where it stands against the frame before it (the next one, a
redelivery, a new file; lost frames are a StreamGapError), and may it take the fast path."""
from __future__ import annotations

from libs.binlog import Dummy, Ignorable
from libs.binlog.constants import EventType
from libs.binlog.event_class import EventClass, event_class
from libs.binlog.file_names import binlog_sort_key
from libs.binlog.shapes import undecoded
from libs.stream.boundary import is_fake_rotate

from libs.stream.assembler.model import Frame, StreamGapError

NEW_FILE, NEXT, DUPLICATE = "new_file", "next", "duplicate"
_ROTATE = EventType.ROTATE
_HEARTBEATS = (EventType.HEARTBEAT, EventType.HEARTBEAT_V2)
# Types the assembler handles before the boundary parser: never on the fast path.
_SPECIAL_TYPES = frozenset({EventType.FORMAT_DESCRIPTION, EventType.START_V3, _ROTATE, *_HEARTBEATS})


def placed(source: str, last_file: str | None, last_end_pos: int | None, file: str, pos: int) -> str:
    """Where a frame at file:pos stands after the last one (which ended at last_file:last_end_pos):
    NEXT, DUPLICATE (a producer's redelivery) or NEW_FILE; a gap inside one file raises
    StreamGapError (positions come from the bytes)."""
    if last_file is None or last_end_pos is None:
        return NEW_FILE
    if file == last_file:
        if pos < last_end_pos:
            return DUPLICATE
        if pos > last_end_pos:
            raise StreamGapError(source, file, last_end_pos, pos)
        return NEXT
    if _file_order(file, last_file) < 0:
        return DUPLICATE  # a frame of an earlier file: redelivered
    return NEW_FILE  # positions restart after Rotate: not compared across files


def plain_event(event, flavour: str) -> bool:
    """Does the assembler take this event, at the next position, straight to the boundary parser?
    A function of (type code, flags, body class, flavour), the fast path's memo key: not a type it
    handles first (_SPECIAL_TYPES: Format_description, Start_v3, fake Rotate, heartbeats),
    WL#4033-known in the stream's flavour, neither Ignorable nor Dummy, its body decoded
    (shapes.undecoded reads the body's class only)."""
    code = event.header.type_code
    return (code not in _SPECIAL_TYPES and event_class(code, event.header.flags, flavour) is EventClass.KNOWN
            and not isinstance(event.body, (Ignorable, Dummy)) and not undecoded(event))


def not_binlog_bytes(event) -> bool:
    code = event.header.type_code
    return (code == _ROTATE and is_fake_rotate(event)) or code in _HEARTBEATS


def in_file(frame: Frame) -> bool:
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

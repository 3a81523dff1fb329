"""The event walk shared by `binlog-dump` text and JSON output: frames -> decoded
events -> WL#4162 boundary type, with mysqlbinlog's --start-position / --stop-position.

    for item in walk(data, "mdb-bin.000001"):
        print(item.event.pos, item.boundary_name)

The boundary of each event is its marker when the header carries one (WL#4162 F1/F2, three
flag bits), else what the boundary parser classifies (libs.stream.boundary.advance: the seed's table
plus M1/M2); the parser runs over every event from the start of the file, also over events
before --start-position, so its state is right where printing begins. Decode errors propagate
as the codec's typed BinlogError *after* every event before the bad frame was yielded.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator

from libs.stream import boundary as bp
from libs.binlog.constants import BoundaryType, boundary_marker
from libs.binlog.context import DecodeContext
from libs.binlog.framing import check_magic, decode_event, iter_frames
from libs.binlog import Dummy, Event, Ignorable, TableMap
from libs.binlog.shapes import is_rows


@dataclass(frozen=True, slots=True)
class DumpItem:
    """One event to print, with what its printers need besides the event itself."""

    event: Event
    frame: bytes  # header + body (+ CRC32), exactly as in the file
    has_checksum: bool  # the frame ends with a CRC32 trailer
    boundary: BoundaryType | None  # None: the parser rejected it (see warning)
    boundary_source: str  # "marker" (header flag bits) | "parser" (classified by type)
    warning: str | None  # the seed's "Unable to change boundary parser from X to Y"
    table_map: TableMap | None  # for rows events: the Table_map they refer to

    @property
    def boundary_name(self) -> str:
        return "Rejected" if self.boundary is None else bp.BOUNDARY_NAMES[self.boundary]

    @property
    def ignorable(self) -> bool:
        return isinstance(self.event.body, Ignorable)

    @property
    def dummy(self) -> bool:
        return isinstance(self.event.body, Dummy)


def walk(data, file: str, *, start: int | None = None, stop: int | None = None,
         ctx: DecodeContext | None = None) -> Iterator[DumpItem]:
    """Events of one whole binlog file (bytes with magic), from the first event at or after
    `start` up to, not including, the first event at or after `stop` (mysqlbinlog semantics).
    Events before `start` are still decoded: the FDE, Table_maps and the boundary parser need
    them."""
    ctx = ctx if ctx is not None else DecodeContext(file=file)
    ctx.file = file
    check_magic(data, file=file)
    parser = bp.INITIAL
    for pos, frame in iter_frames(data, 4, file=file):
        if stop is not None and pos >= stop:
            return
        event = decode_event(frame, pos, ctx, file=file)
        step = bp.advance(parser, event, ctx.flavour)
        parser = step.context
        if start is not None and pos < start:
            continue
        marked = boundary_marker(event.header.flags) is not BoundaryType.NOT_DEFINED
        body = event.body
        table_map = ctx.table_maps.get(body.table_id) if is_rows(event) else None
        yield DumpItem(event, bytes(frame), event.checksum_ok is not None, step.boundary,
                       "marker" if marked else "parser", step.warning, table_map)

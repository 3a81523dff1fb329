"""Framing of the simulated binlog: event records -> exact frames at their file positions.

Every frame is built with the codec's `encode_event`, gets `log_pos` = its end position (what
real servers write), optionally a WL#4162 boundary marker (`with_boundary_marker`, the codec's
one mask), and is decoded back with `decode_event` before it is handed on: the codec's context
(FDE, Table_maps) follows the stream and anything the codec could not read fails here, not in a
consumer. WL#4033 ignorable events of an unknown type are slipped between events at a
configured rate (never between a Table_map and its rows events).
"""
from __future__ import annotations

import random
import struct
import zlib
from dataclasses import dataclass

from libs.binlog import DecodeContext, Event, Header, Ignorable, decode_event, encode_event
from libs.binlog.constants import (LOG_EVENT_IGNORABLE_F, BoundaryType, EventType,
                                   with_boundary_marker)

# WL#4033: a type code no server defines; with LOG_EVENT_IGNORABLE_F any reader must skip it.
IGNORABLE_TYPE = 0x7A
ROWS_AND_MAPS = frozenset({
    EventType.TABLE_MAP, EventType.WRITE_ROWS_V1, EventType.UPDATE_ROWS_V1,
    EventType.DELETE_ROWS_V1, EventType.WRITE_ROWS, EventType.UPDATE_ROWS, EventType.DELETE_ROWS,
})


@dataclass(frozen=True)
class Item:
    """One event to write: type, body record, header flags and its WL#4162 boundary type."""

    type_code: int
    body: object
    boundary: BoundaryType
    flags: int = 0


@dataclass(frozen=True)
class Frame:
    pos: int  # start offset in the binlog file
    data: bytes  # exact bytes: header + body (+ CRC32)
    type_code: int


class BinlogStream:
    def __init__(self, *, server_id: int, checksum: bool, markers: bool, file_name: str,
                 ignorable_rate: float = 0.0, seed: int = 0):
        if not 0.0 <= ignorable_rate <= 1.0:
            raise ValueError(f"ignorable rate must be in [0, 1], got {ignorable_rate}")
        self.server_id = server_id
        self.checksum = checksum
        self.markers = markers
        self.file_name = file_name
        self.ignorable_rate = ignorable_rate
        self._rng = random.Random(f"ignorable-{seed}")
        self._ignorables = 0
        self.ctx = DecodeContext(file=file_name)
        self.pos = 4  # after the magic

    # ---- sizes (MySQL's GTID needs its transaction's length before it is written) ----------

    def encode(self, item: Item, timestamp: int, log_pos: int = 0) -> bytes:
        flags = item.flags
        if self.markers:
            flags = with_boundary_marker(flags, item.boundary)
        header = Header(timestamp, item.type_code, self.server_id, 0, log_pos, flags)
        checksum = None if item.type_code == EventType.FORMAT_DESCRIPTION else self.checksum
        return encode_event(Event(header, 0, item.body), self.ctx, checksum=checksum)

    def with_ignorables(self, items: list[Item]) -> list[Item]:
        """WL#4033: at each slot (before any event but a Table_map or rows event) insert an
        ignorable event of unknown type 0x7A with probability `ignorable_rate`."""
        if not self.ignorable_rate:
            return items
        out = []
        for item in items:
            if item.type_code not in ROWS_AND_MAPS and self._rng.random() < self.ignorable_rate:
                self._ignorables += 1
                data = b"sim-ignorable-" + str(self._ignorables).encode()
                out.append(Item(IGNORABLE_TYPE, Ignorable(IGNORABLE_TYPE, data),
                                BoundaryType.IGNORE, LOG_EVENT_IGNORABLE_F))
            out.append(item)
        return out

    # ---- writing ---------------------------------------------------------------------------

    def write(self, item: Item, timestamp: int) -> Frame:
        frame = bytearray(self.encode(item, timestamp))
        end = self.pos + len(frame)
        struct.pack_into("<I", frame, 13, end)  # log_pos = end of this event (binlog_event.h)
        has_crc = item.type_code == EventType.FORMAT_DESCRIPTION or self.checksum
        if has_crc:
            struct.pack_into("<I", frame, len(frame) - 4, zlib.crc32(memoryview(frame)[:-4]))
        data = bytes(frame)
        decode_event(data, self.pos, self.ctx)  # keeps the codec context (FDE, Table_maps) current
        out = Frame(self.pos, data, item.type_code)
        self.pos = end
        return out

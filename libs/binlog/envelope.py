"""The event envelope the codec produces for every frame (Header, Event) and the bodies it keeps
as bytes (Ignorable: the WL#4033 default for an unknown type; Opaque: known types not parsed).

Contract for every consumer (boundary parser, assembler, rows, dump, shipper): record field names
are stable. Decoders may add fields; renaming one means updating every user in the same change.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from libs.binlog.constants import BoundaryType, EventType, boundary_marker


@dataclass(frozen=True, slots=True)
class Header:
    """The 19-byte common header (binlog_event.h Log_event_header)."""

    timestamp: int
    type_code: int
    server_id: int
    event_size: int
    log_pos: int
    flags: int


@dataclass(frozen=True, slots=True)
class Event:
    """One decoded event. `pos` is its start offset in the binlog file, computed from the byte
    stream (never from header.log_pos: MariaDB 11.4+ writes 0 inside transactions)."""

    header: Header
    pos: int
    body: Any
    checksum_ok: bool | None = None  # None: the stream carries no checksums
    file: str | None = None

    @property
    def type_code(self) -> int:
        return self.header.type_code

    @property
    def end_pos(self) -> int:
        return self.pos + self.header.event_size

    @property
    def boundary_marker(self) -> BoundaryType:
        return boundary_marker(self.header.flags)

    @property
    def type_name(self) -> str:
        try:
            return EventType(self.header.type_code).name
        except ValueError:
            return f"UNKNOWN_{self.header.type_code}"


@dataclass(frozen=True, slots=True)
class Ignorable:
    """Unknown type code with LOG_EVENT_IGNORABLE_F (WL#4033): skipped and counted."""

    type_code: int
    data: bytes = b""


@dataclass(frozen=True, slots=True)
class Opaque:
    """A known, framed and classified event whose body this codec keeps as bytes (legacy
    LOAD/Create_file of v3 files, MySQL 5.1 pre-GA rows events 20-22, Slave 7)."""

    type_code: int
    data: bytes

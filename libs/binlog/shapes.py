"""What a decoded record can be: the one rule every consumer of the codec asks (the assembler,
the rows stage's change records, the dump renderers), instead of guessing from type codes.

A rows-family type code does not promise a Rows body: MySQL 5.1 pre-GA rows events (20-22,
WL#2325 drafts) are framed and classified but their bodies are kept as bytes (Opaque), like
the binlog v3 LOAD family. So:

    is_rows(event)       a rows event whose body is a decoded Rows (event_class.DECODED_ROWS_TYPES)
    is_table_map(event)  a Table_map (body: a decoded TableMap)
    undecoded(event)     why the body was kept as bytes (a known event this codec cannot apply:
                         it must be quarantined with its position, never skipped), else None

    if undecoded(event): quarantine(event, UndecodedError(...))
    elif is_rows(event): ... event.body.rows ...
"""
from __future__ import annotations

from libs.binlog.constants import EventType
from libs.binlog.errors import UnsupportedError
from libs.binlog.envelope import Opaque
from libs.binlog.event_class import DECODED_ROWS_TYPES

_WHY = {
    EventType.PRE_GA_WRITE_ROWS: "MySQL 5.1 pre-GA rows event (WL#2325 draft format)",
    EventType.PRE_GA_UPDATE_ROWS: "MySQL 5.1 pre-GA rows event (WL#2325 draft format)",
    EventType.PRE_GA_DELETE_ROWS: "MySQL 5.1 pre-GA rows event (WL#2325 draft format)",
    EventType.LOAD: "binlog v3 LOAD DATA event",
    EventType.CREATE_FILE: "binlog v3 LOAD DATA event (Create_file)",
    EventType.NEW_LOAD: "binlog v3 LOAD DATA event (New_load)",
    EventType.SLAVE: "Slave event (never written by a server)",
}


def is_rows(event) -> bool:
    """A rows event the registry decodes with rows.py (pre-GA 20-22 are not among them)."""
    return event.header.type_code in DECODED_ROWS_TYPES and type(event.body) is not Opaque


def is_table_map(event) -> bool:
    return event.header.type_code == EventType.TABLE_MAP


def undecoded(event) -> str | None:
    """Why this known event's body was kept as bytes, or None when it was decoded."""
    if type(event.body) is not Opaque:
        return None
    return _WHY.get(event.header.type_code, f"event type {event.header.type_code}") + \
        ": body not decoded, cannot be applied"


def undecoded_error(event, *, file: str | None = None, pos: int | None = None,
                    source: str | None = None) -> UnsupportedError:
    """The typed error a consumer raises or quarantines for an undecoded event."""
    return UnsupportedError(undecoded(event) or "decoded event", file if file is not None else event.file,
                            pos if pos is not None else event.pos, event.header.type_code,
                            b"", source)

"""WL#4033: does a replica know an event type, ignore it, or stop on it? Decided here only.

    event_class(type_code, flags, flavour=None) -> EventClass.KNOWN | IGNORABLE | UNKNOWN

The seed's rule ("IGNORED ON SLAVE" 2-3, and the `default:` branch of read_log_event it adds):

    the type code has a case in the replica's decoder  -> KNOWN      handled by its own logic
    no case, LOG_EVENT_IGNORABLE_F (0x80) set           -> IGNORABLE  treated as the base class
                                                                      Ignorable_log_event: skipped
                                                                      after the position moves
    no case, flag clear                                 -> UNKNOWN    "Unknown event code": stop

The flag only matters for a type the replica does not know: Rows_query (29) carries it on every
server (it is an Ignorable_log_event sub-class), yet a replica that knows 29 handles it (here:
lineage). Two type codes have no case of their own and so are classified by the flag alone:
UNKNOWN_EVENT (0) and IGNORABLE_LOG_EVENT (28) itself (MySQL log_event.cc read_log_event has no
`case` for either; the seed's Ignorable_log_event is reached through `default:`).

"Known" depends on which server wrote the stream (`flavour`, from its Format_description):
MariaDB's own types 160-171 are unknown to a MySQL stream, so one of them there is skipped with
the flag and stops the stream without it, exactly like a type from a newer server. A MariaDB
server also knows MySQL's 1-42 (it reads the MySQL 5.6 GTID events as ignorable).
`flavour=None` is the codec's view: a type either server writes has a body decoder, so
`binlog-dump` shows a MariaDB event found in a MySQL file; the assembler then applies the
stream's flavour.

Rows event type codes have two sets because they mean two things:
    ROWS_EVENT_TYPES    every rows-event type code: what the WL#4162 parser classifies INSIDE
    DECODED_ROWS_TYPES  those whose body rows.py decodes: all but the MySQL 5.1 pre-GA 20-22
                        (WL#2325 drafts, framed but kept as bytes, like mysqlbinlog does)
"""
from __future__ import annotations

from enum import Enum

from libs.binlog.constants import LOG_EVENT_IGNORABLE_F, EventType


class EventClass(Enum):
    KNOWN = "known"  # decoded and handled by its own logic
    IGNORABLE = "ignorable"  # unrecognised, LOG_EVENT_IGNORABLE_F: skipped and counted
    UNKNOWN = "unknown"  # unrecognised, no flag: stop the stream (or quarantine, by policy)


MARIADB_ONLY_TYPES = frozenset(t for t in EventType if t >= EventType.ANNOTATE_ROWS)
# No `case` in a replica's read_log_event: only LOG_EVENT_IGNORABLE_F decides (see above).
NO_CASE_TYPES = frozenset({EventType.UNKNOWN, EventType.IGNORABLE})

# Plain ints, not EventType members: event_class runs for every frame of the assemble stage,
# and a frozenset of ints answers `in` without building an enum.
_KNOWN = {
    "mysql": frozenset(int(t) for t in EventType if t not in MARIADB_ONLY_TYPES | NO_CASE_TYPES),
    "mariadb": frozenset(int(t) for t in EventType if t not in NO_CASE_TYPES),
}
_KNOWN[None] = _KNOWN["mysql"] | _KNOWN["mariadb"]
FLAVOURS = ("mysql", "mariadb")

PRE_GA_ROWS_TYPES = frozenset({
    EventType.PRE_GA_WRITE_ROWS, EventType.PRE_GA_UPDATE_ROWS, EventType.PRE_GA_DELETE_ROWS,
})
DECODED_ROWS_TYPES = frozenset({
    EventType.WRITE_ROWS_V1, EventType.UPDATE_ROWS_V1, EventType.DELETE_ROWS_V1,
    EventType.WRITE_ROWS, EventType.UPDATE_ROWS, EventType.DELETE_ROWS,
    EventType.PARTIAL_UPDATE_ROWS,
    EventType.WRITE_ROWS_COMPRESSED_V1, EventType.UPDATE_ROWS_COMPRESSED_V1,
    EventType.DELETE_ROWS_COMPRESSED_V1, EventType.WRITE_ROWS_COMPRESSED,
    EventType.UPDATE_ROWS_COMPRESSED, EventType.DELETE_ROWS_COMPRESSED,
})
ROWS_EVENT_TYPES = PRE_GA_ROWS_TYPES | DECODED_ROWS_TYPES


def known_types(flavour: str | None = None) -> frozenset[int]:
    """The type codes a replica of `flavour` has a case for (None: either server's)."""
    if flavour not in _KNOWN:
        raise ValueError(f"flavour must be one of {FLAVOURS} or None, got {flavour!r}")
    return _KNOWN[flavour]


def event_class(type_code: int, flags: int, flavour: str | None = None) -> EventClass:
    """The WL#4033 class of an event of `type_code` with header `flags` in a `flavour` stream.

    >>> event_class(29, 0x80, "mysql")   # Rows_query: known, its flag does not make it skipped
    <EventClass.KNOWN: 'known'>
    >>> event_class(99, 0x80, "mysql")   # a newer server's informational event
    <EventClass.IGNORABLE: 'ignorable'>
    >>> event_class(160, 0, "mysql")     # Annotate_rows in a MySQL stream, no flag
    <EventClass.UNKNOWN: 'unknown'>
    """
    known = _KNOWN.get(flavour)
    if known is None:
        raise ValueError(f"flavour must be one of {FLAVOURS} or None, got {flavour!r}")
    if type_code in known:
        return EventClass.KNOWN
    return EventClass.IGNORABLE if flags & LOG_EVENT_IGNORABLE_F else EventClass.UNKNOWN

"""Binlog wire constants: event type codes, header flags, column types.

Sources: MySQL `libs/mysql/binlog/event/binlog_event.h` (Log_event_type, LOG_EVENT_*_F),
MariaDB `sql/log_event.h` (types 160-171), `field_types.h` (enum_field_types).
"""
from __future__ import annotations

import struct
from enum import IntEnum

BINLOG_MAGIC = b"\xfebin"
CHECKSUM_LEN = 4

# The 19-byte common header (binlog_event.h Log_event_header), little endian: timestamp u32,
# type u8, server_id u32, event_size u32, log_pos u32, flags u16. Declared here only; framing
# and the shipper unpack it through this struct or these offsets.
COMMON_HEADER = struct.Struct("<IBIIIH")
COMMON_HEADER_LEN = COMMON_HEADER.size  # LOG_EVENT_HEADER_LEN
EVENT_TYPE_OFFSET = 4
SERVER_ID_OFFSET = 5
EVENT_LEN_OFFSET = 9
LOG_POS_OFFSET = 13
FLAGS_OFFSET = 17


class EventType(IntEnum):
    UNKNOWN = 0
    START_V3 = 1
    QUERY = 2
    STOP = 3
    ROTATE = 4
    INTVAR = 5
    LOAD = 6
    SLAVE = 7
    CREATE_FILE = 8
    APPEND_BLOCK = 9
    EXEC_LOAD = 10
    DELETE_FILE = 11
    NEW_LOAD = 12
    RAND = 13
    USER_VAR = 14
    FORMAT_DESCRIPTION = 15
    XID = 16
    BEGIN_LOAD_QUERY = 17
    EXECUTE_LOAD_QUERY = 18
    TABLE_MAP = 19
    PRE_GA_WRITE_ROWS = 20
    PRE_GA_UPDATE_ROWS = 21
    PRE_GA_DELETE_ROWS = 22
    WRITE_ROWS_V1 = 23
    UPDATE_ROWS_V1 = 24
    DELETE_ROWS_V1 = 25
    INCIDENT = 26
    HEARTBEAT = 27
    IGNORABLE = 28
    ROWS_QUERY = 29
    WRITE_ROWS = 30
    UPDATE_ROWS = 31
    DELETE_ROWS = 32
    GTID = 33
    ANONYMOUS_GTID = 34
    PREVIOUS_GTIDS = 35
    TRANSACTION_CONTEXT = 36
    VIEW_CHANGE = 37
    XA_PREPARE = 38
    PARTIAL_UPDATE_ROWS = 39
    TRANSACTION_PAYLOAD = 40
    HEARTBEAT_V2 = 41
    GTID_TAGGED = 42
    # MariaDB
    ANNOTATE_ROWS = 160
    BINLOG_CHECKPOINT = 161
    MARIA_GTID = 162
    GTID_LIST = 163
    START_ENCRYPTION = 164
    QUERY_COMPRESSED = 165
    WRITE_ROWS_COMPRESSED_V1 = 166
    UPDATE_ROWS_COMPRESSED_V1 = 167
    DELETE_ROWS_COMPRESSED_V1 = 168
    WRITE_ROWS_COMPRESSED = 169
    UPDATE_ROWS_COMPRESSED = 170
    DELETE_ROWS_COMPRESSED = 171


KNOWN_TYPE_CODES = frozenset(int(t) for t in EventType)

# Common-header flags (binlog_event.h LOG_EVENT_*_F; MariaDB log_event.h).
LOG_EVENT_BINLOG_IN_USE_F = 0x0001
LOG_EVENT_THREAD_SPECIFIC_F = 0x0004
LOG_EVENT_SUPPRESS_USE_F = 0x0008
LOG_EVENT_UPDATE_TABLE_MAP_VERSION_F = 0x0010
LOG_EVENT_ARTIFICIAL_F = 0x0020
LOG_EVENT_RELAY_LOG_F = 0x0040
LOG_EVENT_IGNORABLE_F = 0x0080  # WL#4033: unknown type + this flag => skip, never fail
LOG_EVENT_NO_FILTER_F = 0x0100
LOG_EVENT_MTS_ISOLATE_F = 0x0200
LOG_EVENT_ACCEPT_OWN_F = 0x4000  # MariaDB
LOG_EVENT_SKIP_REPLICATION_F = 0x8000  # MariaDB

# Rows event flags (rows_event.h Rows_event::enum_flag).
STMT_END_F = 0x0001  # the last rows event of its statement
NO_FOREIGN_KEY_CHECKS_F = 0x0002
RELAXED_UNIQUE_CHECKS_F = 0x0004
COMPLETE_ROWS_F = 0x0008

# MariaDB Gtid_log_event flags2 (sql/log_event.h FL_*).
MARIA_FL_STANDALONE = 0x01
MARIA_FL_GROUP_COMMIT_ID = 0x02
MARIA_FL_TRANSACTIONAL = 0x04
MARIA_FL_ALLOW_PARALLEL = 0x08
MARIA_FL_WAITED = 0x10
MARIA_FL_DDL = 0x20
MARIA_FL_PREPARED_XA = 0x40
MARIA_FL_COMPLETED_XA = 0x80

# COM_BINLOG_DUMP flag (sql/sql_repl.cc): MariaDB sends Annotate_rows only when it is set.
BINLOG_SEND_ANNOTATE_ROWS_EVENT = 0x02

# Table_map flags (rows_event.h Table_map_event::enum_flag): both servers write this one.
TM_BIT_LEN_EXACT_F = 0x0001

# WL#4162 transaction boundary markers: three bits of the common-header flags.
# WL#4162 never fixed which three; we use bits 10-12 (0x1C00) because every flag MySQL
# (0x0001-0x0200) and MariaDB (those plus 0x4000, 0x8000) define lies outside them, so a
# marker can never be mistaken for a real flag or vice versa. This is the only place the
# mask is written; everything else reads it through `boundary_marker()` / `with_boundary_marker()`.
BOUNDARY_MARKER_SHIFT = 10
BOUNDARY_MARKER_MASK = 0x7 << BOUNDARY_MARKER_SHIFT


class BoundaryType(IntEnum):
    """WL#4162 D2: transaction boundary types (the values the three marker bits hold)."""

    NOT_DEFINED = 0
    IGNORE = 1
    SELF_CONTAINED = 2
    START = 3
    INSIDE = 4
    END = 5


def boundary_marker(flags: int, mask: int = BOUNDARY_MARKER_MASK) -> BoundaryType:
    """The WL#4162 boundary type carried by header `flags` (NOT_DEFINED when unmarked).

    Values 6 and 7 are reserved by WL#4162 D2 and read as NOT_DEFINED (classify by type).
    """
    shift = (mask & -mask).bit_length() - 1
    value = (flags & mask) >> shift
    # a tuple lookup, not BoundaryType(value): this runs once per frame in the assemble stage
    return _BOUNDARY_TYPES[value] if value < len(_BOUNDARY_TYPES) else BoundaryType.NOT_DEFINED


_BOUNDARY_TYPES = tuple(BoundaryType)  # index = value: 0 NOT_DEFINED .. 5 END


def with_boundary_marker(flags: int, boundary: BoundaryType, mask: int = BOUNDARY_MARKER_MASK) -> int:
    shift = (mask & -mask).bit_length() - 1
    return (flags & ~mask) | ((int(boundary) << shift) & mask)


class ColumnType(IntEnum):
    """enum_field_types (field_types.h)."""

    DECIMAL = 0
    TINY = 1
    SHORT = 2
    LONG = 3
    FLOAT = 4
    DOUBLE = 5
    NULL = 6
    TIMESTAMP = 7
    LONGLONG = 8
    INT24 = 9
    DATE = 10
    TIME = 11
    DATETIME = 12
    YEAR = 13
    NEWDATE = 14
    VARCHAR = 15
    BIT = 16
    TIMESTAMP2 = 17
    DATETIME2 = 18
    TIME2 = 19
    TYPED_ARRAY = 20
    VECTOR = 242
    INVALID = 243
    BOOL = 244
    JSON = 245
    NEWDECIMAL = 246
    ENUM = 247
    SET = 248
    TINY_BLOB = 249
    MEDIUM_BLOB = 250
    LONG_BLOB = 251
    BLOB = 252
    VAR_STRING = 253
    STRING = 254
    GEOMETRY = 255


# Checksum algorithm byte at the end of a Format_description event (binlog_event.h).
CHECKSUM_OFF = 0
CHECKSUM_CRC32 = 1
CHECKSUM_UNDEFINED = 255

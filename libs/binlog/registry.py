"""The ONE table from event type code to (body decoder, body encoder), with an explicit default
for a type it has no decoder for, decided by event_class.py (WL#4033): IGNORABLE decodes to an
Ignorable record (skipped and counted by consumers); UNKNOWN raises UnknownEventError naming
the position and type code. Its keys are event_class.known_types(None) exactly.

Decoder: (header, body, ctx) -> record. Encoder: (record, header, ctx) -> body bytes. Bodies are
exactly the bytes after the common header, without the checksum (framing.py slices them).
Row events and Table_map are decoded by rows.py / tablemap.py, whose functions take the type
code and body rather than the header; the wrappers below adapt them.
"""
from __future__ import annotations

from typing import Callable

from libs.binlog.constants import EventType
from libs.binlog.errors import UnknownEventError
from libs.binlog.envelope import Ignorable, Opaque
from libs.binlog.event_class import DECODED_ROWS_TYPES, EventClass, event_class
from libs.binlog.events_control import CONTROL_CODECS
from libs.binlog.events_mariadb import MARIADB_CODECS
from libs.binlog.events_mysql_gtid import GTID_CODECS
from libs.binlog.events_mysql_group import GROUP_CODECS
from libs.binlog.events_statement import STATEMENT_CODECS
from libs.binlog.rows import decode_rows as _decode_rows, decode_rows_header as _decode_rows_header
from libs.binlog.rows import encode_rows as _encode_rows
from libs.binlog.tablemap import decode_table_map as _decode_table_map, encode_table_map as _encode_table_map

Decoder = Callable[..., object]
Encoder = Callable[..., bytes]

# Known and framed, body kept as bytes: binlog v3 LOAD DATA (Load 6, Create_file 8, New_load 12),
# Slave (7, never written), MySQL 5.1 pre-GA rows events 20-22 (WL#2325 drafts; mysqlbinlog of
# later versions refuses them too).
OPAQUE_TYPES = frozenset({EventType.LOAD, EventType.SLAVE, EventType.CREATE_FILE,
                          EventType.NEW_LOAD, EventType.PRE_GA_WRITE_ROWS,
                          EventType.PRE_GA_UPDATE_ROWS, EventType.PRE_GA_DELETE_ROWS})


def decode_table_map(header, body, ctx):
    return _decode_table_map(body, ctx)


def encode_table_map(rec, header, ctx) -> bytes:
    return _encode_table_map(rec, ctx)


def decode_rows(header, body, ctx):
    if ctx.defer_rows:
        return _decode_rows_header(header.type_code, body, ctx)
    return _decode_rows(header.type_code, body, ctx)


def encode_rows(rec, header, ctx) -> bytes:
    return _encode_rows(header.type_code, rec, ctx)


def decode_opaque(header, body, ctx) -> Opaque:
    return Opaque(header.type_code, bytes(body))


def encode_opaque(rec, header, ctx) -> bytes:
    return rec.data


CODECS: dict[int, tuple[Decoder, Encoder]] = {}
for _table in (CONTROL_CODECS, STATEMENT_CODECS, MARIADB_CODECS, GTID_CODECS, GROUP_CODECS):
    CODECS.update({int(k): v for k, v in _table.items()})
CODECS[int(EventType.TABLE_MAP)] = (decode_table_map, encode_table_map)
CODECS.update({int(t): (decode_rows, encode_rows) for t in DECODED_ROWS_TYPES})
CODECS.update({int(t): (decode_opaque, encode_opaque) for t in OPAQUE_TYPES})


def decode_ignorable(header, body, ctx) -> Ignorable:
    return Ignorable(header.type_code, bytes(body))


def encode_ignorable(rec: Ignorable, header, ctx) -> bytes:
    return rec.data


def decoder_for(header) -> Decoder:
    """The body decoder for this header; the WL#4033 default for a type without one."""
    entry = CODECS.get(header.type_code)
    if entry is not None:
        return entry[0]
    if event_class(header.type_code, header.flags) is EventClass.IGNORABLE:
        return decode_ignorable
    raise UnknownEventError(f"unknown event type {header.type_code} without "
                            f"LOG_EVENT_IGNORABLE_F", type_code=header.type_code)


def encoder_for(header, record) -> Encoder:
    if isinstance(record, Ignorable):
        return encode_ignorable
    entry = CODECS.get(header.type_code)
    if entry is None:
        raise UnknownEventError(f"no encoder for event type {header.type_code}",
                                type_code=header.type_code)
    return entry[1]

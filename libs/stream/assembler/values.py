"""Python value of a decoded column -> ColumnValue {ordinal, name, type_code, text, binary}
(schemas/change_record.avsc). Exactly one of text/binary is set unless the value is SQL NULL."""
from __future__ import annotations

import datetime as dt
import ipaddress
import json
from decimal import Decimal

from libs.binlog import charsets
from libs.binlog.constants import ColumnType

# Column types whose bytes are characters when the column has a (non-binary) charset:
# CHAR/VARCHAR are STRING/VAR_STRING/VARCHAR, TEXT is a BLOB type with a charset (field_types.h).
CHARACTER_TYPES = frozenset({
    ColumnType.VARCHAR, ColumnType.VAR_STRING, ColumnType.STRING, ColumnType.TINY_BLOB,
    ColumnType.MEDIUM_BLOB, ColumnType.LONG_BLOB, ColumnType.BLOB, ColumnType.ENUM, ColumnType.SET,
    ColumnType.JSON,
})


def column_value(ordinal: int, name: str | None, type_code: int, value, charset: str | int | None = None,
                 labels=None, family: str | None = None) -> dict:
    """One present column of a row image as a ColumnValue dict.

    int/Decimal/float -> decimal text; str -> text; bytes -> binary, unless the column is a
    character type with a known charset - a name like 'utf8mb4' or a collation id as the
    Table_map's column_charsets carry (then decoded text; undecodable bytes stay binary);
    temporal -> ISO-8601 text; JSON documents (dict/list) -> JSON text; None -> both null.
    `labels`: ENUM/SET members (Table_map metadata or the declaration): the index or bitmask
    becomes the label text as the server shows it ('a,c' for a SET). `family`: the declared
    column's family (libs/targets/types.py): MariaDB UUID/INET4/INET6, logged as BINARY(16)/(4),
    become the server's text.

    >>> column_value(0, "id", 3, 7)["text"]
    '7'
    >>> column_value(1, "e", ColumnType.ENUM, 2, labels=("bronze", "silver"))["text"]
    'silver'
    """
    if labels is not None and value is not None and type_code in (ColumnType.ENUM, ColumnType.SET):
        return _row(ordinal, name, type_code,
                    _label_text(type_code, value, labels, name or f"@{ordinal + 1}"), None)
    if family in _ADDRESS_TEXT and isinstance(value, (bytes, bytearray, memoryview)):
        text, width = _ADDRESS_TEXT[family]
        # A fixed-width binary value is logged without its trailing 0x00 pad (Field_string::pack).
        return _row(ordinal, name, type_code, text(bytes(value).ljust(width, b"\0")), None)
    text, binary = _text_or_binary(type_code, value, charset)
    return _row(ordinal, name, type_code, text, binary)


def _row(ordinal, name, type_code, text, binary) -> dict:
    return {"ordinal": int(ordinal), "name": name, "type_code": int(type_code), "text": text,
            "binary": binary}


def _label_text(type_code: int, value: int, labels, column: str) -> str:
    """ENUM index (1-based; 0 = the '' error value) or SET bitmask -> label text."""
    if type_code == ColumnType.ENUM:
        if value == 0:
            return ""
        if not 0 < value <= len(labels):
            raise ValueError(f"column {column}: ENUM index {value} beyond its {len(labels)} labels")
        return labels[value - 1]
    if value >> len(labels):
        raise ValueError(f"column {column}: SET value {value:#x} has members beyond its {len(labels)} labels")
    return ",".join(label for i, label in enumerate(labels) if value >> i & 1)


def _uuid_text(raw: bytes) -> str:
    """MariaDB UUID: 16 bytes in the order the server prints them (plugin/type_uuid)."""
    if len(raw) != 16:
        raise ValueError(f"UUID value of {len(raw)} bytes, not 16")
    h = raw.hex()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def _inet6_text(raw: bytes) -> str:
    """MariaDB INET6 as the server prints it: RFC 5952 with IPv4-mapped / IPv4-compatible
    addresses in dotted-quad form (plugin/type_inet: inet_ntop's rules)."""
    if len(raw) != 16:
        raise ValueError(f"INET6 value of {len(raw)} bytes, not 16")
    address = ipaddress.IPv6Address(raw)
    mapped = address.ipv4_mapped
    if mapped is not None:
        return f"::ffff:{mapped}"
    if raw[:12] == bytes(12) and raw[12:14] != b"\0\0":  # IPv4-compatible, not :: or ::1-style
        return f"::{ipaddress.IPv4Address(raw[12:])}"
    return address.compressed


def _inet4_text(raw: bytes) -> str:
    if len(raw) != 4:
        raise ValueError(f"INET4 value of {len(raw)} bytes, not 4")
    return str(ipaddress.IPv4Address(raw))


_ADDRESS_TEXT = {"uuid": (_uuid_text, 16), "inet6": (_inet6_text, 16), "inet4": (_inet4_text, 4)}


def _text_or_binary(type_code: int, value, charset: str | int | None) -> tuple[str | None, bytes | None]:
    if value is None:
        return None, None
    if isinstance(value, (bytes, bytearray, memoryview)):
        raw = bytes(value)
        if charset is None or type_code not in CHARACTER_TYPES or charsets.python_codec(charset) is None:
            return None, raw
        try:
            return charsets.decode_text(raw, charset), None
        except UnicodeDecodeError:
            return None, raw
    if isinstance(value, bool):
        return str(int(value)), None
    if isinstance(value, int):
        return str(value), None
    if isinstance(value, Decimal):
        return format(value, "f"), None
    if isinstance(value, float):
        return repr(value), None  # shortest text that reads back as the same double
    if isinstance(value, str):
        return value, None
    if isinstance(value, (dt.datetime, dt.date, dt.time)):
        return value.isoformat(), None
    if isinstance(value, dt.timedelta):
        return _time_text(value), None
    if isinstance(value, (dict, list)):
        return json.dumps(value, ensure_ascii=False, separators=(",", ":")), None
    return str(value), None


def _time_text(delta: dt.timedelta) -> str:
    """TIME values (may be negative and exceed 24h: -838:59:59.999999) as [-]HH:MM:SS[.ffffff]."""
    micros = delta // dt.timedelta(microseconds=1)
    sign = "-" if micros < 0 else ""
    micros = abs(micros)
    seconds, frac = divmod(micros, 1_000_000)
    hours, rest = divmod(seconds, 3600)
    text = f"{sign}{hours:02d}:{rest // 60:02d}:{rest % 60:02d}"
    return f"{text}.{frac:06d}" if frac else text

"""Python value of a decoded column -> ColumnValue {ordinal, name, type_code, text, binary}
(schemas/change_record.avsc). Exactly one of text/binary is set unless the value is SQL NULL."""
from __future__ import annotations

import datetime as dt
import json
from decimal import Decimal

from libs.binlog.constants import ColumnType
from libs.binlog.errors import UnsupportedError
from libs.binlog.values import render_text

# Column types whose bytes are characters when the column has a (non-binary) charset:
# CHAR/VARCHAR are STRING/VAR_STRING/VARCHAR, TEXT is a BLOB type with a charset (field_types.h).
CHARACTER_TYPES = frozenset({
    ColumnType.VARCHAR, ColumnType.VAR_STRING, ColumnType.STRING, ColumnType.TINY_BLOB,
    ColumnType.MEDIUM_BLOB, ColumnType.LONG_BLOB, ColumnType.BLOB, ColumnType.ENUM, ColumnType.SET,
    ColumnType.JSON,
})

# MySQL charset names -> Python codecs. MySQL's latin1 is Windows-1252 (strings/ctype-latin1.cc).
_CODECS = {"utf8mb4": "utf-8", "utf8mb3": "utf-8", "utf8": "utf-8", "latin1": "cp1252", "ascii": "ascii",
           "ucs2": "utf-16-be", "utf16": "utf-16-be", "utf16le": "utf-16-le", "utf32": "utf-32-be",
           "cp1251": "cp1251", "gbk": "gbk", "sjis": "shift_jis", "cp932": "cp932", "big5": "big5",
           "euckr": "euc_kr", "ujis": "euc_jp", "gb2312": "gb2312", "gb18030": "gb18030"}


def python_codec(charset: str | None) -> str | None:
    """Python codec for a MySQL charset or collation name (e.g. 'utf8mb4_bin'); None if unknown/binary."""
    if not charset:
        return None
    name = charset.lower()
    if name in _CODECS:
        return _CODECS[name]
    prefix = name.split("_", 1)[0]
    return _CODECS.get(prefix)


def column_value(ordinal: int, name: str | None, type_code: int, value, charset: str | int | None = None) -> dict:
    """One present column of a row image as a ColumnValue dict.

    int/Decimal/float -> decimal text; str -> text; bytes -> binary, unless the column is a
    character type with a known charset - a name like 'utf8mb4' or a collation id as the
    Table_map's column_charsets carry (then decoded text; undecodable bytes stay binary);
    temporal -> ISO-8601 text; JSON documents (dict/list) -> JSON text; None -> both null.

    >>> column_value(0, "id", 3, 7)["text"]
    '7'
    """
    text, binary = _text_or_binary(type_code, value, charset)
    return {"ordinal": int(ordinal), "name": name, "type_code": int(type_code), "text": text, "binary": binary}


def _text_or_binary(type_code: int, value, charset: str | int | None) -> tuple[str | None, bytes | None]:
    if value is None:
        return None, None
    if isinstance(value, (bytes, bytearray, memoryview)):
        raw = bytes(value)
        if isinstance(charset, int) and type_code in CHARACTER_TYPES:
            try:  # collation id: the codec's own table (libs/binlog/values.py)
                text = render_text(raw, charset)
            except (UnicodeDecodeError, UnsupportedError):
                return None, raw
            return (text, None) if isinstance(text, str) else (None, raw)
        codec = python_codec(charset) if type_code in CHARACTER_TYPES else None
        if codec is None:
            return None, raw
        try:
            return raw.decode(codec), None
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

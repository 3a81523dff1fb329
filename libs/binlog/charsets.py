"""MySQL/MariaDB character sets -> Python codecs: the one table, by charset name or collation id.

A Table_map with row metadata names a column's collation by id (rows_event.h
DEFAULT_CHARSET / COLUMN_CHARSET); a declaration names the charset or collation by name. Both
resolve here. MySQL's `latin1` is Windows-1252 plus the five bytes cp1252 leaves undefined
(0x81 0x8D 0x8F 0x90 0x9D), which MySQL maps to the same code points (strings/ctype-latin1.cc):
`decode_text`/`encode_text` handle that, so every latin1 byte round-trips.
"""
from __future__ import annotations

import codecs

BINARY = "binary"

_CODECS = {
    "utf8mb4": "utf-8", "utf8mb3": "utf-8", "utf8": "utf-8", "latin1": "latin1-mysql", "ascii": "ascii",
    "ucs2": "utf-16-be", "utf16": "utf-16-be", "utf16le": "utf-16-le", "utf32": "utf-32-be",
    "cp1251": "cp1251", "cp1250": "cp1250", "cp1256": "cp1256", "cp1257": "cp1257", "cp850": "cp850",
    "cp852": "cp852", "cp866": "cp866", "koi8r": "koi8-r", "koi8u": "koi8-u", "latin2": "iso8859-2",
    "latin5": "iso8859-9", "latin7": "iso8859-13", "greek": "iso8859-7", "hebrew": "iso8859-8",
    "gbk": "gbk", "sjis": "shift_jis", "cp932": "cp932", "big5": "big5", "euckr": "euc_kr",
    "ujis": "euc_jp", "eucjpms": "euc_jp", "gb2312": "gb2312", "gb18030": "gb18030", "tis620": "tis-620",
}

# Collation id -> charset name (SHOW COLLATION of MySQL 8.0 and MariaDB 10.11: the ids the
# servers write into Table_map metadata). utf8mb4 owns 224-247 and 255+ on MySQL.
_COLLATIONS = {
    5: "latin1", 8: "latin1", 15: "latin1", 31: "latin1", 47: "latin1", 48: "latin1", 49: "latin1",
    94: "latin1", 33: "utf8mb3", 83: "utf8mb3", 192: "utf8mb3", 45: "utf8mb4", 46: "utf8mb4",
    35: "ucs2", 90: "ucs2", 54: "utf16", 55: "utf16", 56: "utf16le", 60: "utf32", 61: "utf32",
    11: "ascii", 65: "ascii", 14: "cp1251", 23: "cp1251", 50: "cp1251", 51: "cp1251", 52: "cp1251",
    28: "gbk", 87: "gbk", 13: "sjis", 88: "sjis", 95: "cp932", 96: "cp932", 1: "big5", 84: "big5",
    19: "euckr", 85: "euckr", 12: "ujis", 91: "ujis", 24: "gb2312", 86: "gb2312", 248: "gb18030",
    63: BINARY,
}


def charset_of_collation(collation: int) -> str | None:
    """Charset name of a collation id; None when unknown."""
    found = _COLLATIONS.get(collation)
    if found is None and (224 <= collation <= 247 or collation >= 255):
        return "utf8mb4"
    return found


def charset_name(charset_or_collation: str | int | None) -> str | None:
    """'utf8mb4' for 'utf8mb4', 'utf8mb4_bin', 'UTF8MB4' or collation id 46; None when unknown."""
    if charset_or_collation is None:
        return None
    if isinstance(charset_or_collation, int):
        return charset_of_collation(charset_or_collation)
    name = charset_or_collation.lower()
    if name in _CODECS or name == BINARY:
        return name
    prefix = name.split("_", 1)[0]
    return prefix if prefix in _CODECS or prefix == BINARY else None


def python_codec(charset_or_collation: str | int | None) -> str | None:
    """Python codec of a charset, collation name or id; None for binary or unknown."""
    name = charset_name(charset_or_collation)
    return _CODECS.get(name) if name else None


_LATIN1_HOLES = frozenset({0x81, 0x8D, 0x8F, 0x90, 0x9D})
_LATIN1_ERRORS = "mysql-latin1-holes"


def _latin1_holes(exc: UnicodeError) -> tuple[str | bytes, int]:
    """cp1252's error handler for MySQL latin1: the five holes are their own code points (and
    back); anything else stays an error. One C-level codec call per value, where a test per
    byte in Python cost ~25 us per value in the replay (bench/README.md, issue #21)."""
    if isinstance(exc, UnicodeDecodeError):
        bad = exc.object[exc.start:exc.end]
        if all(b in _LATIN1_HOLES for b in bad):
            return "".join(map(chr, bad)), exc.end
    elif isinstance(exc, UnicodeEncodeError):
        bad = exc.object[exc.start:exc.end]
        if all(ord(ch) in _LATIN1_HOLES for ch in bad):
            return bytes(map(ord, bad)), exc.end
    raise exc


codecs.register_error(_LATIN1_ERRORS, _latin1_holes)


def decode_text(raw: bytes, charset_or_collation: str | int | None) -> str:
    """Text of `raw` in the charset; ValueError (UnicodeDecodeError) when it is not valid there,
    LookupError when the charset is binary or unknown."""
    codec = python_codec(charset_or_collation)
    if codec is None:
        raise LookupError(f"no text codec for charset {charset_or_collation!r}")
    if codec == "latin1-mysql":
        return raw.decode("cp1252", _LATIN1_ERRORS)
    return raw.decode(codec)


def encode_text(text: str, charset_or_collation: str | int | None) -> bytes:
    """Inverse of decode_text."""
    codec = python_codec(charset_or_collation)
    if codec is None:
        raise LookupError(f"no text codec for charset {charset_or_collation!r}")
    if codec == "latin1-mysql":
        return text.encode("cp1252", _LATIN1_ERRORS)
    return text.encode(codec)

"""Render decoded values exactly as `mariadb-binlog -vv --base64-output=decode-rows` prints them
(MariaDB sql/log_event_client.cc log_event_print_value + Rows_log_event::print_verbose_one_row):

    ###   @3='abc' /* VARSTRING(20) meta=20 nullable=1 is_null=0 */

The returned str carries raw bytes as latin-1 code points (strings are printed byte by byte, in
whatever charset the column has), so `line.encode("latin-1")` is the oracle's exact bytes.
"""
from __future__ import annotations

from typing import Callable

from libs.binlog.column_meta import string_max_length
from libs.binlog.constants import ColumnType as T

_ESCAPES = {i: f"\\x{i:02x}" for i in range(0x20)}


def quoted(value: bytes) -> str:
    """my_b_write_quoted: bytes > 0x1F as is, control bytes as \\xNN (quote/backslash are not
    escaped: both are > 0x1F, the escape branches in the server code are unreachable)."""
    return "'" + bytes(value).decode("latin-1").translate(_ESCAPES) + "'"


def _bits(value: int, nbits: int) -> str:
    return "b'" + format(value, f"0{nbits}b")[-nbits:] + "'" if nbits else "b''"


def _signed_unsigned(bits: int):
    """my_b_write_sint32_and_uint32: the signed value, plus ' (unsigned)' when negative."""
    mask = (1 << bits) - 1
    half = 1 << (bits - 1)

    def fmt(value: int, meta: int) -> str:
        u = value & mask
        s = u - (1 << bits) if u >= half else u
        return f"{s} ({u})" if s < 0 else str(s)

    return fmt


def _float(value: float, meta: int) -> str:
    return "%-20g" % value


def _double(value: float, meta: int) -> str:
    return "%-.20g" % value


def _decimal(value, meta: int) -> str:
    return format(value, "f")


def _date(value: str, meta: int) -> str:
    return "'" + value.replace("-", ":") + "'"


def _quoted_text(value: str, meta: int) -> str:
    return "'" + value + "'"


def _year(value: int, meta: int) -> str:
    return "%04d" % (value if value else 1900)


def _string(value: bytes, meta: int) -> str:
    return quoted(value)


def _set(value: int, meta: int) -> str:
    # my_b_write_bit walks the stored bytes in memory order; SET is stored little endian
    size = meta & 0xFF
    return "b'" + "".join(format(b, "08b") for b in value.to_bytes(size, "little")) + "'"


def _bit(value: int, meta: int) -> str:
    return _bits(value, (meta >> 8) * 8 + (meta & 0xFF))


def _geometry(value: bytes, meta: int) -> str:
    return quoted(value)


def _json(value, meta: int) -> str:
    # MySQL's print_verbose prints the document's text quoted; its bytes are UTF-8 (the
    # document's strings keep undecodable bytes as surrogate escapes)
    return quoted(str(value).encode("utf-8", "surrogateescape"))


VALUE_FORMATS: dict[int, Callable] = {
    T.TINY: _signed_unsigned(8), T.SHORT: _signed_unsigned(16), T.INT24: _signed_unsigned(24),
    T.LONG: _signed_unsigned(32), T.LONGLONG: _signed_unsigned(64),
    T.FLOAT: _float, T.DOUBLE: _double, T.NEWDECIMAL: _decimal,
    T.DATE: _date, T.NEWDATE: _date, T.YEAR: _year,
    T.TIME: _quoted_text, T.DATETIME: _quoted_text, T.TIME2: _quoted_text, T.DATETIME2: _quoted_text,
    T.TIMESTAMP: lambda v, m: v, T.TIMESTAMP2: lambda v, m: v,
    T.VARCHAR: _string, T.VAR_STRING: _string, T.STRING: _string, T.BLOB: _string,
    T.TINY_BLOB: _string, T.MEDIUM_BLOB: _string, T.LONG_BLOB: _string,
    T.ENUM: lambda v, m: str(v), T.SET: _set, T.BIT: _bit, T.GEOMETRY: _geometry,
    T.JSON: _json,
}

_BLOB_NAMES = {1: "TINYBLOB/TINYTEXT", 2: "BLOB/TEXT", 3: "MEDIUMBLOB/MEDIUMTEXT", 4: "LONGBLOB/LONGTEXT"}

TYPE_NAMES: dict[int, Callable[[int], str]] = {
    T.LONG: lambda m: "INT", T.TINY: lambda m: "TINYINT", T.SHORT: lambda m: "SHORTINT",
    T.INT24: lambda m: "MEDIUMINT", T.LONGLONG: lambda m: "LONGINT",
    T.NEWDECIMAL: lambda m: f"DECIMAL({m >> 8},{m & 0xFF})",
    T.FLOAT: lambda m: "FLOAT", T.DOUBLE: lambda m: "DOUBLE",
    T.BIT: lambda m: f"BIT({(m >> 8) * 8 + (m & 0xFF)})",
    T.TIMESTAMP: lambda m: "TIMESTAMP", T.TIMESTAMP2: lambda m: f"TIMESTAMP({m})",
    T.DATETIME: lambda m: "DATETIME", T.DATETIME2: lambda m: f"DATETIME({m})",
    T.TIME: lambda m: "TIME", T.TIME2: lambda m: f"TIME({m})",
    T.NEWDATE: lambda m: "DATE", T.DATE: lambda m: "DATE", T.YEAR: lambda m: "YEAR",
    T.ENUM: lambda m: "ENUM(1 byte)" if (m & 0xFF) == 1 else "ENUM(2 bytes)",
    T.SET: lambda m: f"SET({m & 0xFF} bytes)",
    T.BLOB: lambda m: _BLOB_NAMES.get(m, ""),
    T.VARCHAR: lambda m: f"VARSTRING({m})", T.VAR_STRING: lambda m: f"VARSTRING({m})",
    T.STRING: lambda m: f"STRING({string_max_length(m)})",
    T.GEOMETRY: lambda m: "GEOMETRY", T.JSON: lambda m: "JSON",
}


def format_value_vv(value, column_type: int, meta: int) -> str:
    """The value part after `@N=` (`NULL` for None)."""
    if value is None:
        return "NULL"
    return VALUE_FORMATS[column_type](value, meta)


def format_column_vv(ordinal: int, value, column_type: int, meta: int, nullable: bool) -> str:
    """One whole `###   @N=... /* TYPE meta=M nullable=B is_null=B */` line (no newline)."""
    name = TYPE_NAMES[column_type](meta)
    return (f"###   @{ordinal + 1}={format_value_vv(value, column_type, meta)} /* {name} "
            f"meta={meta} nullable={int(nullable)} is_null={int(value is None)} */")

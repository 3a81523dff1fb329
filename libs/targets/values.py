"""Typed Python values for target columns: from binlog ColumnValue text/binary, from DDL
literals, and the implicit default of a NOT NULL column without DEFAULT.

Python value per family (libs/targets/types.py is the mapping; Spark gets these through Arrow):
  int, year, bit -> int (bit/int wider than the Spark type: Decimal)   decimal -> Decimal
  float, double -> float (FLOAT rounded to single precision)            date -> datetime.date
  datetime -> naive datetime.datetime, the wall-clock value (TIMESTAMP_NTZ)
  timestamp -> naive datetime.datetime in UTC (the instant; Spark TIMESTAMP)
  decimal_text, string, enum, set, json, time, uuid, inet4, inet6 -> str
  binary, geometry -> bytes

ColumnValue text is canonical (schemas/change_record.avsc): integers/DECIMAL in decimal,
temporal ISO-8601, TIMESTAMP as epoch seconds with fraction, JSON as JSON text, ENUM/SET labels
and charset-decoded strings where the Table_map or the declaration knows them
(libs/targets/decoding.py).

Zero and partial dates ('0000-00-00', '2024-05-00', a TIMESTAMP of 0) have no Python or Spark
representation: Column.zero_dates says whether they read as NULL (the default, as Debezium and
Flink CDC do; such columns are nullable in Delta) or stop the batch.
"""

from __future__ import annotations

import datetime as dt
import struct
from decimal import Decimal, InvalidOperation
from typing import Any

from libs.binlog import charsets
from libs.settings.errors import quoted
from libs.targets.model import CURRENT_TIMESTAMP_DEFAULT, LITERAL_DEFAULT, ZERO_DATES_TO_NULL, Column

EPOCH = dt.datetime(1970, 1, 1)


class ValueConversionError(ValueError):
    """A value cannot be converted to its column's type (message names the column)."""


def _zero_date(column: Column, text: str) -> None:
    if column.zero_dates == ZERO_DATES_TO_NULL:
        return None
    raise ValueError(f"zero or partial date {text!r} (zero_dates: fail)")


def _parse_date(column: Column, text: str) -> dt.date | None:
    text = text.strip()
    year, month, day = (int(part) for part in text[:10].split("-"))
    if year == 0 or month == 0 or day == 0:
        return _zero_date(column, text)
    return dt.date(year, month, day)


def _parse_datetime(column: Column, text: str) -> dt.datetime | None:
    """DATETIME text 'YYYY-MM-DD[ T]HH:MM:SS[.ffffff]' (or a DDL literal) as its wall-clock value."""
    text = text.strip()
    day = _parse_date(column, text)
    if day is None:
        return None
    parsed = dt.datetime.fromisoformat(day.isoformat() + text[10:].replace("T", " ", 1))
    return parsed.astimezone(dt.timezone.utc).replace(tzinfo=None) if parsed.tzinfo is not None else parsed


def _parse_timestamp(column: Column, text: str) -> dt.datetime | None:
    """TIMESTAMP: epoch seconds with fraction (binlog), 0 being the zero timestamp; or a DDL
    literal, read as UTC (SHOW CREATE TABLE prints it in the session zone: run it in UTC)."""
    text = text.strip()
    if not text[:1].isdigit() or "-" in text:
        return _parse_datetime(column, text)
    seconds = Decimal(text)
    if seconds == 0:  # '0000-00-00 00:00:00': a TIMESTAMP cannot hold the epoch itself
        return _zero_date(column, text)
    whole = int(seconds.to_integral_value(rounding="ROUND_FLOOR"))
    micros = int(((seconds - whole) * 1_000_000).to_integral_value())
    return EPOCH + dt.timedelta(seconds=whole, microseconds=micros)


def _single(value: float) -> float:
    return struct.unpack("<f", struct.pack("<f", value))[0]


def _wide_int(column: Column, value: int) -> Any:
    return Decimal(value) if column.spark_type.startswith("decimal") else value


def _integer(text: str) -> int:
    """An integer's text; a DDL default may also write '1.0' or '1e3' (then through Decimal,
    which reads every text int() reads as the same number)."""
    try:
        return int(text)
    except ValueError:
        return int(Decimal(text))


_FROM_TEXT = {
    "int": lambda c, t: _wide_int(c, _integer(t)),
    "year": lambda c, t: int(t),
    "bit": lambda c, t: _wide_int(c, int(t)),
    "decimal": lambda c, t: Decimal(t),
    # A FLOAT column stores single precision (so does its Delta FloatType): a DDL DEFAULT 0.1
    # must equal the 0.1f a row image carries, in replay and in Delta.
    "float": lambda c, t: _single(float(t)),
    "double": lambda c, t: float(t),
    "date": _parse_date,
    "datetime": _parse_datetime,
    "timestamp": _parse_timestamp,
    "binary": lambda c, t: t.encode("utf-8"),
    "geometry": lambda c, t: t.encode("utf-8"),
}


def from_text(column: Column, text: str) -> Any:
    """Convert canonical text (binlog text or a DDL literal) to the column's Python value."""
    convert = _FROM_TEXT.get(column.family)
    if convert is None:
        return text  # string, enum, set, json, time, uuid, inet4, inet6, decimal_text
    try:
        return convert(column, text)
    except (ValueError, InvalidOperation, ArithmeticError) as exc:
        raise ValueConversionError(f"column {column.name!r} ({column.mysql_type}): cannot read "
                                   f"{quoted(text)}: {exc}") from None


def from_binary(column: Column, data: bytes) -> Any:
    """Convert ColumnValue.binary: BLOB/BINARY/GEOMETRY bytes, BIT, or a string whose charset the
    change record did not know (decoded here in the declared charset; bytes that are not valid
    there are an error, never replaced by made-up characters)."""
    family = column.family
    if family in ("binary", "geometry"):
        return bytes(data).ljust(column.fixed_width, b"\0")
    if family == "bit":
        return _wide_int(column, int.from_bytes(data, "big"))
    try:
        return from_text(column, charsets.decode_text(bytes(data), column.charset or "utf8mb4"))
    except (UnicodeDecodeError, LookupError) as exc:
        raise ValueConversionError(f"column {column.name!r} ({column.mysql_type}): bytes "
                                   f"{bytes(data)[:32].hex()} are not {column.charset or 'utf8mb4'} text: "
                                   f"{exc}") from None


def from_column_value(column: Column, text: str | None, binary: bytes | None) -> Any:
    """Python value of one present column of a row image (SQL NULL when both are None)."""
    if text is not None:
        return from_text(column, text)
    if binary is not None:
        return from_binary(column, binary)
    return None


def fill_value(column: Column, now: dt.datetime) -> Any:
    """What the server stores in a column no value is given for (Field::set_default()): the
    declared DEFAULT, `now` for DEFAULT CURRENT_TIMESTAMP, else the implicit default. An insert
    that omits the column (WL#5092 R1.1) and ALTER TABLE ... ADD COLUMN both fill it so."""
    if column.default_kind == LITERAL_DEFAULT:
        return column.default
    if column.default_kind == CURRENT_TIMESTAMP_DEFAULT:
        if column.family == "date":
            return now.date()
        unit = 10 ** (6 - column.fsp)  # NOW() in the column's fractional digits (DATETIME: whole seconds)
        return now.replace(microsecond=now.microsecond // unit * unit)
    return implicit_default(column)


def implicit_default(column: Column) -> Any:
    """The value a replica stores in an absent NOT NULL column that has no DEFAULT.

    rpl_record.cc prepare_record(): the default_values record holds the type's zero value
    (0, '', zero date) and Field::set_default() copies it, with warning ER_NO_DEFAULT_FOR_FIELD
    (1364) except for ENUM, whose implicit default is its first member.
    """
    family = column.family
    if column.nullable:
        return None
    if family in ("int", "bit"):
        return _wide_int(column, 0)
    if family == "year":
        return 0
    if family == "decimal":
        return Decimal(0)
    if family == "decimal_text":
        return "0"
    if family in ("float", "double"):
        return 0.0
    if family in ("binary", "geometry"):
        return b""
    if family in ("date", "datetime", "timestamp"):
        return from_text(column, "0000-00-00 00:00:00")
    if family == "time":
        return "00:00:00" + ("." + "0" * column.fsp if column.fsp else "")
    if family == "enum":
        return column.enum_values[0] if column.enum_values else ""
    if family == "uuid":
        return "00000000-0000-0000-0000-000000000000"
    if family == "inet6":
        return "::"
    if family == "inet4":
        return "0.0.0.0"
    return ""  # string, set, json

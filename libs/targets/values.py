"""Typed Python values for target columns: from binlog ColumnValue text/binary, from DDL
literals, and the implicit default of a NOT NULL column without DEFAULT.

Python value per family (what the Spark apply stage gets and passes to createDataFrame):
  int, bit -> int (bit when > 63 bits wide: Decimal)     decimal -> decimal.Decimal
  decimal_text, string, enum, json, time -> str          float -> float
  binary -> bytes    date -> datetime.date    timestamp -> naive datetime.datetime in UTC

ColumnValue text is canonical (schemas/change_record.avsc): integers/DECIMAL in decimal,
temporal ISO-8601, TIMESTAMP as epoch seconds with fraction, JSON as JSON text.

Zero dates ('0000-00-00', the implicit default of a NOT NULL DATE/DATETIME) have no Python or
Spark representation. Following Debezium's rule: None for a nullable column, the epoch
(1970-01-01 00:00:00) for a NOT NULL column.
"""

from __future__ import annotations

import datetime as dt
import re
import struct
from decimal import Decimal, InvalidOperation
from typing import Any

from libs.targets.model import Column

EPOCH = dt.datetime(1970, 1, 1)
_EPOCH_SECONDS = re.compile(r"^-?\d+(\.\d+)?$")
_ZERO_DATE = re.compile(r"^0000-00-00")


class ValueConversionError(ValueError):
    """A value cannot be converted to its column's type (message names the column)."""


def _zero_date(column: Column) -> Any:
    if column.nullable:
        return None
    return EPOCH.date() if column.family == "date" else EPOCH


def _parse_timestamp(column: Column, text: str) -> dt.datetime | None:
    text = text.strip()
    if _ZERO_DATE.match(text):
        return _zero_date(column)
    if _EPOCH_SECONDS.match(text):  # TIMESTAMP: epoch seconds with fraction
        seconds = Decimal(text)
        whole = int(seconds.to_integral_value(rounding="ROUND_FLOOR"))
        micros = int(((seconds - whole) * 1_000_000).to_integral_value())
        return EPOCH + dt.timedelta(seconds=whole, microseconds=micros)
    parsed = dt.datetime.fromisoformat(text.replace("T", " ", 1))
    if parsed.tzinfo is not None:
        parsed = parsed.astimezone(dt.timezone.utc).replace(tzinfo=None)
    return parsed


def _parse_date(column: Column, text: str) -> dt.date | None:
    text = text.strip()
    if _ZERO_DATE.match(text):
        return _zero_date(column)
    return dt.date.fromisoformat(text[:10])


def _single(value: float) -> float:
    return struct.unpack("<f", struct.pack("<f", value))[0]


def from_text(column: Column, text: str) -> Any:
    """Convert canonical text (binlog text or a DDL literal) to the column's Python value."""
    family = column.family
    try:
        if family == "int":
            return int(Decimal(text))  # tolerate '1.0' style literals in DDL defaults
        if family == "bit":
            value = int(text)
            return Decimal(value) if column.spark_type.startswith("decimal") else value
        if family == "decimal":
            return Decimal(text)
        if family == "float":
            # A FLOAT column stores single precision (so does its Delta FloatType): a DDL
            # DEFAULT 0.1 must equal the 0.1f a row image carries, in replay and in Delta.
            return _single(float(text)) if column.spark_type == "float" else float(text)
        if family == "date":
            return _parse_date(column, text)
        if family == "timestamp":
            return _parse_timestamp(column, text)
        if family == "binary":
            return text.encode("utf-8")
        return text  # string, enum, json, time, decimal_text
    except (ValueError, InvalidOperation, ArithmeticError) as exc:
        raise ValueConversionError(f"column {column.name!r} ({column.mysql_type}): cannot read {text!r}: {exc}") from None


def from_binary(column: Column, data: bytes) -> Any:
    """Convert ColumnValue.binary (BLOB/BINARY/GEOMETRY bytes, strings of unknown charset, BIT)."""
    family = column.family
    if family == "binary":
        return bytes(data)
    if family == "bit":
        value = int.from_bytes(data, "big")
        return Decimal(value) if column.spark_type.startswith("decimal") else value
    # A string of unknown charset: UTF-8 with replacement (lossy, the bytes stay in the change log).
    return from_text(column, bytes(data).decode("utf-8", errors="replace"))


def from_column_value(column: Column, text: str | None, binary: bytes | None) -> Any:
    """Python value of one present column of a row image (SQL NULL when both are None)."""
    if text is not None:
        return from_text(column, text)
    if binary is not None:
        return from_binary(column, binary)
    return None


def implicit_default(column: Column) -> Any:
    """The value a replica stores in an absent NOT NULL column that has no DEFAULT.

    rpl_record.cc prepare_record(): the default_values record holds the type's zero value
    (0, '', zero date) and Field::set_default() copies it, with warning ER_NO_DEFAULT_FOR_FIELD
    (1364) except for ENUM, whose implicit default is its first member.
    """
    family = column.family
    if column.nullable:
        return None
    if family == "int":
        return 0
    if family == "bit":
        return Decimal(0) if column.spark_type.startswith("decimal") else 0
    if family == "decimal":
        return Decimal(0)
    if family == "decimal_text":
        return "0"
    if family == "float":
        return 0.0
    if family == "binary":
        return b""
    if family in ("date", "timestamp"):
        return _zero_date(column)
    if family == "time":
        return "00:00:00"
    if family == "enum":
        return column.enum_values[0] if column.enum_values else ""
    return ""  # string, json

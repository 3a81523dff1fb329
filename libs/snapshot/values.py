"""A server's SELECT of a row -> the ColumnValues the binlog path makes of the same row.

A snapshot row and the same row written through the binlog must give identical Delta values.
So this module writes no text rules of its own: it turns the bytes the server sends for
`select_expression(column)` into the Python value the binlog decoder produces for that column
(libs/binlog/values.py) and hands it, with the real type the Table_map logs, to the function the
binlog path uses, libs/stream/assembler/values.py `column_value` (as change_records.py does).

| DATA_TYPE                  | Table_map type   | SELECT expression   | value given to column_value         |
|----------------------------|------------------|---------------------|-------------------------------------|
| tinyint smallint mediumint | TINY SHORT INT24 | `c`                 | int ('00042' of ZEROFILL: 42)       |
| int bigint                 | LONG LONGLONG    | `c`                 | int                                 |
| decimal                    | NEWDECIMAL       | `c`                 | Decimal, `scale` digits             |
| float                      | FLOAT            | CAST(`c` AS DOUBLE) | float, rounded to single [1]        |
| double                     | DOUBLE           | `c`                 | float [2]                           |
| bit                        | BIT              | `c`                 | int of the big-endian bytes [3]     |
| year                       | YEAR             | `c`                 | int, '0000' = 0                     |
| date                       | DATE             | `c`                 | str 'YYYY-MM-DD' [4]                |
| time                       | TIME2            | `c`                 | str '[-]HHH:MM:SS[.fsp]'            |
| datetime                   | DATETIME2        | `c`                 | str 'YYYY-MM-DD HH:MM:SS[.fsp]' [4] |
| timestamp                  | TIMESTAMP2       | UNIX_TIMESTAMP(`c`) | str 'SECONDS[.fsp]', zero '0' [5]   |
| char / varchar             | STRING / VARCHAR | `c`                 | bytes + the column charset [6]      |
| binary / varbinary         | STRING / VARCHAR | `c`                 | bytes; BINARY(n) unpadded [7]       |
| *text, *blob               | BLOB             | `c`                 | bytes (+ charset for text) [6]      |
| enum / set                 | ENUM / SET       | `c`                 | str: the label(s) [8]               |
| json (MySQL only)          | JSON             | `c`                 | str: JSON text [9]                  |
| uuid / inet6 / inet4       | STRING           | `c`                 | the stored 16 / 16 / 4 bytes [10]   |
| geometry, point, ...       | GEOMETRY         | `c`                 | bytes: SRID + WKB                   |

[1] Field_float::val_str prints 6 significant digits ('3.40282e38' is not the stored float);
    CAST AS DOUBLE widens the stored single exactly and prints the shortest text that reads
    back as that double (measured: 2,987 random floats on MariaDB 10.11 all exact).
[2] Field_double::val_str prints the shortest round-trip text (my_gcvt; measured as in [1]).
[3] The text protocol sends BIT(n) as its (n+7)/8 bytes, big endian: the bytes the row image
    holds (Field_bit::pack), which the decoder reads as one unsigned int.
[4] Zero and partial dates ('0000-00-00', '2024-05-00 10:00:00') travel as their text on both
    paths (libs/binlog/temporal.py keeps them as text); typed_value then gives NULL
    (zero_dates: to_null) or stops the batch (fail), the same for both.
[5] UNIX_TIMESTAMP of a TIMESTAMP column returns the stored seconds with the column's fsp digits
    and no time-zone round trip (sql/item_timefunc.cc Item_func_unix_timestamp reads
    Field_timestamp::get_timestamp), 0 for the zero timestamp: the decoder's TIMESTAMP text.
    The session zone is UTC anyway (SESSION_SETUP), which has no DST gap or overlap.
[6] `character_set_results = binary` makes the server send the stored bytes unconverted
    (MariaDB docs, character_set_results: "binary" / NULL = no conversion); column_value decodes
    them in the column's charset with libs/binlog/charsets.py, as the binlog path does (latin1 as
    cp1252 plus its five holes, utf16 big endian, ...; bytes invalid there stay binary). CHAR's
    trailing spaces: the row image drops them (Field_string::pack), so does SELECT unless
    PAD_CHAR_TO_FULL_LENGTH is set, which SESSION_SETUP clears.
[7] Field_string::pack also drops the 0x00 pad of BINARY(n) (its charset's pad char); SELECT
    shows all n bytes. Dropped here too, so the ColumnValue holds the same bytes; typed_value
    pads both back to n (Column.fixed_width).
[8] The row image holds the 1-based index (SET: bitmask) and the labels come from the Table_map
    or the declaration; SELECT sends the server's own label text in the column charset, SET
    members in declaration order joined by ',', exactly what column_value makes of index and
    labels ('' for the ENUM error value 0). No COLUMN_TYPE label parser is needed.
[9] The decoder prints MySQL binary JSON with MySQL's own printer (libs/binlog/json_binary.py);
    no MySQL server is in this project's tests, so this row is not measured.
[10] SELECT prints the address; it is parsed back to the bytes the row image holds, so the text
    comes from the binlog path's own printer (values.py _uuid_text / _inet6_text / _inet4_text).

type_code: the real type the Table_map logs (tablemap.py reports ENUM/SET, not the STRING they
travel as). TIME/DATETIME/TIMESTAMP are assumed to be in the MySQL 5.6 formats (MariaDB's
default since 10.3, mysql56_temporal_format): a table still in MariaDB 5.3's formats logs
TIME/DATETIME/TIMESTAMP (11/12/7) instead, which information_schema cannot tell. Only the
type_code would differ; typed_value does not read it.

Pure: no Spark, no client library (the connection's raw-bytes arguments are
libs/snapshot/pymysql_wire.py RAW_BYTES).
"""
from __future__ import annotations

import ipaddress
import struct
from dataclasses import dataclass
from decimal import Decimal
from typing import Callable, NamedTuple

from libs.stream.assembler.values import column_value as _column_value
from libs.binlog import charsets
from libs.binlog.constants import ColumnType as T
from libs.contracts.sql_names import quote_identifier


@dataclass(frozen=True)
class SourceColumn:
    """One column of a source table, as information_schema.COLUMNS describes it."""

    ordinal: int
    """0-based position (ORDINAL_POSITION - 1): the row image's ordinal."""
    name: str
    data_type: str
    """DATA_TYPE, lower case: 'int', 'varchar', 'enum', 'inet6', ..."""
    column_type: str
    """COLUMN_TYPE: 'int(10) unsigned', "enum('a','b')", 'datetime(6)'."""
    charset: str | None
    """CHARACTER_SET_NAME; None for non-character columns."""


COLUMNS_QUERY = (
    "SELECT ORDINAL_POSITION, COLUMN_NAME, DATA_TYPE, COLUMN_TYPE, CHARACTER_SET_NAME"
    " FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = %s AND TABLE_NAME = %s"
    " ORDER BY ORDINAL_POSITION")

SESSION_SETUP: tuple[str, ...] = (
    "SET SESSION time_zone = '+00:00'",  # [5]
    "SET SESSION character_set_results = binary",  # [6]: the column's own bytes
    "SET SESSION sql_mode = ''",  # [6]: no PAD_CHAR_TO_FULL_LENGTH
)


def _text(raw) -> str:
    return raw.decode("utf-8") if isinstance(raw, (bytes, bytearray)) else str(raw)


def source_column(row: tuple) -> SourceColumn:
    """One row of COLUMNS_QUERY (values as bytes, as pymysql_wire.RAW_BYTES delivers them, or str)."""
    position, name, data_type, column_type, charset = row
    return SourceColumn(ordinal=int(_text(position)) - 1, name=_text(name),
                        data_type=_text(data_type).lower(), column_type=_text(column_type),
                        charset=None if charset is None else _text(charset).lower())


# ---- raw bytes -> the decoder's Python value --------------------------------------------------

def _int(column: SourceColumn, raw: bytes) -> int:
    return int(raw)


def _decimal(column: SourceColumn, raw: bytes) -> Decimal:
    return Decimal(raw.decode("ascii"))


def _single(column: SourceColumn, raw: bytes) -> float:
    return struct.unpack("<f", struct.pack("<f", float(raw)))[0]


def _double(column: SourceColumn, raw: bytes) -> float:
    return float(raw)


def _bit(column: SourceColumn, raw: bytes) -> int:
    return int.from_bytes(raw, "big")


def _ascii(column: SourceColumn, raw: bytes) -> str:
    return raw.decode("ascii")


def _bytes(column: SourceColumn, raw: bytes) -> bytes:
    return raw


def _unpadded(column: SourceColumn, raw: bytes) -> bytes:
    return raw.rstrip(b"\0")  # [7]


def _labels(column: SourceColumn, raw: bytes) -> str:
    return charsets.decode_text(raw, column.charset)  # [8]


def _json(column: SourceColumn, raw: bytes) -> str:
    return raw.decode("utf-8")


def _uuid(column: SourceColumn, raw: bytes) -> bytes:
    return bytes.fromhex(raw.decode("ascii").replace("-", ""))


def _inet6(column: SourceColumn, raw: bytes) -> bytes:
    return ipaddress.IPv6Address(raw.decode("ascii")).packed


def _inet4(column: SourceColumn, raw: bytes) -> bytes:
    return ipaddress.IPv4Address(raw.decode("ascii")).packed


class _Rule(NamedTuple):
    type_code: int
    select: str  # '{}' stands for the quoted column name
    value: Callable[[SourceColumn, bytes], object]


_AS_IS = "{}"
_GEOMETRY = _Rule(T.GEOMETRY, _AS_IS, _bytes)
_BLOB = _Rule(T.BLOB, _AS_IS, _bytes)  # every *TEXT / *BLOB is logged as BLOB (its meta: length bytes)

RULES: dict[str, _Rule] = {
    "tinyint": _Rule(T.TINY, _AS_IS, _int),
    "smallint": _Rule(T.SHORT, _AS_IS, _int),
    "mediumint": _Rule(T.INT24, _AS_IS, _int),
    "int": _Rule(T.LONG, _AS_IS, _int),
    "bigint": _Rule(T.LONGLONG, _AS_IS, _int),
    "decimal": _Rule(T.NEWDECIMAL, _AS_IS, _decimal),
    "float": _Rule(T.FLOAT, "CAST({} AS DOUBLE)", _single),
    "double": _Rule(T.DOUBLE, _AS_IS, _double),
    "bit": _Rule(T.BIT, _AS_IS, _bit),
    "year": _Rule(T.YEAR, _AS_IS, _int),
    "date": _Rule(T.DATE, _AS_IS, _ascii),
    "time": _Rule(T.TIME2, _AS_IS, _ascii),
    "datetime": _Rule(T.DATETIME2, _AS_IS, _ascii),
    "timestamp": _Rule(T.TIMESTAMP2, "UNIX_TIMESTAMP({})", _ascii),
    "char": _Rule(T.STRING, _AS_IS, _bytes),
    "varchar": _Rule(T.VARCHAR, _AS_IS, _bytes),
    "binary": _Rule(T.STRING, _AS_IS, _unpadded),
    "varbinary": _Rule(T.VARCHAR, _AS_IS, _bytes),
    **dict.fromkeys(("tinytext", "text", "mediumtext", "longtext",
                     "tinyblob", "blob", "mediumblob", "longblob"), _BLOB),
    "enum": _Rule(T.ENUM, _AS_IS, _labels),
    "set": _Rule(T.SET, _AS_IS, _labels),
    "json": _Rule(T.JSON, _AS_IS, _json),
    "uuid": _Rule(T.STRING, _AS_IS, _uuid),
    "inet6": _Rule(T.STRING, _AS_IS, _inet6),
    "inet4": _Rule(T.STRING, _AS_IS, _inet4),
    **dict.fromkeys(("geometry", "point", "linestring", "polygon", "multipoint", "multilinestring",
                     "multipolygon", "geometrycollection", "geomcollection"), _GEOMETRY),
}
"""DATA_TYPE -> (Table_map type code, SELECT expression, server bytes -> decoder's value)."""

# The families values.column_value prints from bytes (a BINARY(16)/(4) in the row image).
_ADDRESS_FAMILIES = frozenset({"uuid", "inet6", "inet4"})


def _rule(column: SourceColumn) -> _Rule:
    rule = RULES.get(column.data_type)
    if rule is None:
        raise ValueError(f"column {column.name!r}: type {column.column_type!r} ({column.data_type}) has no "
                         "snapshot conversion")
    return rule


def type_code(column: SourceColumn) -> int:
    """The real type the Table_map logs for the column (the table above)."""
    return _rule(column).type_code


def select_expression(column: SourceColumn) -> str:
    """The SELECT-list expression for the column (see the table above)."""
    return _rule(column).select.format(quote_identifier(column.name))


def column_value(column: SourceColumn, raw: bytes | None) -> dict:
    """The ColumnValue the binlog path makes of this value; `raw`: the bytes the server sent for
    select_expression(column) (None = SQL NULL)."""
    rule = _rule(column)
    value = None if raw is None else rule.value(column, bytes(raw))
    family = column.data_type if column.data_type in _ADDRESS_FAMILIES else None
    return _column_value(column.ordinal, column.name, rule.type_code, value, column.charset, None, family)


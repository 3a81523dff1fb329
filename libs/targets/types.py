"""The one type mapping: MySQL/MariaDB column type -> Delta/Spark type -> how a value is converted.

Every declared column (CREATE TABLE DDL or the YAML `columns:` form) goes through
`column_of`, so the Delta schema, the replay's Python values (values.py), the decode-time
knowledge the binlog lacks (decoding.py) and the change log all follow this table.

| MySQL / MariaDB type             | Delta / Spark type   | value (family)                                   |
|----------------------------------|----------------------|--------------------------------------------------|
| TINYINT, BOOL                    | TINYINT              | int                                              |
| TINYINT UNSIGNED                 | SMALLINT             | int, read unsigned (widened: no value wraps)     |
| SMALLINT / UNSIGNED              | SMALLINT / INT       | int                                              |
| MEDIUMINT / UNSIGNED             | INT / INT            | int                                              |
| INT / UNSIGNED                   | INT / BIGINT         | int                                              |
| BIGINT / UNSIGNED                | BIGINT / DECIMAL(20,0)| int / decimal (18446744073709551615 fits)       |
| DECIMAL(p,s), p <= 38            | DECIMAL(p,s)         | decimal, exact                                   |
| DECIMAL(p,s), 38 < p <= 65       | STRING               | decimal_text: the server's text, never rounded   |
| FLOAT                            | FLOAT                | float, single precision                          |
| DOUBLE, REAL                     | DOUBLE               | double                                           |
| BIT(n), n <= 63 / BIT(64)        | BIGINT / DECIMAL(20,0)| bit: the bits as an unsigned number             |
| YEAR                             | INT                  | year: 1901..2155, 0 for the zero year            |
| DATE                             | DATE                 | date; zero and partial dates per                 |
|                                  |                      | Target.zero_dates                                |
| DATETIME(fsp)                    | TIMESTAMP_NTZ        | datetime: wall-clock, no time zone               |
| TIMESTAMP(fsp)                   | TIMESTAMP            | timestamp: a UTC instant (any reader's zone      |
|                                  |                      | shows it right)                                  |
| TIME(fsp)                        | STRING               | time: '[-]HHH:MM:SS[.fsp digits]' as the server  |
|                                  |                      | prints it                                        |
| CHAR, VARCHAR, *TEXT             | STRING               | string, decoded in the column's charset          |
| ENUM / SET                       | STRING               | enum / set: the member label(s), 'a,b' for a SET |
| JSON (MySQL binary JSON)         | STRING               | json: the server's JSON text                     |
| MariaDB JSON (LONGTEXT CHECK json_valid) | STRING       | string: the stored text, as SELECT shows it      |
| BINARY, VARBINARY, *BLOB,        | BINARY               | binary: the bytes, NUL bytes included; BINARY(n) |
| CHARACTER SET binary             |                      | padded to n with 0x00 as the server shows it     |
| UUID (MariaDB)                   | STRING               | uuid: 'xxxxxxxx-xxxx-...' as the server prints it|
| INET6 / INET4 (MariaDB)          | STRING               | inet6 / inet4: the server's address text         |
| GEOMETRY, POINT, ... (spatial)   | BINARY               | geometry: 4-byte SRID + WKB, as HEX(col) shows   |

Not mapped (a declaration using them is refused by name): VECTOR (MariaDB 11.7+/MySQL 9), which
no server this project tests against writes.

A NOT NULL column without DEFAULT takes its type's implicit default on an insert that omits
it (values.implicit_default; rpl_record.cc prepare_record).
"""

from __future__ import annotations

from typing import NamedTuple

from sqlglot import exp

from libs.targets.model import Column

T = exp.DataType.Type

DEFAULT_CHARSET = "utf8mb4"
"""Charset of a character column whose declaration names none (neither on the column nor as the
table's DEFAULT CHARSET). SHOW CREATE TABLE always names it; hand-written DDL may not."""


class TypeRow(NamedTuple):
    spark_type: str | None
    """Spark SQL type; None: computed from the type's parameters (BIT, DECIMAL)."""
    family: str
    """How a value converts (values.py); also what decode-time hints apply (decoding.py)."""
    unsigned: bool = False
    """Read the binlog's integer as unsigned (the binlog only says so with row metadata)."""
    character: bool = False
    """Holds characters in a charset (else bytes or numbers)."""


TYPE_TABLE: dict[exp.DataType.Type, TypeRow] = {
    T.BOOLEAN: TypeRow("tinyint", "int"),
    T.TINYINT: TypeRow("tinyint", "int"),
    T.UTINYINT: TypeRow("smallint", "int", unsigned=True),
    T.SMALLINT: TypeRow("smallint", "int"),
    T.USMALLINT: TypeRow("int", "int", unsigned=True),
    T.MEDIUMINT: TypeRow("int", "int"),
    T.UMEDIUMINT: TypeRow("int", "int", unsigned=True),
    T.INT: TypeRow("int", "int"),
    T.UINT: TypeRow("bigint", "int", unsigned=True),
    T.BIGINT: TypeRow("bigint", "int"),
    T.UBIGINT: TypeRow("decimal(20,0)", "decimal", unsigned=True),
    T.YEAR: TypeRow("int", "year"),
    T.BIT: TypeRow(None, "bit"),
    T.DECIMAL: TypeRow(None, "decimal"),
    T.UDECIMAL: TypeRow(None, "decimal", unsigned=True),
    T.FLOAT: TypeRow("float", "float"),
    T.DOUBLE: TypeRow("double", "double"),
    T.UDOUBLE: TypeRow("double", "double", unsigned=True),
    T.DATE: TypeRow("date", "date"),
    T.DATETIME: TypeRow("timestamp_ntz", "datetime"),
    T.TIMESTAMP: TypeRow("timestamp", "timestamp"),
    T.TIMESTAMPTZ: TypeRow("timestamp", "timestamp"),
    T.TIMESTAMPLTZ: TypeRow("timestamp", "timestamp"),
    T.TIME: TypeRow("string", "time"),
    T.CHAR: TypeRow("string", "string", character=True),
    T.NCHAR: TypeRow("string", "string", character=True),
    T.VARCHAR: TypeRow("string", "string", character=True),
    T.NVARCHAR: TypeRow("string", "string", character=True),
    T.TINYTEXT: TypeRow("string", "string", character=True),
    T.TEXT: TypeRow("string", "string", character=True),
    T.MEDIUMTEXT: TypeRow("string", "string", character=True),
    T.LONGTEXT: TypeRow("string", "string", character=True),
    T.ENUM: TypeRow("string", "enum", character=True),
    T.SET: TypeRow("string", "set", character=True),
    T.JSON: TypeRow("string", "json"),
    T.UUID: TypeRow("string", "uuid"),
    T.IPV4: TypeRow("string", "inet4"),
    T.IPV6: TypeRow("string", "inet6"),
    T.BINARY: TypeRow("binary", "binary"),
    T.VARBINARY: TypeRow("binary", "binary"),
    T.TINYBLOB: TypeRow("binary", "binary"),
    T.BLOB: TypeRow("binary", "binary"),
    T.MEDIUMBLOB: TypeRow("binary", "binary"),
    T.LONGBLOB: TypeRow("binary", "binary"),
    T.GEOMETRY: TypeRow("binary", "geometry"),
    T.POINT: TypeRow("binary", "geometry"),
    T.LINESTRING: TypeRow("binary", "geometry"),
    T.MULTILINESTRING: TypeRow("binary", "geometry"),
    T.POLYGON: TypeRow("binary", "geometry"),
    T.MULTIPOLYGON: TypeRow("binary", "geometry"),
}

SPARK_MAX_DECIMAL_PRECISION = 38
_FSP_TYPES = frozenset({T.DATETIME, T.TIMESTAMP, T.TIMESTAMPTZ, T.TIMESTAMPLTZ, T.TIME})


def _int_params(dtype: exp.DataType) -> list[int]:
    values = []
    for param in dtype.expressions:
        node = param.this if isinstance(param, exp.DataTypeParam) else param
        if isinstance(node, exp.Literal) and not node.is_string:
            values.append(int(node.this))
    return values


def spark_type_of(dtype: exp.DataType) -> tuple[str, str]:
    """(spark type string, value family) of a parsed MySQL column type; KeyError if unknown."""
    row = TYPE_TABLE[dtype.this]
    if row.spark_type is not None:
        return row.spark_type, row.family
    params = _int_params(dtype)
    if row.family == "bit":
        width = params[0] if params else 1
        return ("bigint" if width <= 63 else "decimal(20,0)"), "bit"
    precision = params[0] if params else 10  # MySQL: DECIMAL = DECIMAL(10,0)
    scale = params[1] if len(params) > 1 else 0
    if precision > SPARK_MAX_DECIMAL_PRECISION:
        return "string", "decimal_text"
    return f"decimal({precision},{scale})", "decimal"


def enum_values_of(dtype: exp.DataType) -> tuple[str, ...]:
    """Member labels of ENUM/SET, in declaration order (the first is an ENUM's implicit default)."""
    return tuple(e.this for e in dtype.expressions if isinstance(e, exp.Literal) and e.is_string)


def fsp_of(dtype: exp.DataType) -> int:
    """Fractional-second digits of TIME/DATETIME/TIMESTAMP(fsp); 0 for every other type."""
    params = _int_params(dtype) if dtype.this in _FSP_TYPES else []
    return params[0] if params else 0


def column_of(name: str, dtype: exp.DataType, mysql_type: str, *, nullable: bool = True,
              charset: str | None = None) -> Column:
    """The Column of a declared type (KeyError for a type the table above does not map).

    `charset`: the column's (or its table's) charset name; 'binary' makes a character type hold
    bytes (CHAR(n) CHARACTER SET binary is a BINARY(n)). Ignored for non-character types."""
    spark_type, family = spark_type_of(dtype)
    row = TYPE_TABLE[dtype.this]
    column_charset, fixed = None, dtype.this == T.BINARY
    if row.character:
        column_charset = (charset or DEFAULT_CHARSET).lower()
        if column_charset == "binary" and family == "string":
            spark_type, family, column_charset = "binary", "binary", None
            fixed = dtype.this in (T.CHAR, T.NCHAR)
    width = ((_int_params(dtype) or [1])[0]) if fixed else 0
    return Column(name=name, mysql_type=mysql_type, spark_type=spark_type, family=family, nullable=nullable,
                  enum_values=enum_values_of(dtype), unsigned=row.unsigned, charset=column_charset,
                  fsp=fsp_of(dtype), fixed_width=width)

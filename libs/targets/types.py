"""MySQL/MariaDB column types -> Spark SQL type strings and value families, as one table.

The *family* tells `values.py` how a binlog text/binary value and a DDL literal become a
Python value, and which implicit default a replica uses for a NOT NULL column without DEFAULT
(rpl_record.cc prepare_record -> Field::set_default on the default_values record: 0, '', zero date).

Choices where Spark has no exact type (documented for the Spark apply stage):
- unsigned integers widen to the next signed type; BIGINT UNSIGNED -> decimal(20,0);
- DECIMAL(p,s) with p > 38 (MySQL allows 65) -> string (canonical decimal text);
- BIT(n) -> bigint for n <= 63, BIT(64) -> decimal(20,0);
- TIME -> string ('HH:MM:SS[.ffffff]', may be negative or > 24h in MySQL);
- DATETIME and TIMESTAMP -> timestamp, as naive UTC datetimes (session time zone must be UTC);
- JSON (and MariaDB's JSON alias LONGTEXT ... CHECK json_valid) -> string (JSON text);
- geometry types -> binary (the WKB-with-SRID bytes the binlog carries).
"""

from __future__ import annotations

from sqlglot import exp

T = exp.DataType.Type

# sqlglot type -> (spark type, family). None as spark type = computed from the parameters.
TYPE_TABLE: dict[exp.DataType.Type, tuple[str | None, str]] = {
    T.BOOLEAN: ("tinyint", "int"),
    T.TINYINT: ("tinyint", "int"),
    T.UTINYINT: ("smallint", "int"),
    T.SMALLINT: ("smallint", "int"),
    T.USMALLINT: ("int", "int"),
    T.MEDIUMINT: ("int", "int"),
    T.UMEDIUMINT: ("int", "int"),
    T.INT: ("int", "int"),
    T.UINT: ("bigint", "int"),
    T.BIGINT: ("bigint", "int"),
    T.UBIGINT: ("decimal(20,0)", "decimal"),
    T.YEAR: ("int", "int"),
    T.BIT: (None, "bit"),
    T.DECIMAL: (None, "decimal"),
    T.UDECIMAL: (None, "decimal"),
    T.FLOAT: ("float", "float"),
    T.DOUBLE: ("double", "float"),
    T.UDOUBLE: ("double", "float"),
    T.DATE: ("date", "date"),
    T.DATETIME: ("timestamp", "timestamp"),
    T.TIMESTAMP: ("timestamp", "timestamp"),
    T.TIMESTAMPTZ: ("timestamp", "timestamp"),
    T.TIMESTAMPLTZ: ("timestamp", "timestamp"),
    T.TIME: ("string", "time"),
    T.CHAR: ("string", "string"),
    T.NCHAR: ("string", "string"),
    T.VARCHAR: ("string", "string"),
    T.NVARCHAR: ("string", "string"),
    T.TINYTEXT: ("string", "string"),
    T.TEXT: ("string", "string"),
    T.MEDIUMTEXT: ("string", "string"),
    T.LONGTEXT: ("string", "string"),
    T.ENUM: ("string", "enum"),
    T.SET: ("string", "string"),
    T.JSON: ("string", "json"),
    T.UUID: ("string", "string"),
    T.IPV4: ("string", "string"),
    T.IPV6: ("string", "string"),
    T.BINARY: ("binary", "binary"),
    T.VARBINARY: ("binary", "binary"),
    T.TINYBLOB: ("binary", "binary"),
    T.BLOB: ("binary", "binary"),
    T.MEDIUMBLOB: ("binary", "binary"),
    T.LONGBLOB: ("binary", "binary"),
    T.GEOMETRY: ("binary", "binary"),
    T.POINT: ("binary", "binary"),
    T.LINESTRING: ("binary", "binary"),
    T.MULTILINESTRING: ("binary", "binary"),
    T.POLYGON: ("binary", "binary"),
    T.MULTIPOLYGON: ("binary", "binary"),
}

SPARK_MAX_DECIMAL_PRECISION = 38


def _int_params(dtype: exp.DataType) -> list[int]:
    values = []
    for param in dtype.expressions:
        node = param.this if isinstance(param, exp.DataTypeParam) else param
        if isinstance(node, exp.Literal) and not node.is_string:
            values.append(int(node.this))
    return values


def spark_type_of(dtype: exp.DataType) -> tuple[str, str]:
    """(spark type string, value family) of a parsed MySQL column type; KeyError if unknown."""
    spark, family = TYPE_TABLE[dtype.this]
    if spark is not None:
        return spark, family
    params = _int_params(dtype)
    if family == "bit":
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

"""Spark schemas derived from the Avro schemas in schemas/ (declared once, never written twice).

Avro -> Spark: string->string, bytes->binary, int->int, long->long (timestamp-micros->timestamp),
boolean->boolean, enum->string, array->array, map->map<string,V>, record->struct,
["null", T] -> nullable T.
"""
from __future__ import annotations

from pyspark.sql import types as T

from libs.contracts.avro_schemas import avro_schema

_PRIMITIVES = {"string": T.StringType(), "bytes": T.BinaryType(), "int": T.IntegerType(),
               "long": T.LongType(), "boolean": T.BooleanType(), "double": T.DoubleType(),
               "float": T.FloatType()}


_NAMESPACE = "\0namespace"  # key of `named` holding the enclosing record's namespace


def _spark_type(avro, named: dict) -> tuple[T.DataType, bool]:
    """(Spark type, nullable) of an Avro type; `named` collects record/enum types by name."""
    if isinstance(avro, list):
        non_null = [t for t in avro if t != "null"]
        if len(non_null) != 1:
            raise ValueError(f"only [null, T] unions are supported, got {avro}")
        return _spark_type(non_null[0], named)[0], "null" in avro
    if isinstance(avro, str):
        if avro in _PRIMITIVES:
            return _PRIMITIVES[avro], False
        return named[avro], False
    kind = avro["type"]
    if kind == "record":
        # Avro: a nested named type without its own namespace inherits the enclosing one.
        outer = named.get(_NAMESPACE, "")
        namespace = named[_NAMESPACE] = avro.get("namespace", outer)
        struct = T.StructType([T.StructField(f["name"], *_spark_type(f["type"], named))
                               for f in avro["fields"]])
        named[_NAMESPACE] = outer
        named[avro["name"]] = named[f"{namespace}.{avro['name']}"] = struct
        return struct, False
    if kind == "enum":
        named[avro["name"]] = T.StringType()
        return T.StringType(), False
    if kind == "array":
        return T.ArrayType(_spark_type(avro["items"], named)[0], containsNull=False), False
    if kind == "map":
        values, nullable = _spark_type(avro["values"], named)
        return T.MapType(T.StringType(), values, valueContainsNull=nullable), False
    if kind == "long" and avro.get("logicalType") == "timestamp-micros":
        return T.TimestampType(), False
    if kind in _PRIMITIVES:
        return _PRIMITIVES[kind], False
    raise ValueError(f"unsupported Avro type {avro}")


def spark_schema(name: str) -> T.StructType:
    """StructType of the record schemas/<name>.avsc."""
    return _spark_type(avro_schema(name), {})[0]


def spark_record_schema(name: str, record: str, *,
                        uses: tuple[str, ...] = ("change_record",)) -> T.StructType:
    """StructType of record `record` of schemas/<name>.avsc when the file declares several records
    (lineage.avsc: Lineage, ChangeLogEntry); `uses` = files whose named types it references."""
    named: dict = {}
    for dependency in uses:
        _spark_type(avro_schema(dependency), named)
    declared = avro_schema(name)
    for item in declared if isinstance(declared, list) else [declared]:
        struct = _spark_type(item, named)[0]
        if item.get("name") == record:
            return struct
    raise KeyError(f"schemas/{name}.avsc declares no record {record!r}")


CHANGE_RECORD = "change_record"
QUARANTINE_RECORD = "quarantine_record"
ASSEMBLED_RECORD = "assembled_record"
ASSEMBLER_STATE = "assembler_state"
SOURCE_SCHEMA_RECORD = "source_schema_record"
SCHEMA_VERSION_RECORD = "schema_version_record"

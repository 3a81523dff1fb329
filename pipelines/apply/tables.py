"""Delta tables of the apply stage: names, schemas, creation, idempotent-write helpers.

Tables under JobConfig.delta_root (path-based Delta tables), or in JobConfig.catalog_schema by the
same names (libs/tables/table_location.py; pipelines/delta/delta_tables.py reads and writes either):
  <delta_table>     one per target (Target.delta_table, default `<db>__<table>`): the declared
                    columns (types from libs/targets/types.py, NOT NULL, and Delta column
                    DEFAULTs = the replica-side defaults, table feature allowColumnDefaults),
                    plus `_row_id STRING NOT NULL` and `_lineage` (schemas/lineage.avsc Lineage),
                    and with `delete: soft` `_deleted` etc. (schemas/soft_delete.avsc).
  _cdc_change_log   append-only, schemas/lineage.avsc ChangeLogEntry + `batch_id BIGINT`.
  _cdc_progress     append-only, schemas/progress_record.avsc, one row per (source, batch).
  _cdc_quarantine   append-only, schemas/quarantine_record.avsc.

The system tables' names and app ids: libs/tables/system_tables.py. Idempotent writes, per
(app id, batch_id): pipelines/delta/delta_txn.py (targets) and pipelines/delta/marked_appends.py (appends).
"""

from __future__ import annotations

import datetime as dt
import re
from decimal import Decimal
from typing import Any

import pyarrow as pa
from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from libs.contracts.arrow_rows import rows as arrow_rows
from libs.reads.lineage_sql import quote_identifier
from libs.replay import LINEAGE_COLUMN, ROW_ID_COLUMN
from libs.replay.lineage import to_utc_naive
from libs.runtime.stops import JobStopped
from libs.tables.table_location import TableLocation, TableRoot
from libs.targets.model import CURRENT_TIMESTAMP_DEFAULT, LITERAL_DEFAULT, Column, Target
from pipelines.delta.delta_tables import append, located, read
from pipelines.delta.delta_txn import forget_last_commit_version, is_delta_table, last_commit_version
from pipelines.apply.write_features import DELETION_VECTORS
from pipelines.job.schemas import spark_record_schema, spark_schema
from libs.apply.modes.select import mode_of
from pipelines.apply.modes.columns import mode_mismatches

BATCH_ID_COLUMN = "batch_id"
TABLE_PROPERTIES = {
    "delta.feature.allowColumnDefaults": "supported",
    # MySQL column names may hold spaces, commas, '=' ...: Delta accepts them only with column mapping.
    "delta.columnMapping.mode": "name",
}

# The Spark types libs/targets/types.py maps MySQL types to, by Spark's own name for each.
_SIMPLE_TYPES = {t.simpleString(): t for t in (
    T.ByteType(), T.ShortType(), T.IntegerType(), T.LongType(), T.FloatType(), T.DoubleType(), T.DateType(),
    T.TimestampType(), T.TimestampNTZType(), T.StringType(), T.BinaryType(), T.BooleanType())}
_DECIMAL = re.compile(r"^decimal\((\d+),\s*(\d+)\)$")


def lineage_type() -> T.StructType:
    return spark_record_schema("lineage", "Lineage")


def change_log_schema() -> T.StructType:
    entry = spark_record_schema("lineage", "ChangeLogEntry")
    return T.StructType(entry.fields + [T.StructField(BATCH_ID_COLUMN, T.LongType(), False)])


def progress_schema() -> T.StructType:
    return spark_schema("progress_record")


def last_progress(spark: SparkSession, table: TableLocation | str, app_id: str,
                  sources) -> dict[str, dict[str, Any]]:
    """source -> its newest _cdc_progress row by `app_id` (sources without one are absent)."""
    if not is_delta_table(spark, table):
        return {}
    rows = read(spark, table)
    rows = (rows.where(F.col("app_id") == app_id).where(F.col("source").isin(sorted(sources)))
            .groupBy("source").agg(F.max_by(F.struct(*rows.columns), "batch_id").alias("row")).collect())
    return {r["source"]: r["row"].asDict() for r in rows}


def spark_type(type_string: str) -> T.DataType:
    """DataType of a Column.spark_type string (the closed set libs/targets/types.py produces)."""
    text = type_string.strip().lower()
    if text in _SIMPLE_TYPES:
        return _SIMPLE_TYPES[text]
    match = _DECIMAL.match(text)
    if match:
        return T.DecimalType(int(match[1]), int(match[2]))
    raise ValueError(f"unsupported Spark type {type_string!r}")


def target_schema(target: Target) -> T.StructType:
    """Declared columns + `_row_id` + `_lineage`, in that order; then an SCD2 target's history
    columns (schemas/history_columns.avsc) or a `delete: soft` target's columns."""
    fields = [T.StructField(c.name, spark_type(c.spark_type), c.delta_nullable) for c in target.columns]
    return T.StructType(fields + [T.StructField(ROW_ID_COLUMN, T.StringType(), False),
                                  T.StructField(LINEAGE_COLUMN, lineage_type(), True), *extra_fields(target)])


def extra_fields(target: Target) -> list[T.StructField]:
    """The columns after `_lineage` its mode keeps (libs/apply/modes/): an SCD2 target's history,
    a soft-delete target's flags."""
    columns = mode_of(target).columns
    return list(spark_schema(columns).fields) if columns else []


def table_path(delta_root: str, name: str) -> str:
    """<delta_root>/<name>; a name is one path segment (it may come from a binlog table name)."""
    return TableRoot(delta_root).table(name).path


# -- DDL ----------------------------------------------------------------------------------------
def _string_literal(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def default_sql(column: Column) -> str | None:
    """Spark SQL DEFAULT expression of a target column (None: no DEFAULT clause).

    Literals are rendered from typed values (never pasted from DDL text): strings escaped,
    numbers through CAST of their text, bytes as X'..', temporals as typed literals (TIMESTAMP
    in UTC, DATETIME as its wall-clock TIMESTAMP_NTZ)."""
    if column.default_kind == CURRENT_TIMESTAMP_DEFAULT:
        return {"date": "current_date()", "datetime": "CAST(current_timestamp() AS TIMESTAMP_NTZ)"}.get(
            column.family, "current_timestamp()")
    if column.default_kind != LITERAL_DEFAULT:
        return None
    return value_sql(column, column.default)


def value_sql(column: Column, value: Any) -> str:
    """A Spark SQL literal of one of the column's Python values (libs/targets/values.py)."""
    dtype = spark_type(column.spark_type)
    if value is None:
        return "NULL"
    if isinstance(value, (bytes, bytearray)):
        return f"X'{bytes(value).hex()}'"
    if isinstance(value, dt.datetime):
        if column.family == "datetime":
            return f"TIMESTAMP_NTZ{_string_literal(value.isoformat(sep=' '))}"
        return f"TIMESTAMP{_string_literal(value.isoformat(sep=' ') + '+00:00')}"  # an instant: UTC
    if isinstance(value, dt.date):
        return f"DATE{_string_literal(value.isoformat())}"
    if isinstance(value, (bool, int, float, Decimal)):
        text = str(int(value)) if isinstance(value, bool) else str(value)
        return f"CAST({_string_literal(text)} AS {dtype.simpleString().upper()})"
    return _string_literal(str(value))


def create_target_sql(path: TableLocation | str, target: Target, deletion_vectors: bool = True) -> str:
    """CREATE TABLE IF NOT EXISTS for a target (one atomic Delta commit, defaults included;
    deletion vectors: pipelines/apply/write_features.py)."""
    columns = []
    for column in target.columns:
        parts = [quote_identifier(column.name), spark_type(column.spark_type).simpleString().upper()]
        if not column.delta_nullable:
            parts.append("NOT NULL")
        default = default_sql(column)
        if default is not None:
            parts.append(f"DEFAULT {default}")
        columns.append(" ".join(parts))
    columns.append(f"{quote_identifier(ROW_ID_COLUMN)} STRING NOT NULL")
    columns.append(f"{quote_identifier(LINEAGE_COLUMN)} {lineage_type().simpleString()}")
    columns += [f"{quote_identifier(f.name)} {f.dataType.simpleString().upper()}"
                f"{'' if f.nullable else ' NOT NULL'}"
                for f in extra_fields(target)]
    properties = {**TABLE_PROPERTIES, **({DELETION_VECTORS: "true"} if deletion_vectors else {})}
    props = ", ".join(f"{_string_literal(k)} = {_string_literal(v)}" for k, v in properties.items())
    return (f"CREATE TABLE IF NOT EXISTS {located(path).sql_ref()} (\n  " + ",\n  ".join(columns)
            + f"\n) USING delta TBLPROPERTIES ({props})")


class TargetSchemaMismatch(JobStopped):
    """An existing target table's Delta schema differs from what its declaration maps to."""


def schema_mismatches(actual: T.StructType, target: Target) -> list[str]:
    """How the existing Delta schema `actual` differs from the declared columns' mapping."""
    fields = {f.name.lower(): f for f in actual.fields}
    problems = []
    for column in target.columns:
        field = fields.get(column.name.lower())
        want = spark_type(column.spark_type)
        if field is None:
            problems.append(f"column {column.name!r} is missing")
        elif field.dataType != want:
            problems.append(f"column {column.name!r} is {field.dataType.simpleString().upper()}, "
                            f"{column.mysql_type} maps to {want.simpleString().upper()}")
        elif column.delta_nullable and not field.nullable:
            problems.append(f"column {column.name!r} is NOT NULL, {column.mysql_type} maps to a nullable "
                            f"column (zero dates read as NULL)")
    return problems + mode_mismatches(fields, target)


def check_target_schema(spark: SparkSession, path: TableLocation | str, target: Target) -> None:
    """Refuse to read or write an existing target whose schema an older type mapping made
    (libs/targets/types.py): reinterpreting its values silently would be wrong."""
    problems = schema_mismatches(read(spark, path).schema, target)
    if problems:
        raise TargetSchemaMismatch(
            f"Delta table {path} ({target.qualified_name}, declared in {target.declared_in or '?'}) does not "
            f"match its declaration: {'; '.join(problems)}. Nothing was read or written. Migrate by "
            f"recreating it (drop the table and replay the topic from its start with a new checkpoint), or "
            f"rewrite it in place: spark.read.format('delta').load(path) with each column cast to the "
            f"mapped type, written back with mode('overwrite') and option('overwriteSchema', 'true').")


def ensure_target(spark: SparkSession, path: TableLocation | str, target: Target,
                  deletion_vectors: bool = True) -> bool:
    """Create the target if absent. True when this call's CREATE committed the table's first
    version (0): the table is then known to be empty at version 0. False when it existed, or
    another writer created it first (CREATE TABLE IF NOT EXISTS then commits nothing)."""
    if is_delta_table(spark, path):
        return False
    if not located(path).is_catalog:  # (a catalog's CREATE registers the table only once committed)
        _drop_commitless_log(spark, located(path).path)
    forget_last_commit_version(spark)
    spark.sql(create_target_sql(path, target, deletion_vectors))
    return last_commit_version(spark) == 0


def _drop_commitless_log(spark: SparkSession, path: str) -> None:
    """A job killed while creating a table can leave `_delta_log` with no commit in it. Delta
    then takes the path for an existing table in CREATE TABLE IF NOT EXISTS (a silent no-op)
    but not in DeltaTable.forPath: the table was never created (a SIGKILL test showed it).
    A log directory without a commit or checkpoint file holds nothing: it goes."""
    jvm = spark.sparkContext._jvm
    log = jvm.org.apache.hadoop.fs.Path(path.rstrip("/") + "/_delta_log")
    fs = log.getFileSystem(spark._jsc.hadoopConfiguration())
    if not fs.exists(log):
        return
    names = [status.getPath().getName() for status in fs.listStatus(log)]
    if not any(re.match(r"^\d+(\.checkpoint.*\.parquet|\.json)$", name) for name in names):
        fs.delete(log, True)


def ensure_table(spark: SparkSession, path: TableLocation | str, schema: T.StructType) -> None:
    """Create an empty system table if absent (the applier's first append creates them; this is
    for readers that query before any write, e.g. lineage SQL on a fresh delta_root)."""
    if not is_delta_table(spark, path):
        append(spark.createDataFrame([], schema), path)


# -- Python values <-> Spark ----------------------------------------------------------------------
def to_spark_value(value: Any) -> Any:
    """Naive datetimes are UTC here (libs/targets/values.py); PySpark would read a naive
    datetime in the Python process's local zone, so hand it an aware UTC one."""
    if isinstance(value, dt.datetime) and value.tzinfo is None:
        return value.replace(tzinfo=dt.timezone.utc)
    if isinstance(value, dict):
        return {k: to_spark_value(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_spark_value(v) for v in value]
    return value


def python_rows(table: pa.Table) -> list[dict[str, Any]]:
    """Rows of an Arrow table as the applier's replay takes them: timestamps naive UTC (an
    aware value, as Spark's toArrow gives in the session zone, is converted), binary as bytes.
    The one conversion for Delta reads and the target mirror (libs/apply/target_mirror.py), so
    both hold identical values (FLOAT as float32, DECIMAL at the column's scale)."""
    rows = arrow_rows(table)
    zoned = [f.name for f in table.schema if pa.types.is_timestamp(f.type)]
    if zoned:
        for row in rows:
            for name in zoned:
                if row[name] is not None:
                    row[name] = to_utc_naive(row[name])
    return rows

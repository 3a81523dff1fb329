"""Reads, writes and Delta-log questions of one table, at a path or by catalog name
(libs/tables/table_location.py decides which). The one place that knows how each is spelled:

                  path                                   catalog name
  exists          DeltaTable.isDeltaTable                spark.catalog.tableExists
  read            spark.read.format("delta").load        spark.read.table
  DeltaTable      DeltaTable.forPath                     DeltaTable.forName
  append          write.mode("append").save              CREATE (empty, when absent), then writeTo().append()
  overwrite       write.mode("overwrite").save           writeTo().overwrite(true)
  Delta log       DeltaLog.forTableWithSnapshot(path)    DeltaLog.forTableWithSnapshot(TableIdentifier)

Why not saveAsTable for a catalog table: creating a table that way (CREATE TABLE AS SELECT)
drops the write's userMetadata, where the commit mark of an append lives
(pipelines/delta/marked_appends.py), and its overwrite mode replaces the table (REPLACE TABLE AS
SELECT: properties gone). DataFrameWriterV2 writes are Delta's plain writes: userMetadata,
overwriteSchema and the txnAppId/txnVersion session confs hold as for a path (tested).
A plain string stands for a path (the callers of before).
"""
from __future__ import annotations

from delta.tables import DeltaTable
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from libs.settings.errors import one_line
from libs.runtime.stops import JobStopped
from libs.tables.table_location import TableLocation, TableRoot


class CatalogSchemaStopped(JobStopped):
    """The catalog schema of JobConfig.catalog_schema cannot be created or used."""


def located(table: TableLocation | str) -> TableLocation:
    return table if isinstance(table, TableLocation) else TableLocation(path=table)


def exists(spark: SparkSession, table: TableLocation | str) -> bool:
    table = located(table)
    if table.is_catalog:
        return spark.catalog.tableExists(table.sql_ref())
    return DeltaTable.isDeltaTable(spark, table.path)


def read(spark: SparkSession, table: TableLocation | str, version: int | None = None) -> DataFrame:
    """The table (at Delta `version` when given)."""
    table = located(table)
    reader = spark.read if version is None else spark.read.option("versionAsOf", int(version))
    return reader.table(table.sql_ref()) if table.is_catalog else reader.format("delta").load(table.path)


def delta_table(spark: SparkSession, table: TableLocation | str) -> DeltaTable:
    table = located(table)
    if table.is_catalog:
        return DeltaTable.forName(spark, table.sql_ref())
    return DeltaTable.forPath(spark, table.path)


def append(df: DataFrame, table: TableLocation | str, **options: str) -> None:
    """Append `df`, creating the table from its schema when absent (as a path write does)."""
    table = located(table)
    if not table.is_catalog:
        df.write.format("delta").mode("append").options(**options).save(table.path)
        return
    if not exists(df.sparkSession, table):  # an empty CREATE: the append below carries the options
        df.limit(0).write.format("delta").mode("append").saveAsTable(table.sql_ref())
    df.writeTo(table.sql_ref()).options(**options).append()


def writer(df: DataFrame, mode: str, **options: str):
    """A callable(table) writing `df` with `mode` ("append" | "overwrite"); the table exists."""
    def write(table: TableLocation | str) -> None:
        table = located(table)
        if not table.is_catalog:
            df.write.format("delta").mode(mode).options(**options).save(table.path)
        elif mode == "overwrite":
            df.writeTo(table.sql_ref()).options(**options).overwrite(F.lit(True))
        else:
            df.writeTo(table.sql_ref()).options(**options).append()
    return write


def snapshot(spark: SparkSession, table: TableLocation | str):
    """The table's latest Delta snapshot (JVM object), the log listed once when nothing changed
    since this JVM last saw it (DeltaLog instances are cached)."""
    table = located(table)
    jvm = spark.sparkContext._jvm
    delta_log = jvm.org.apache.spark.sql.delta.DeltaLog
    if not table.is_catalog:
        return delta_log.forTableWithSnapshot(spark._jsparkSession, table.path)._2()
    catalog, schema, name = table.name
    ident = jvm.org.apache.spark.sql.catalyst.TableIdentifier(name, jvm.scala.Some(schema),
                                                              jvm.scala.Some(catalog))
    return delta_log.forTableWithSnapshot(spark._jsparkSession, ident)._2()


def property_on(table_snapshot, name: str) -> bool:
    """Is the boolean table property `name` set to true in a snapshot (snapshot() above)?"""
    value = table_snapshot.metadata().configuration().get(name)
    return value.isDefined() and value.get().strip().lower() == "true"


def ensure_schema(spark: SparkSession, root: TableRoot) -> None:
    """The catalog schema of catalog tables, created when missing (CREATE SCHEMA IF NOT
    EXISTS); its catalog must exist. Nothing for path tables."""
    ref = root.schema_ref()
    if ref is None:
        return
    try:
        spark.sql(f"CREATE SCHEMA IF NOT EXISTS {ref}")
    except Exception as exc:  # refused by the catalog (no such catalog, no privilege): one line
        raise CatalogSchemaStopped(f"catalog_schema {root}: cannot create or use the schema {ref}: "
                                   f"{one_line((str(exc).strip().splitlines() or [''])[0])}") from None

"""Delta table features of the targets' write path (DESIGN.md "Cost follows the changes").

Deletion vectors: a MERGE, UPDATE or DELETE marks the rows it removes from a file in a small
side file instead of rewriting the file, so a batch writes what it changed, not the files its
rows happen to share with untouched ones. New targets get the property at CREATE
(pipelines/apply/tables.py); an existing target is upgraded by one ALTER the first time the job
writes it (WritesSettings.deletion_vectors). The upgrade raises the table's protocol: its readers
need the deletionVectors reader feature (Delta 2.3+ / Spark, Databricks, Trino 4xx+, ...)."""
from __future__ import annotations

from pyspark.sql import SparkSession

from libs.tables.table_location import TableLocation
from pipelines.delta.delta_tables import property_on, snapshot

DELETION_VECTORS = "delta.enableDeletionVectors"


def has_deletion_vectors(spark: SparkSession, table: TableLocation) -> bool:
    return property_on(snapshot(spark, table), DELETION_VECTORS)


def enable_deletion_vectors(spark: SparkSession, table: TableLocation) -> bool:
    """Upgrade an existing table to deletion vectors; True when this call changed it."""
    if has_deletion_vectors(spark, table):
        return False
    spark.sql(f"ALTER TABLE {table.sql_ref()} SET TBLPROPERTIES ('{DELETION_VECTORS}' = 'true')")
    return True

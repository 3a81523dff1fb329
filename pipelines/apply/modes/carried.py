"""The one write of a target whose schema the batch changes (issue #39 items 1-2): its content
carried to the batch's end schema (pipelines/apply/schema_changes.py, a DataFrame of the
version the batch started from, or of the table renamed onto it) with the batch's replayed rows
applied, written as ONE overwrite with `overwriteSchema`. A reader sees the table as it was, or
with its new schema and the batch's rows; never the new schema empty or without the rows (an
online schema change tool's swap: pt-online-schema-change, gh-ost).

A table renamed onto an existing one (the swap) replaces that one's rows with its own, which
the tool copied: a row whose data (the columns both have, by name) equals the replaced row of
the same primary key keeps that row's `_lineage`, the change that last changed its data (the
copy itself stays in the change log, under the tool's table, as the statement it was).

What a table started anew keeps, and what a delete leaves, is its mode's (pipelines/apply/modes/:
a soft-delete target keeps its deleted rows, flagged).
"""
from __future__ import annotations

from functools import reduce

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from libs.apply.write_op import WriteOp
from libs.reads.lineage_sql import quote_identifier
from libs.replay import LINEAGE_COLUMN, ROW_ID_COLUMN
from libs.targets.model import Target
from pipelines.apply.target_writes import OP_COLUMN, TablePlan
from pipelines.delta.delta_tables import exists, located, writer


def carried_write(spark: SparkSession, plan: TablePlan, rows: pa.Table, source_schema: T.StructType, mode):
    """A callable(table) writing the plan's table anew: its carried rows (those its `mode`
    keeps when the batch started it anew) less those the batch upserted or deleted, plus the
    upserts and the deleted rows its mode keeps."""
    base = plan.carried.table
    base = base if not plan.replace else mode.kept_on_replace(base, plan.target, plan.truncated)
    changed = spark.createDataFrame(rows, source_schema)
    touched = changed.select(F.col(ROW_ID_COLUMN).alias("_cdc_touched"))
    kept = base.join(touched, base[ROW_ID_COLUMN] == touched["_cdc_touched"], "left_anti")
    upserts = changed.where(F.col(OP_COLUMN) == F.lit(WriteOp.UPSERT)).select(
        *(F.col(quote_identifier(f.name)).cast(f.dataType).alias(f.name) for f in base.schema.fields))
    content = kept.union(upserts)
    deleted = mode.deleted_kept(base, changed, plan.target)
    if deleted is not None:
        content = content.union(deleted)
    if plan.carried.replaced is not None:
        content = kept_lineage(content, plan.carried.replaced, plan.target)
    overwrite = writer(content, "overwrite", overwriteSchema="true")

    def write(table) -> None:
        where = located(table)
        if where.is_catalog and not exists(spark, where):  # a new name (renamed to): made with its rows
            content.writeTo(where.sql_ref()).using("delta").create()
        else:
            overwrite(table)
    return write


def kept_lineage(content: DataFrame, replaced: DataFrame, target: Target) -> DataFrame:
    """`content` with each row's `_lineage` taken from the `replaced` row of the same primary
    key when every column both tables have holds the same value in both (module docstring)."""
    data = [c for c in replaced.columns if c in content.columns and c not in (ROW_ID_COLUMN, LINEAGE_COLUMN)]
    key = list(target.primary_key)
    if not key or not set(key) <= set(data):
        return content  # no key to find the replaced row by
    old = replaced.select(*(F.col(quote_identifier(c)).alias(f"_cdc_old{i}") for i, c in enumerate(data)),
                          F.col(LINEAGE_COLUMN).alias("_cdc_old_lineage"))
    new = content.alias("new")
    column = lambda name: F.col(f"new.{quote_identifier(name)}")  # noqa: E731
    on = reduce(lambda a, b: a & b, (column(c) == F.col(f"_cdc_old{data.index(c)}") for c in key))
    same = reduce(lambda a, b: a & b,
                  (column(c).eqNullSafe(F.col(f"_cdc_old{i}").cast(content.schema[c].dataType))
                   for i, c in enumerate(data)), F.col("_cdc_old_lineage").isNotNull())
    lineage = F.when(same, F.col("_cdc_old_lineage")).otherwise(column(LINEAGE_COLUMN)).alias(LINEAGE_COLUMN)
    return new.join(old, on, "left").select(*(lineage if c == LINEAGE_COLUMN else column(c)
                                              for c in content.columns))

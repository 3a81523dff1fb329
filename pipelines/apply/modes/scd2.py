"""The apply stage's reads and writes of SCD2 targets (targets YAML `history: scd2`; the versions:
libs/replay/versions.py; README "History targets").

The replay's state is the target's open versions (`_is_current`), read as a current target's
rows are (touched_rows.read_touched, whose live_rows keeps only the open versions; never from a
mirror). The batch's write is ONE Delta commit, idempotent per (txn app id, batch_id) like every
target write (batch_writes.py): a MERGE that closes the open version of each row the batch
changed (by `_row_id`, the open one only) and inserts the batch's versions, already chained
among themselves; after a TRUNCATE TABLE it also closes every other open version (WHEN NOT
MATCHED BY SOURCE). A batch that changes the table's schema writes the carried table
(schema_changes.py, every version in the new columns) with the same closings and versions as one
overwrite, as a current target's does.

SCD2 targets are replayed on the driver only: not by the executors (executor_parts.split_batch)
nor written as a whole-table overwrite from a mirror.
"""
from __future__ import annotations

import dataclasses
from functools import reduce
from typing import Any, Sequence

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

import pipelines.apply.tables as D
from libs.apply.merge_scope import merge_scope
from libs.reads.lineage_sql import quote_identifier
from libs.replay import ROW_ID_COLUMN
from libs.replay.versions import CLOSING_COLUMNS, IS_CURRENT, HistoryRows, history_rows
from libs.tables.table_location import TableLocation
from libs.targets.model import Target
from pipelines.apply.known_targets import KnownTargets
from pipelines.apply.modes.target_write import TargetWrite
from pipelines.apply.target_writes import TablePlan, in_scope
from pipelines.delta.arrow_frames import arrow_table
from pipelines.delta.delta_tables import delta_table, exists, located, writer

# MERGE source only: the _row_id whose open version it closes; NULL: a new version
MERGE_KEY = "_cdc_merge_key"


@dataclasses.dataclass
class HistoryPlan(TablePlan):
    """A TablePlan of an SCD2 target: `history` is what its one write closes and inserts
    (upserts / deletes hold the versions opened / the stored versions closed, for the counts)."""

    history: HistoryRows | None = None


def history_plan(target: Target, path: TableLocation, result, read_rows: Sequence,
                 carried=None) -> HistoryPlan:
    """The plan of an SCD2 target from its replay_versions result; `read_rows`: the stored open
    versions the replay read (the MERGE's scope)."""
    history = history_rows(result)
    return HistoryPlan(target, path, history.openings, history.closings,
                       replace=history.truncated is not None, scope=merge_scope(target, read_rows),
                       carried=carried, history=history)


def _source(spark: SparkSession, plan: HistoryPlan) -> tuple[DataFrame, list[str]]:
    """The batch's closings and new versions as one frame of the target's columns + MERGE_KEY."""
    schema = D.target_schema(plan.target)
    fields = [T.StructField(f.name, f.dataType, True) for f in schema.fields] + [
        T.StructField(MERGE_KEY, T.StringType(), True)]
    names = [f.name for f in schema.fields]
    rows = ([{**c, MERGE_KEY: c[ROW_ID_COLUMN]} for c in plan.history.closings]
            + [{**o, MERGE_KEY: None} for o in plan.history.openings])
    source_schema = T.StructType(fields)
    return spark.createDataFrame(arrow_table([{n: r.get(n) for n in [*names, MERGE_KEY]} for r in rows],
                                             source_schema), source_schema), names


def _truncate_closing(plan: HistoryPlan) -> dict[str, Any]:
    """Column -> literal closing every other open version at the batch's first truncate."""
    closing = plan.history.truncated.closing(deleted=True)
    types = D.target_schema(plan.target)
    return {quote_identifier(c): F.lit(D.to_spark_value(closing[c])).cast(types[c].dataType)
            for c in CLOSING_COLUMNS}


def history_write(spark: SparkSession, plan: HistoryPlan):
    """A callable(path) committing the plan as ONE Delta write (module docstring)."""
    source, names = _source(spark, plan)
    if plan.carried is not None:
        return _carried_write(spark, plan, source, names)
    col = lambda alias, name: F.col(f"{alias}.{quote_identifier(name)}")  # noqa: E731

    def write(path) -> None:
        condition = col("t", IS_CURRENT) & (col("t", ROW_ID_COLUMN) == col("s", MERGE_KEY))
        if plan.history.truncated is None and plan.scope is not None:
            condition = in_scope(plan.scope) & condition  # Delta skips files by the key's statistics
        merge = (delta_table(spark, path).alias("t").merge(source.alias("s"), condition)
                 .whenMatchedUpdate(set={quote_identifier(c): col("s", c) for c in CLOSING_COLUMNS})
                 .whenNotMatchedInsert(condition=col("s", MERGE_KEY).isNull(),
                                       values={quote_identifier(n): col("s", n) for n in names}))
        if plan.history.truncated is not None:
            merge = merge.whenNotMatchedBySourceUpdate(condition=col("t", IS_CURRENT),
                                                       set=_truncate_closing(plan))
        merge.execute()
    return write


def _carried_write(spark: SparkSession, plan: HistoryPlan, source: DataFrame, names: list[str]):
    """The carried table (every version, in the batch's end schema) with the closings applied and
    the new versions added, as one overwrite with `overwriteSchema` (carried.py's rule)."""
    base = plan.carried.table
    closers = source.where(F.col(MERGE_KEY).isNotNull()).select(
        F.col(MERGE_KEY), *(F.col(c).alias(f"_cdc_close{i}") for i, c in enumerate(CLOSING_COLUMNS)))
    joined = base.join(closers, (base[ROW_ID_COLUMN] == closers[MERGE_KEY]) & base[IS_CURRENT], "left")
    truncate = _truncate_closing(plan) if plan.history.truncated is not None else None
    kept = []
    for f in base.schema.fields:
        value = F.col(quote_identifier(f.name))
        if f.name in CLOSING_COLUMNS:
            i = CLOSING_COLUMNS.index(f.name)
            closed = F.when(F.col(MERGE_KEY).isNotNull(), F.col(f"_cdc_close{i}"))
            if truncate is not None:
                closed = closed.when(F.col(IS_CURRENT), truncate[quote_identifier(f.name)])
            value = closed.otherwise(value)
        kept.append(value.cast(f.dataType).alias(f.name))
    content = reduce(DataFrame.union, [
        joined.select(*kept),
        source.where(F.col(MERGE_KEY).isNull()).select(
            *(F.col(quote_identifier(f.name)).cast(f.dataType).alias(f.name) for f in base.schema.fields))])
    overwrite = writer(content, "overwrite", overwriteSchema="true")

    def write(path) -> None:
        where = located(path)
        if where.is_catalog and not exists(spark, where):
            content.writeTo(where.sql_ref()).using("delta").create()
        else:
            overwrite(path)
    return write


class HistoryWrites:
    """An SCD2 target's plan and its one write (module docstring); it has no mirror, no
    executor replay and no snapshot rows made on the executors (libs/apply/modes/scd2.py)."""

    writes_at_positions = False  # a batch closes versions and adds new ones: no DV commit (not yet)

    @staticmethod
    def plan(target: Target, path: TableLocation, result, read_rows: Sequence, changes,
             carried=None) -> HistoryPlan:
        return history_plan(target, path, result, read_rows, carried)

    @staticmethod
    def target_write(mirrored, spark: SparkSession, plan: HistoryPlan) -> TargetWrite:
        if plan.carried is not None:  # a write's txn confs are its DataFrame's session's
            session = plan.carried.table.sparkSession
            return TargetWrite(session, history_write(session, plan))
        known: KnownTargets = mirrored.known
        known.ensure(spark, plan.path, plan.target)
        return TargetWrite(spark, history_write(spark, plan))

    @staticmethod
    def carried_columns(table: DataFrame, target: Target) -> DataFrame:
        return table

    @staticmethod
    def new_column(value, target: Target):
        """A column added while carried: the versions closed before it came hold NULL."""
        return F.when(F.col(IS_CURRENT), value)

    @staticmethod
    def refuse_carry(where: str, anew_over_rows: bool, replaces_rows: bool) -> None:
        """Every version is carried: nothing to refuse."""

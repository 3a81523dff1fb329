"""Which target tables' parts of a batch stay on the executors, and their replay there (issue
#21 goal 1, issue #37 item 3): a table with many row changes is replayed where its changes are
(executor_replay.py), a table's snapshot rows are made target rows there (snapshot_rows.py).
Nothing of either is collected to the driver; a strict-mode stop raises before anything of the
batch is written."""
from __future__ import annotations

from typing import Callable, Iterable

from pyspark.sql import DataFrame, SparkSession

from libs.contracts.change import Change, Op
from libs.apply.partition import executor_eligible, snapshot_rows_eligible
from libs.apply.modes.select import mode_of
from libs.config.job import JobConfig
from libs.tables.table_location import TableLocation
from libs.targets import TargetCatalog
from libs.targets.model import Target
from pipelines.apply.batch_split import BatchSplit, BatchSummary, rows_at_most
from pipelines.apply.executor_replay import ExecutorReplay, replay_on_executors
from pipelines.apply.known_targets import KnownTargets
from pipelines.apply.snapshot_rows import snapshot_rows_on_executors
from pipelines.apply.source_schemas import SourceSchemas
from libs.apply.stops import ApplyStopped


def split_batch(changes_df: DataFrame, catalog: TargetCatalog, config: JobConfig,
                located: Callable[[Target], tuple[Target, TableLocation]], fused=None) -> BatchSplit:
    """The batch's executor parts (config.executor_apply_min_changes): one small aggregate of the
    batch, then the rest. `located`: a declared target -> (effective target, location); `fused`:
    the tables whose snapshot chunks were replayed already (snapshot_fusion.SnapshotFusion)."""
    min_changes = config.executor_apply_min_changes
    made = {part.source_table: part for part in fused.parts} if fused is not None else {}
    at_most = rows_at_most(changes_df)  # no job: a small batch skips the aggregate (~150 ms)
    if not made and (min_changes is None or (at_most is not None and at_most < min_changes)):
        return BatchSplit(changes_df)
    summary = BatchSummary.of(changes_df, fused.fused_groups if made else ())
    tables = {name: (part.target, part.path) for name, part in made.items()}
    snapshots, batch_ops = set(made), summary.all_ops
    for (database, table), ops in summary.ops.items():
        if (database, table) in made:
            continue
        target = catalog.get(database, table)
        if target is None or not config.tables.selects(database, table) or not mode_of(target).on_executors:
            continue  # (an SCD2 target's versions are made by the driver's replay: README "History targets")
        if snapshot_rows_eligible(ops, min_changes, batch_ops):
            snapshots.add((database, table))
        elif not executor_eligible(ops, sum(ops.values()), min_changes, summary.has_ddl):
            continue
        tables[(database, table)] = located(target)
    return BatchSplit(changes_df, summary, tables, frozenset(snapshots), made=made)


def last_truncates(changes: Iterable[Change]) -> dict[tuple[str, str], tuple]:
    """(database, table) -> the source_order of its last truncate among the driver's changes."""
    return latest_starts(((c.database, c.table), c.source_order) for c in changes if c.op == Op.TRUNCATE)


def latest_starts(starts: Iterable[tuple[tuple[str, str], tuple]]) -> dict[tuple[str, str], tuple]:
    """(database, table) -> the greatest of its sort keys among `starts` ((name, key) pairs)."""
    out: dict[tuple[str, str], tuple] = {}
    for name, key in starts:
        out[name] = max(out.get(name, key), key)
    return out


def replay_parts(spark: SparkSession, batch_id: int, split: BatchSplit, known: KnownTargets,
                 config: JobConfig, source_schemas: SourceSchemas,
                 driver_changes: Iterable[Change]) -> list[ExecutorReplay]:
    """Each executor part replayed where its changes are, nothing written; a table Delta already
    committed for this batch (a retried batch) is skipped (split.already_applied)."""
    out: list[ExecutorReplay] = []
    # the cluster's cores (local[2]: 2), not spark.sql.shuffle.partitions (200 on Databricks,
    # which AQE coalesces for joins but not for an explicit repartition)
    parallelism = spark.sparkContext.defaultParallelism
    starts = last_truncates(driver_changes) if split.snapshots else {}
    try:
        for (database, table), (target, path) in sorted(split.tables.items()):
            made = split.made.get((database, table))  # replayed from its chunks (snapshot_fusion.py)
            if made is None and known.already_committed(spark, path, target, batch_id):
                split.already_applied.add((database, table))
                continue
            exists = known.exists(spark, path)
            if exists and path not in known.schema_checked:
                known.check_schema(spark, path, target)
            if made is not None:
                part = made
            elif (database, table) in split.snapshots:
                part = snapshot_rows_on_executors(split.of_table(database, table), (database, table), target,
                                                  path, config.exec_mode, batch_id,
                                                  starts.get((database, table)),
                                                  parallelism, fold=config.executor_fold)
            else:
                part = replay_on_executors(spark, split.of_table(database, table), (database, table), target,
                                           path, exists, config.exec_mode, batch_id,
                                           source_schemas.tables.positions(database, table), parallelism,
                                           fold=config.executor_fold)
            out.append(part)
            if part.stop is not None:
                raise ApplyStopped(batch_id, target.delta_table, part.stop)
    except BaseException:
        for part in out:
            part.unpersist()
        raise
    return out

"""The writes of a current target (libs/apply/modes/current.py): the table is the source's rows,
a deleted row leaves it. Its one write per batch (pipelines/apply/batch_writes.py), in this order
of preference: the table anew (a snapshot's rows, or a carried schema), a new-rows append, a
whole-table overwrite from its mirror (pipelines/apply/known_targets.py MirroredWrites), one commit
of deletion vectors at the changed rows' known positions (pipelines/apply/position_writes.py), an
append of inserts no stored row can match, else a MERGE by `_row_id` bounded by the keys the
replay read (plan.scope). All give the same table.

The soft-delete mode (soft_delete.py) is this one with other clauses for what a delete and a
truncate do to stored rows."""
from __future__ import annotations

from functools import partial
from typing import Any, Callable, Sequence

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import types as T

from libs.apply.merge_scope import merge_scope
from libs.apply.modes.select import mode_of
from libs.apply.target_mirror import TargetMirror
from libs.apply.write_op import WriteOp
from libs.contracts.change import Change, Op
from libs.replay import ROW_ID_COLUMN
from libs.replay.engine import ReplayResult
from libs.tables.table_location import TableLocation
from libs.targets.model import Target
from pipelines.apply.known_targets import MirroredWrites
from pipelines.apply.modes.carried import carried_write
from pipelines.apply.modes.target_write import TargetWrite
from pipelines.apply.position_writes import position_write
from pipelines.apply.target_writes import OP_COLUMN, TablePlan, merge, merge_source, new_rows_write
from pipelines.delta.delta_tables import writer


class CurrentWrites:
    # A batch may be one commit of deletion vectors at its rows' known positions (issue #57 item 3,
    # pipelines/apply/position_writes.py); a soft-delete target's deletes keep their rows: not yet.
    writes_at_positions = True

    def plan(self, target: Target, path: TableLocation, result: ReplayResult, read_rows: Sequence,
             changes: Sequence[Change], carried: Any = None) -> TablePlan:
        """The MERGE source rows of the batch (the mode's table_writes), each with its WriteOp."""
        mode = mode_of(target)
        upserts, deletes = mode.table_writes(target, result)
        upserts = [{**u, OP_COLUMN: WriteOp.UPSERT} for u in upserts]
        deletes = [{**d, OP_COLUMN: WriteOp.DELETE} for d in deletes]
        only_new = not deletes and all(w.lineage.operation == Op.SNAPSHOT for w in result.upserts)
        only_new = only_new and len(upserts) == len(result.upserts)  # (no tombstone of a stored row)
        replace = any(c.op == Op.TRUNCATE for c in changes)  # the rows left after the last truncate
        return TablePlan(target, path, upserts, deletes, replace, only_new, merge_scope(target, read_rows),
                         carried, mode.truncated(changes))

    def target_write(self, mirrored: MirroredWrites, spark: SparkSession, plan: TablePlan) -> TargetWrite:
        """The plan's one write (module docstring)."""
        rows, source_schema, names = merge_source(plan)
        if plan.carried is not None:  # the batch changes its schema: one overwrite with its rows
            mirrored.forget(plan)
            session = plan.carried.table.sparkSession  # a write's txn confs are its DataFrame's session's
            return TargetWrite(session, carried_write(session, plan, rows, source_schema, self))
        created = mirrored.known.ensure(spark, plan.path, plan.target)
        if plan.replace or plan.append:  # a snapshot: the table anew, or rows no stored row can match
            mirrored.forget(plan)
            return TargetWrite(spark, self.new_rows(spark, plan, rows, source_schema, names))
        mirror, base = mirrored.advance(plan, rows, created, self.mirror_apply)

        def merged() -> Callable:  # the MERGE by _row_id
            return partial(self.merge, spark, spark.createDataFrame(rows, source_schema), names,
                           scope=plan.scope, truncated=plan.truncated)

        write = mirrored.overwrite(spark, plan, mirror, base)  # a small table: replaced whole
        # writes.deletion_vector_commits: a commit at the rows' known positions, or None
        if write is None and self.writes_at_positions and mirrored.known.position_commits:
            write = position_write(mirrored.known, spark, plan, merged, mirror)
        if write is None and plan.inserts_only:  # no stored row can match: an append
            write = new_rows_write(spark, plan)
        if write is None:
            write = merged()
        return TargetWrite(spark, write, mirror, base)

    def new_rows(self, spark: SparkSession, plan: TablePlan, rows: pa.Table, source_schema: T.StructType,
                 names: list[str]) -> Callable:
        """The write of a plan that starts the table anew or only adds snapshot rows."""
        return new_rows_write(spark, plan)

    def merge(self, spark: SparkSession, source: DataFrame, names: Sequence[str], path: TableLocation | str,
              scope=None, truncated: dict[str, Any] | None = None) -> None:
        """The MERGE by `_row_id` of MERGE source rows (target_writes.merge): a delete removes."""
        merge(spark, source, names, path, scope)

    def snapshot_rows_write(self, spark: SparkSession, part) -> Callable:
        """The one write of a table's snapshot rows made on the executors
        (pipelines/apply/executor_replay.py): an append, or an overwrite when the batch started the
        table anew (in its end schema when the batch changes it)."""
        options = {"overwriteSchema": "true"} if part.carried is not None else {}
        return writer(part.target_rows(), "overwrite" if part.replace else "append", **options)

    @staticmethod
    def mirror_apply(mirror: TargetMirror, upserts: list, deletes: list) -> None:
        mirror.apply(upserts, [d[ROW_ID_COLUMN] for d in deletes], None)

    # A table carried to a new schema (pipelines/apply/modes/carried.py, schema_changes.py)
    @staticmethod
    def kept_on_replace(table: DataFrame, target: Target, truncated: dict[str, Any] | None) -> DataFrame:
        """What stays of a table the batch starts anew: nothing."""
        return table.limit(0)

    @staticmethod
    def deleted_kept(base: DataFrame, changed: DataFrame, target: Target) -> DataFrame | None:
        """The rows of `base` that the batch deletes and the table keeps: none."""
        return None

    @staticmethod
    def carried_columns(table: DataFrame, target: Target) -> DataFrame:
        """A carried table with the mode's own columns: it has none."""
        return table

    @staticmethod
    def new_column(value, target: Target):
        """The fill of a column added while carried, on every row."""
        return value

    @staticmethod
    def refuse_carry(where: str, anew_over_rows: bool, replaces_rows: bool) -> None:
        """A carry the mode cannot keep its promise through raises; a current target's never."""

"""The applier's writes of one batch (pipelines/apply/applier.py), each idempotent per
(app_id, batch_id) (appends: commit marks, pipelines/delta/marked_appends.py; target writes: Delta's
txnAppId/txnVersion), in this order: `_cdc_change_log` (append; before any target, so a target
already written implies its change log is committed), `_cdc_quarantine` (append,
pipelines/delta/quarantine.py), ONE write per target table (as the target's mode writes it,
pipelines/apply/modes/: a MERGE by `_row_id`, an append of new rows, a small mirrored table
replaced by its new content, a table carried to a new schema written anew), then `_cdc_progress` (append,
one row per source, with the Delta version each target write committed: batch_versions.py).
Writing a batch again with the same batch_id changes nothing.
"""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from functools import partial, reduce
from typing import Any, Callable, Mapping, Sequence

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession

import pipelines.apply.tables as D
from libs.apply.plan import progress_rows, quarantine_row
from libs.config.job import JobConfig
from libs.tables.system_tables import APPLY_STAGE, CHANGE_LOG, PROGRESS, QUARANTINE, table_app_id
from libs.tables.table_location import TableLocation
from libs.targets.model import Target
from libs.runtime.step_clock import StepClock
from pipelines.apply.batch_versions import BatchVersions
from pipelines.apply.executor_replay import ExecutorReplay
from pipelines.apply.known_targets import KnownTargets, MirroredWrites
from pipelines.apply.maintenance import TableMaintenance
from pipelines.apply.modes.target_write import TargetWrite
from pipelines.apply.modes.writes import writes_of
from pipelines.apply.shadow_writes import remove_tables
from pipelines.apply.snapshot_warmer import SnapshotWarmer
from pipelines.apply.target_writes import TablePlan
from pipelines.delta.arrow_frames import arrow_frame
from pipelines.delta.delta_txn import delta_txn, forget_last_commit_version, last_commit_version
from pipelines.delta.marked_appends import MarkedAppends
from pipelines.delta.quarantine import QuarantineWriter, now_utc, quarantine_schema

TABLE_THREADS = 4  # target tables replayed, and written, side by side (see _write_targets)


class BatchWrites:
    def __init__(self, config: JobConfig, app_id: str, known: KnownTargets, steps: StepClock | None = None):
        self.config, self.app_id, self.known = config, app_id, known
        self.steps = steps or StepClock()  # the batch's split (libs/runtime/step_clock.py)
        self.tables = config.table_root  # where every table lives
        self.appends = MarkedAppends()
        self.quarantine = QuarantineWriter(self.tables, app_id, APPLY_STAGE)
        self.maintenance = TableMaintenance(config.writes)  # compaction and VACUUM after batches
        self.versions = BatchVersions(app_id)  # each target write's Delta version, for _cdc_progress
        self.warmer = SnapshotWarmer()  # the written targets' state rebuilt for their next write
        self.mirrored = MirroredWrites(known, config.target_overwrite_max_rows)
        # source -> its last _cdc_progress row (heartbeat-only batches repeat it)
        self._progress: dict[str, dict] = {}

    def write(self, spark: SparkSession, batch_id: int, changes, log_table: pa.Table | None, errors,
              plans, caught_up: Mapping[str, int], executor: Sequence[ExecutorReplay] = (),
              lasts: Mapping[str, tuple[Mapping[str, Any], int]] | None = None,
              gone: Sequence[TableLocation] = ()) -> None:
        """The batch's writes in their order (module docstring): the change log (`log_table`,
        then each executor table's), the quarantined changes (`errors`, then the executors'), one
        write per target (`plans` replayed here, `executor` tables MERGEd from the executors),
        the sources' progress (`lasts`: per source, the executors' part's last change and count);
        then the tables' maintenance (pipelines/apply/maintenance.py); then, in the background,
        the written targets' new Delta state for their next write (snapshot_warmer.py). `gone`: the
        Delta tables of online schema change tools' ended working tables, removed after the target
        writes (pipelines/apply/shadow_writes.py)."""
        with self.steps.step("change_log"):  # and the quarantined changes
            self._append_logs(spark, batch_id, log_table, errors, executor)
        plans = [p for p in plans if p.writes_anything]
        snapshot_rows = [part for part in executor if part.new_rows]
        plans = self._with_snapshot_rows(plans, snapshot_rows)
        with self.steps.step("targets"):
            self._write_targets(spark, batch_id, [self._target_write(p) for p in plans if p.copies_another])
            # in the session of their frame, one after another (txn confs are per session)
            for part in snapshot_rows:
                self._write_snapshot_rows(spark, batch_id, part)
            writes = [self._target_write(p) for p in plans if not p.copies_another]
            writes += [partial(self._merge_from_executors, part=part)
                       for part in executor if not part.new_rows]
            self._write_targets(spark, batch_id, writes)
            remove_tables(spark, self.known, gone)
        with self.steps.step("progress"):
            self._batch_progress(spark, batch_id, changes, caught_up, lasts, [*plans, *executor])
        with self.steps.step("maintenance"):
            self.maintenance.after_batch(spark, self._written_in(batch_id))  # the batch is committed
        self.warmer.warm(spark, self._targets_written_in(batch_id))  # the next batch's head start

    def _append_logs(self, spark: SparkSession, batch_id: int, log_table: pa.Table | None, errors,
                     executor: Sequence[ExecutorReplay]) -> None:
        """The change log (the driver's, then each executor table's) and the quarantined changes."""
        logs = [part.change_log() for part in executor]
        if log_table is not None:
            logs.insert(0, spark.createDataFrame(log_table, D.change_log_schema()))
        if logs:
            self.appends.append(reduce(DataFrame.unionByName, logs), self.tables.table(CHANGE_LOG),
                                table_app_id(self.app_id, CHANGE_LOG), batch_id)
        now = now_utc()
        rows = [quarantine_row(e, now) for e in errors]
        if executor:
            parts = [part.quarantine() for part in executor if part.tally["quarantined"]]
            if rows:
                parts.insert(0, arrow_frame(spark, rows, quarantine_schema()))
            if parts:
                self.quarantine.append(reduce(DataFrame.unionByName, parts), batch_id)
        else:
            self.quarantine.append_rows(spark, rows, batch_id)

    def _batch_progress(self, spark: SparkSession, batch_id: int, changes, caught_up: Mapping[str, int],
                        lasts, written: Sequence) -> None:
        """_cdc_progress's rows of the batch, with each target write's Delta version (`written`:
        the plans and executor parts; and the targets a retried batch found committed)."""
        versions = None
        if self.appends.committed(spark, self.tables.table(PROGRESS),
                                  table_app_id(self.app_id, PROGRESS)) < batch_id:
            targets = {name: path for path, (name, batch) in self.known.found_committed.items()
                       if batch == batch_id}
            targets.update((t.target.delta_table, t.path) for t in written)
            versions = self.versions.of_batch(spark, batch_id, targets)
        self.append_progress(spark, batch_id, changes, caught_up, lasts, versions)

    def _targets_written_in(self, batch_id: int) -> list[TableLocation]:
        return [path for path, written in self.known.written.items() if written == batch_id]

    def _written_in(self, batch_id: int) -> list[TableLocation]:
        """The tables a batch may have added files to: its targets and the apply stage's appends."""
        appends = [self.tables.table(name) for name in (CHANGE_LOG, PROGRESS, QUARANTINE)]
        return [*self._targets_written_in(batch_id), *appends]

    def _write_targets(self, spark: SparkSession, batch_id: int, writes: list) -> None:
        """One write per target table (_target_write, _merge_from_executors), the tables side
        by side: a MERGE of a few rows is seconds of driver-side planning and small jobs
        (measured: ~80% of a batch over five tables, bench/README.md), and the tables are
        independent (each has its own txnAppId). Each thread has its own session
        (spark.newSession(): same SparkContext, own SQL conf) because the txnAppId/txnVersion
        of a write are session confs (pipelines/delta/delta_txn.py). Keeping those sessions across
        batches instead was measured: no gain."""
        if len(writes) <= 1:
            for write in writes:
                write(spark, batch_id)
            return
        with ThreadPoolExecutor(max_workers=min(len(writes), TABLE_THREADS),
                                thread_name_prefix="write") as pool:
            futures = [pool.submit(write, spark.newSession(), batch_id) for write in writes]
            for future in futures:
                future.result()  # the first failure propagates; the batch is retried whole

    def _merge_from_executors(self, spark: SparkSession, batch_id: int, part: ExecutorReplay) -> None:
        """An executor-replayed table's rows, MERGEd by `_row_id` straight from the executors:
        ONE Delta write idempotent per (txn app id, batch_id), as a plan's."""
        self.known.ensure(spark, part.path, part.target)
        self.known.mirrors.pop(part.path, None)  # the mirror is of an older version now
        merge = partial(writes_of(part.target).merge, spark, part.merge_rows(), part.merge_names)
        self._commit(spark, batch_id, part.target, part.path, lambda session: TargetWrite(session, merge))

    @staticmethod
    def _with_snapshot_rows(plans: list[TablePlan],
                            snapshot_rows: Sequence[ExecutorReplay]) -> list[TablePlan]:
        """The plans less those of tables whose snapshot rows the executors made: the driver
        replayed only their run's start, which the rows' one write takes over (the table made
        anew; its schema, when the batch changes it)."""
        parts = {part.path: part for part in snapshot_rows}
        for plan in plans:
            if plan.path in parts:
                if plan.upserts or plan.deletes:
                    raise RuntimeError(f"{plan.target.qualified_name}: "
                                       "driver rows beside executor snapshot rows")
                parts[plan.path].replace, parts[plan.path].carried = plan.replace, plan.carried
                parts[plan.path].truncated = plan.truncated
        return [plan for plan in plans if plan.path not in parts]

    def _write_snapshot_rows(self, spark: SparkSession, batch_id: int, part: ExecutorReplay) -> None:
        """A table's snapshot rows made on the executors (pipelines/apply/snapshot_rows.py): ONE
        Delta write idempotent per (txn app id, batch_id), as its mode writes them
        (pipelines/apply/modes/)."""
        self.known.ensure(spark, part.path, part.target)
        self.known.mirrors.pop(part.path, None)
        write = writes_of(part.target).snapshot_rows_write(spark, part)
        self._commit(spark, batch_id, part.target, part.path, lambda session: TargetWrite(session, write))

    def _target_write(self, plan: TablePlan) -> Callable[[SparkSession, int], None]:
        """The batch's rows of one target as ONE Delta write idempotent per (txn app id,
        batch_id): the write its mode makes of the plan (pipelines/apply/modes/), made in the
        session it commits in."""
        make = partial(writes_of(plan.target).target_write, self.mirrored, plan=plan)
        return partial(self._commit, target=plan.target, path=plan.path, make=make)

    def _commit(self, spark: SparkSession, batch_id: int, target: Target, path: TableLocation,
                make: Callable[[SparkSession], TargetWrite]) -> None:
        """The write `make` gives in `spark`, in the target's Delta transaction of the batch
        (pipelines/delta/delta_txn.py), its version kept for _cdc_progress, and the mirror kept
        if it equals the commit."""
        write = make(spark)
        with delta_txn(write.session, table_app_id(self.app_id, target.delta_table), batch_id):
            forget_last_commit_version(write.session)
            write.write(path)
            version = last_commit_version(write.session)
        self.versions.wrote(batch_id, target.delta_table, version)
        self.known.ready.add(path)  # (made by its write when the write carried it to a new schema)
        self.known.written[path] = batch_id
        self.mirrored.keep(path, write.mirror, write.base, version)

    def append_progress(self, spark: SparkSession, batch_id: int, changes, caught_up: Mapping[str, int],
                         more: Mapping[str, tuple[Mapping[str, Any], int]] | None = None,
                         versions: Mapping[str, int] | None = None) -> None:
        """Append-only: one row per (source, batch); the latest batch_id per (app_id, source) is
        the source's position (libs.reads.lineage_sql.latest_progress). An append is one cheap commit
        where a MERGE would rewrite files. A heartbeat-only source repeats its last row, read
        from the table once per process and then kept. `versions`: the batch's table_versions."""
        path = self.tables.table(PROGRESS)
        idle = ({s for s in caught_up if s not in self._progress} - {c.source for c in changes}
                - set(more or ()))
        if idle:
            self._progress.update(D.last_progress(spark, path, self.app_id, idle))
        rows = progress_rows(changes, self.app_id, batch_id, caught_up, self._progress, more, versions)
        if not rows:
            return
        # add_columns: caught_up_as_of is newer than progress tables of earlier releases
        self.appends.append(arrow_frame(spark, rows, D.progress_schema()), path,
                            table_app_id(self.app_id, PROGRESS), batch_id, add_columns=True)
        self._progress.update((r["source"], r) for r in rows)

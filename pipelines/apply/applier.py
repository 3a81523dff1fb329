"""DeltaApplier: the foreachBatch writer of the apply stage (STYLE.md practice 10).

    applier = DeltaApplier(catalog, config, app_id="cdc-replicate")
    query = changes.writeStream.foreachBatch(applier).option("checkpointLocation", ...).start()

One call = one micro-batch of change records (spark_schema("change_record")) holding every
change of COMPLETE transactions, in any order. Steps:

1. Collect the batch's changes to the driver (commit_ts as epoch micros: no local-zone
   conversion), group them by source table, each group in commit order (libs.apply.plan).
2. Per target table (libs.targets catalog, target.delta_table under config.delta_root, or in
   config.catalog_schema by that name: libs/tables/table_location.py):
   skip it when Delta already committed (f"{app_id}:{delta_table}", batch_id) on it (a retried batch); else
   read ONLY the rows the batch can touch (touched_rows.py: filters or semi-joins of the Delta table with the
   batch's key values / before images, libs.apply.plan.lookups_for), replay the changes on them with
   libs.replay in commit order (config.exec_mode), repeat the read for key values the replay produced but did
   not read (fixed point). Nothing is written yet: in strict mode a ReplayStopped becomes ApplyStopped here
   (table, key, GTID/position), and the batch has written nothing (tables are created lazily, at write time).
3. Writes, each idempotent per (app_id, batch_id), in this order (batch_writes.py):
   `_cdc_change_log`, `_cdc_quarantine`, ONE write per target table, `_cdc_progress`.
   An SCD2 target (`history: scd2`) reads its open versions and writes the batch's versions
   (libs/replay/versions.py, modes/scd2.py). Each target's one write is its mode's (modes/writes.py).
   Calling again with the same batch_id changes nothing.

Decisions:
* A row/statement change for a table without a target declaration raises UndeclaredTableError
  (config.undeclared_tables "fail", default) or is logged + quarantined ("quarantine"); DDL of
  undeclared tables (and database-level DDL) is only recorded in the change log.
* config.statement_format_policy == "quarantine" makes every rows-only target quarantine statement-format DML
  (WL#3303, libs.replay.logging_format); "fail" keeps each target's own `on_statement`.
* config.exec_mode "idempotent": 1032/1062 go to `_cdc_quarantine` (kind row_not_found /
  duplicate_key, reason naming table, key, GTID and position) and to the change log with outcome
  skipped_* / overwritten; "strict": ApplyStopped.
* Changes of several sources for one table are replayed source by source (no global order).
* DDL is recorded in the change log and versions the source schemas (prepare_batch, `_cdc_schema_history`). A
  TRUNCATE TABLE of a target's table empties it at its place in commit order
  (libs.apply.plan.with_ddl_truncates). A target derived from the source follows the rest
  (config.schema_changes, batch_ddl.py): its Delta table is carried to the batch's end schema (nothing
  written) before the batch's rows are read, the rows' images take the end's column names, a table renamed to
  it in the batch brings its rows, all in ONE commit of the table (issue #39); online schema change tools'
  ended working tables leave no Delta table (pipelines/apply/shadow_writes.py).
"""

from __future__ import annotations

import dataclasses
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, Mapping, Sequence

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.pandas.types import to_arrow_schema

import pipelines.apply.tables as D
from libs.apply.merge_scope import ReadRecorder
from libs.apply.modes.select import mode_of
from libs.apply.plan import Lookups, group_changes, replay_touched
from libs.contracts.change import ROW_OPS, Change, Op, changes_of
from libs.apply.change_log import change_log_table
from libs.config.job import SCHEMA_CHANGES_FAIL, SCHEMA_CHANGES_IGNORE, JobConfig
from libs.runtime.gc_pause import gc_paused
from libs.runtime.step_clock import StepClock
from libs.apply.lag import AppliedBatch, commit_lags, oldest_commits
from libs.reads.lineage_sql import quote_identifier
from libs.replay import ReplayError, ReplayResult, ReplayStopped
from libs.replay.lineage import ChangeLogEntry
from libs.replay.logging_format import on_statement_under_policy
from libs.snapshot.tables import SnapshotTable
from libs.stages.assembly import DdlEvent
from libs.tables.system_tables import APP_ID, PROGRESS
from libs.tables.table_location import TableLocation, TableNameError
from libs.targets import TargetCatalog, TargetConfigError
from libs.targets.decoding import DecodeHints
from libs.targets.model import DELETE_HARD, Target
from pipelines.apply import batch_writes  # its TABLE_THREADS, read per batch (bench/apply_steady.py sets it)
from pipelines.apply.batch_ddl import BatchDdl
from pipelines.apply.batch_writes import BatchWrites
from pipelines.apply.executor_parts import replay_parts, split_batch
from pipelines.apply.known_targets import KnownTargets
from pipelines.apply.modes.writes import writes_of
from pipelines.apply.schema_changes import Carried
from pipelines.apply.schema_history_table import SchemaHistoryTable
from pipelines.apply.shadow_writes import ended_shadows
from pipelines.apply.snapshot_fusion import SnapshotFusion, plan_fusion
from pipelines.apply.source_schemas import SourceSchemas
from libs.apply.stops import ApplyStopped, SourceTargetStopped, TargetNameStopped
from libs.apply.table_work import BatchTables, TableWork, table_work
from pipelines.apply.target_writes import TablePlan
from pipelines.apply.touched_rows import read_touched


REPLAYED_OPS = ROW_OPS | {Op.SNAPSHOT}  # the row changes the job's metrics count

@dataclasses.dataclass
class _Replayed:
    """What the replay of one batch gives the writes, nothing written yet."""

    counts: dict[str, Counter] = dataclasses.field(default_factory=dict)
    log: list[ChangeLogEntry] = dataclasses.field(default_factory=list)
    log_rows: list[int] = dataclasses.field(default_factory=list)  # row of `collected` per log entry
    errors: list[ReplayError] = dataclasses.field(default_factory=list)
    plans: list[TablePlan] = dataclasses.field(default_factory=list)
    gone: list[TableLocation] = dataclasses.field(default_factory=list)  # tools' ended working tables
    replayed: Counter = dataclasses.field(default_factory=Counter)  # delta table -> row changes replayed


def _take(out: _Replayed, work: TableWork, replayed: tuple[TablePlan, ReplayResult] | None) -> None:
    """One table's replay into the batch's `out`: its change-log entries, errors, counts and plan."""
    if replayed is None:  # undeclared table: (entry, error) per change
        out.log.extend(entry for entry, _ in work.undeclared)
        out.errors.extend(error for _, error in work.undeclared if error is not None)
        return
    plan, result = replayed
    # A renamed table's inherited changes are replayed on it but logged once, under the table
    # that logged them (issue #17 item 5).
    out.log.extend(result.change_log[work.evolve.inherited if work.evolve else 0:])
    out.errors.extend(result.quarantine)
    out.replayed[work.target.delta_table] += sum(c.op in REPLAYED_OPS for c in work.changes)
    work.tally.update(rows_upserted=len(plan.upserts), rows_deleted=len(plan.deletes),
                      quarantined=len(result.quarantine))
    if plan.path not in out.gone:  # an ended working table's rows are in its table
        out.plans.append(plan)


class DeltaApplier:
    """Named callable (STYLE.md practice 10): `applier(changes_df, batch_id) -> counts`.

    Returns {"<db>.<table>": {<op>: n changes, "rows_upserted": n, "rows_deleted": n,
    "quarantined": n, "already_applied": 0|1}} for every source table of the batch.
    """

    def __init__(self, catalog: TargetCatalog, config: JobConfig, app_id: str = APP_ID,
                 tables_read: Callable[[int, Mapping], None] = lambda batch_id, oldest: None,
                 steps: StepClock | None = None):
        self.catalog, self.config, self.app_id = catalog, config, app_id
        self.steps = steps or StepClock()  # the batch's split (libs/runtime/step_clock.py), the sink's too
        self.tables_read = tables_read  # the metrics' lag gauge: the tables about to be written
        self.declared = catalog  # by hand; self.catalog adds the targets derived from the source
        self.tables = config.table_root  # where every table lives
        self.undeclared = config.undeclared_tables
        # What the declarations know that a binlog may not say: the rows stage decodes with it.
        self.decode_hints = DecodeHints(catalog.targets)
        self.source_schemas = SourceSchemas(self.tables, app_id)  # snapshot tables: schemas, positions
        # their versions after each DDL
        self.schema_history = SchemaHistoryTable(self.tables, app_id, config.tables.selects)
        self.known = KnownTargets(app_id, config.target_mirror_max_rows,  # kept from batch to batch
                                  config.writes.deletion_vectors, config.writes.deletion_vector_commits,
                                  config.writes.position_index_max_rows, config.target_copy_max_rows)
        self.ddl = BatchDdl(config, catalog, self.schema_history.history, self.known)
        self.writes = BatchWrites(config, app_id, self.known, self.steps)
        self.last_batch = AppliedBatch()  # the last batch's lag and quarantined changes, for the metrics

    @property
    def quarantine_app_id(self) -> str:
        return self.writes.quarantine.app_id

    # -- the foreachBatch entry point --------------------------------------------------------------
    def prepare_batch(self, spark: SparkSession, truncates: Sequence[Change], batch_id: int,
                      ddl: Sequence[DdlEvent] = ()) -> DecodeHints:
        """Before the batch's rows are decoded: keep its snapshot `table` records (their truncate
        change records), whose source schemas may add targets, and version the source schemas
        with its DDL (`_cdc_schema_history`). The declarations and the schema versions tell the
        rows stage what the binlog does not say. Returns the decode hints for the batch. Idempotent."""
        started = [SnapshotTable.of_change(c) for c in truncates]
        new = self.source_schemas.keep(spark, started, batch_id)
        update = self.schema_history.update(spark, self.source_schemas.tables.all(), started, ddl, batch_id)
        if self.config.schema_changes == SCHEMA_CHANGES_FAIL:
            self.ddl.refuse_schema_changes(batch_id, update.changes)
        if new or update.changed:
            followed = (self.schema_history.history if self.config.schema_changes != SCHEMA_CHANGES_IGNORE
                        else None)
            try:
                self.catalog = self.source_schemas.catalog(self.declared, self.config.tables, followed)
            except TargetConfigError as exc:
                raise SourceTargetStopped(batch_id, exc) from None
            self.decode_hints = DecodeHints(self.catalog.targets, self.schema_history.layouts())
        return self.decode_hints

    def plan_fusion(self, spark: SparkSession, batch_id: int, chunks: list,
                    batch_has_ddl: bool) -> SnapshotFusion | None:
        """After prepare_batch, before the rows stage: the tables whose snapshot chunks (their
        BatchSummary groups, snapshot_fusion.chunk_groups) skip it."""
        return plan_fusion(spark, batch_id, chunks, batch_has_ddl, self.catalog, self.config, self.known,
                           lambda declared: self._located(declared, batch_id))

    @gc_paused()  # the batch's changes, images and rows alive at once (libs/runtime/gc_pause.py)
    def __call__(self, changes_df: DataFrame, batch_id: int, caught_up: Mapping[str, int] | None = None,
                 fused: SnapshotFusion | None = None) -> dict:
        """`caught_up`: source -> epoch micros of the batch's heartbeat, when it held one
        (_cdc_progress.caught_up_as_of, schemas/heartbeat_record.avsc); `fused`: plan_fusion's, run."""
        caught_up = caught_up or {}
        spark = changes_df.sparkSession
        with self.steps.step("split"):
            # big tables' parts stay on the executors
            split = split_batch(changes_df, self.catalog, self.config,
                                lambda declared: self._located(declared, batch_id), fused)
        with self.steps.step("collect"):
            collected = self._collect(split.rest)                    # Arrow, commit_ts as epoch micros
            changes = changes_of(collected)                          # the replay's input
        self.tables_read(batch_id, oldest_commits(changes, split.oldest))
        if not changes and not split.tables:
            self.record_caught_up(spark, batch_id, caught_up)
            return {}
        with self.steps.step("replay"):  # the touched rows' reads included
            self.prepare_batch(spark, [c for c in changes if c.op == Op.TRUNCATE], batch_id)
            replayed = self._replay_all(spark, batch_id, changes)    # nothing written yet
            executor = replay_parts(spark, batch_id, split, self.known, self.config,  # nor here
                                    self.source_schemas, changes)
        try:
            log_table = None
            if replayed.log:  # its Spark schema: D.change_log_schema()
                with self.steps.step("change_log"):
                    log_table = change_log_table(collected, replayed.log, replayed.log_rows, batch_id,
                                                 to_arrow_schema(D.change_log_schema()))
            self.writes.write(spark, batch_id, changes, log_table, replayed.errors, replayed.plans, caught_up,
                              executor, split.lasts, replayed.gone)
        finally:
            for part in executor:
                part.unpersist()
        quarantined = Counter(e.lineage.source for e in replayed.errors) + split.quarantined(executor)
        self.last_batch = AppliedBatch(
            commit_lags(changes, time.time(), split.oldest), quarantined,
            Counter({p.target.delta_table: p.folded for p in executor if p.folded}),
            replayed.replayed + Counter({p.target.delta_table: p.replayed for p in executor}))
        return split.counts(executor, replayed.counts)

    def record_caught_up(self, spark: SparkSession, batch_id: int, caught_up: Mapping[str, int]) -> None:
        """A batch without changes: only the heartbeats' sources' progress moves."""
        self.last_batch = AppliedBatch()  # nothing applied: no lag, nothing quarantined
        if caught_up:
            with self.steps.step("progress"):
                self.writes.append_progress(spark, batch_id, [], caught_up)
            with self.steps.step("maintenance"):  # a file per heartbeat batch
                self.writes.maintenance.after_batch(spark, [self.tables.table(PROGRESS)])

    def _replay_all(self, spark: SparkSession, batch_id: int, changes: list[Change]) -> _Replayed:
        """Every table's changes replayed on its touched rows. Tables are read (a Spark job
        each) and replayed side by side, like the writes (BatchWrites); results are taken in
        table order, so the change log's order is fixed."""
        out = _Replayed()
        with ThreadPoolExecutor(max_workers=batch_writes.TABLE_THREADS, thread_name_prefix="replay") as pool:
            groups = group_changes(changes)
            renames = self.ddl.renames(self.catalog, groups, batch_id)
            shadows = ended_shadows(self.config, self.schema_history.history, self.catalog, groups, renames)
            out.gone = [self._location(self.catalog.get(*name), batch_id) for name in sorted(shadows)]
            names = sorted({*groups, *renames})
            tables = self._batch_tables(spark, batch_id, names)
            work = [w for name in names
                    if (w := table_work(tables, name, groups, renames, out.counts)) is not None]
            evolving = [(w.target, w.path, w.evolve) for w in work if w.evolve is not None]
            carried = self.ddl.carry_all(spark, pool, batch_id, evolving)  # nothing written yet
            replays = [pool.submit(self._replay_table, spark, batch_id, w.target, w.path, w.changes,
                                   carried.get(w.path)) if w.target is not None else None for w in work]
            row_of = {id(change): row for row, change in enumerate(changes)}
            for w, replay in zip(work, replays):
                # one entry per change, in order
                out.log_rows.extend(row_of[id(change)] for change in w.logged)
                _take(out, w, replay.result() if replay is not None else None)
        return out

    def _batch_tables(self, spark: SparkSession, batch_id: int,
                      names: Sequence[tuple[str, str]]) -> BatchTables:
        """What the batch's table work knows (libs/apply/table_work.py), read before it: the
        targets of `names` this batch committed already (a retried batch)."""
        tables = BatchTables(self.catalog, self.ddl, self.config.tables.selects,
                             self.source_schemas.since_snapshot,
                             lambda declared: self._located(declared, batch_id), self.undeclared)
        committed = set()
        for name in names:
            declared = self.catalog.get(*name) if self.config.tables.selects(*name) else None
            try:
                target, path = tables.located(declared) if declared is not None else (None, None)
            except TargetNameStopped:
                continue  # stops the batch in the table work, if the batch has changes for it
            if path is not None and self.known.already_committed(spark, path, target, batch_id):
                committed.add(path)
        return dataclasses.replace(tables, committed=frozenset(committed))

    def _located(self, declared: Target, batch_id: int) -> tuple[Target, TableLocation]:
        target = self._effective(declared)
        return target, self._location(target, batch_id)

    def _location(self, target: Target, batch_id: int) -> TableLocation:
        try:
            return self.tables.table(target.delta_table)
        except TableNameError as exc:
            raise TargetNameStopped(f"batch {batch_id}: {target.qualified_name}: {exc}") from None

    # -- read + replay (nothing written) -------------------------------------------------------
    def _effective(self, target: Target) -> Target:
        """The target with the job's statement_format_policy applied (WL#3303, one rule:
        libs.replay.logging_format.on_statement_under_policy), and the job's tables.delete where
        its declarations leave `delete` unset."""
        on_statement = on_statement_under_policy(target.on_statement, self.config.statement_format_policy)
        # the declarations' `delete:` first; unset and the job's hard: None, hard (no new Target);
        # an SCD2 target keeps a deleted row as its closed version already (README "History targets")
        soft_default = self.config.tables.delete != DELETE_HARD and mode_of(target).takes_job_delete
        delete = target.delete or (self.config.tables.delete if soft_default else None)
        if on_statement == target.on_statement and delete == target.delete:
            return target
        return dataclasses.replace(target, on_statement=on_statement, delete=delete)

    @staticmethod
    def _collect(changes_df: DataFrame) -> pa.Table:
        """The batch's changes as one Arrow table, commit_ts as epoch micros (no local-zone
        conversion). The replay takes them as Changes (libs/contracts/change.changes_of, ~15-25 us per
        change; Row.asDict(recursive=True) over nested images cost ~0.4 ms); the change log
        copies its columns from the table itself (libs.apply.change_log)."""
        columns = [F.unix_micros("commit_ts").alias("commit_ts") if c == "commit_ts"
                   else F.col(quote_identifier(c)) for c in changes_df.columns]
        return changes_df.select(*columns).toArrow()

    def _replay_table(self, spark: SparkSession, batch_id: int, target: Target, path: TableLocation,
                      changes: Sequence[Change], carried: Carried | None = None):
        mode, writes = mode_of(target), writes_of(target)  # libs/apply/modes/, pipelines/apply/modes/
        # The rows the batch touches: of the table carried to the batch's end schema (nothing of it
        # written yet, pipelines/apply/schema_changes.py), else of the stored table or its mirror.
        rows = carried or self.known  # (a Carried is a tuple of three: never false)
        read = rows.reader(spark, path, target, mode.mirrors, self._read_touched,
                           # since_last_truncate: nothing to read. No changes at all: a table renamed
                           # in the batch with none before or after the rename (carried, nothing replayed)
                           starts_anew=bool(changes) and changes[0].op == Op.TRUNCATE,
                           positions=writes.writes_at_positions)
        recorder = ReadRecorder(read) if read is not None else None  # what a MERGE can match
        try:
            result = replay_touched(target, changes, recorder, mode=self.config.exec_mode, run=mode.replay)
        except ReplayStopped as stop:
            raise ApplyStopped(batch_id, target.delta_table, stop.error) from None
        read_rows = recorder.rows if recorder is not None else ()
        return writes.plan(target, path, result, read_rows, changes, carried), result

    @staticmethod
    def _read_touched(spark: SparkSession, path: TableLocation, target: Target,
                      lookups: Lookups) -> list[dict[str, Any]]:
        return read_touched(spark, path, target, lookups)  # a method: benchmarks and tests wrap it



"""DeltaApplier: the foreachBatch writer of the apply stage (STYLE.md practice 10).

    applier = DeltaApplier(catalog, config, app_id="cdc-replicate")
    query = changes.writeStream.foreachBatch(applier).option("checkpointLocation", ...).start()

One call = one micro-batch of change records (spark_schema("change_record")) holding every
change of COMPLETE transactions, in any order. Steps:

1. Collect the batch's changes to the driver (commit_ts as epoch micros: no local-zone
   conversion), group them by source table, each group in commit order (libs.apply_plan).
2. Per target table (libs.targets catalog, target.delta_table under config.delta_root, or in
   config.catalog_schema by that name: libs/table_location.py):
   skip it when Delta already committed (f"{app_id}:{delta_table}", batch_id) on it (a retried
   batch); else read ONLY the rows the batch can touch (touched_rows.py: filters or semi-joins of the Delta
   table with the batch's key values / before images, libs.apply_plan.lookups_for), replay the changes on them
   with libs.replay in commit order (config.exec_mode), repeat the read for key values the
   replay produced but did not read (fixed point). Nothing is written yet: in strict mode a
   ReplayStopped becomes ApplyStopped here (table, key, GTID/position), and the batch has
   written nothing (tables are created lazily, at write time).
3. Writes, each idempotent per (app_id, batch_id) (appends: commit marks,
   pipelines/marked_appends.py; target writes: Delta's txnAppId/txnVersion), in this order:
   `_cdc_change_log` (append; before any target, so a target already written implies its
   change log is committed), `_cdc_quarantine` (append, pipelines/quarantine.py), ONE write
   per target table (a MERGE by `_row_id`: delete / update / insert; or, for a small mirrored
   table, the whole table replaced by its new content: target_writes.py), then `_cdc_progress`
   (append, one row per source).
   Calling again with the same batch_id changes nothing.

Decisions:
* A row/statement change for a table without a target declaration raises UndeclaredTableError
  (config.undeclared_tables "fail", default) or is logged + quarantined ("quarantine"); DDL of
  undeclared tables (and database-level DDL) is only recorded in the change log.
* config.statement_format_policy == "quarantine" makes every rows-only target quarantine
  statement-format DML (WL#3303, libs.replay.logging_format); "fail" keeps each target's own
  `on_statement`.
* config.exec_mode "idempotent": 1032/1062 go to `_cdc_quarantine` (kind row_not_found /
  duplicate_key, reason naming table, key, GTID and position) and to the change log with outcome
  skipped_* / overwritten; "strict": ApplyStopped.
* Changes of several sources for one table are replayed source by source (no global order).
* DDL is recorded in the change log and versions the source schemas (prepare_batch,
  `_cdc_schema_history`). A TRUNCATE TABLE of a target's table empties it at its place in commit
  order (libs.apply_plan.with_ddl_truncates). A target derived from the source follows the rest
  (config.schema_changes, README "Schema changes"): its Delta table is carried to the batch's end
  schema before the batch's rows are read (pipelines/apply/schema_changes.py, its own idempotent
  commit: the one write that precedes a strict-mode stop of the same batch), the rows' images
  take the end's column names (libs/schema_history/column_identity.py), a table renamed to it in
  the batch brings its rows (libs/schema_history/table_renames.py).
"""

from __future__ import annotations

import dataclasses
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from functools import partial, reduce
from typing import Any, Mapping, NamedTuple, Sequence

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.pandas.types import to_arrow_schema

import pipelines.apply.tables as D
from libs.apply.merge_scope import ReadRecorder, merge_scope
from libs.apply_partition import executor_eligible
from libs.apply_plan import (
    Lookups, change_sort_key, group_changes, progress_rows, quarantine_row, replay_touched, undeclared,
    with_ddl_truncates,
)
from libs.arrow_rows import rows as arrow_rows
from libs.bad_input import BinlogPosition
from libs.change_log_table import change_log_table
from libs.config import SCHEMA_CHANGES_FAIL, SCHEMA_CHANGES_IGNORE, JobConfig
from libs.gc_pause import gc_paused
from libs.lag import commit_lags
from libs.lineage_sql import quote_identifier
from libs.replay import LINEAGE_COLUMN, ROW_ID_COLUMN, ReplayError, ReplayStopped
from libs.replay.lineage import ChangeLogEntry
from libs.replay.logging_format import on_statement_under_policy
from libs.config_errors import one_line
from libs.replay.images import FILLED
from libs.replay.lineage import Lineage
from libs.schema_history.column_identity import (ADD, SUPERSEDED, EndNames, column_steps, creates, end_names,
                                                 with_names_at_end)
from libs.schema_history.evolution import AddedColumn, SchemaEvolutionError, converted_by_server
from libs.schema_history.history import Version, changes_columns
from libs.schema_history.table_schema import TableSchema
from libs.schema_history.table_renames import RenameChainError, TableRename, table_renames
from libs.schema_history.target_schemas import version_columns
from libs.snapshot.changes import SNAPSHOT_OP, TRUNCATE
from libs.snapshot.protocol import Position
from libs.snapshot.tables import SnapshotTable, since_last_truncate
from libs.stream_assembly import DdlEvent
from libs.stops import JobStopped
from libs.system_tables import APP_ID, APPLY_STAGE, CHANGE_LOG, PROGRESS, QUARANTINE, table_app_id
from libs.table_location import TableLocation, TableNameError
from libs.table_names import table_key
from libs.target_mirror import MirrorOverflow, TargetMirror
from libs.targets import TargetCatalog, TargetConfigError
from libs.targets.decoding import DecodeHints
from libs.targets.model import Target
from libs.targets.values import fill_value
from pipelines.apply.target_writes import (
    OP_COLUMN, TablePlan, merge, merge_source, mirrored_upserts, new_rows_write, whole_table,
)
from pipelines.apply.batch_split import BatchSplit, BatchSummary, rows_at_most
from pipelines.apply.executor_replay import ExecutorReplay, replay_on_executors
from pipelines.apply.maintenance import TableMaintenance
from pipelines.apply.schema_changes import evolve_target
from pipelines.apply.schema_history_table import SchemaHistoryTable
from pipelines.apply.source_schemas import SourceSchemas
from pipelines.apply.touched_rows import load_mirror, read_touched
from pipelines.apply.write_features import enable_deletion_vectors
from pipelines.arrow_frames import arrow_frame
from pipelines.delta_tables import writer
from pipelines.delta_txn import (
    committed_version, delta_txn, forget_last_commit_version, last_commit_version, replaceable, table_version,
)
from pipelines.marked_appends import MarkedAppends
from pipelines.quarantine import QuarantineWriter, now_utc, quarantine_schema

TABLE_THREADS = 4  # target tables replayed, and written, side by side (see _write_targets)


class ApplyStopped(JobStopped):
    """The batch cannot be applied (strict mode); nothing of it was written. Carries the
    ReplayError (table, key, lineage with GTID/file/position), as text when an executor met it."""

    def __init__(self, batch_id: int, delta_table: str, error: ReplayError | str):
        self.batch_id, self.delta_table, self.error = batch_id, delta_table, error
        super().__init__(f"apply stopped in batch {batch_id}, Delta table {delta_table}: {error}")


class SourceTargetStopped(JobStopped):
    """A target derived from a source schema cannot be built: the YAML override does not fit the
    source's SHOW CREATE TABLE (a `defaults` column it lacks, ...) or that DDL cannot be parsed.
    Raised before anything of the batch is written; every restart stops here until it is fixed."""

    def __init__(self, batch_id: int, error: TargetConfigError):
        super().__init__(f"batch {batch_id}: a target from the source schema: {error}")


class TargetNameStopped(JobStopped):
    """A target's Delta table name cannot name a table where the job keeps them (a catalog
    table name is letters, digits and '_': libs/table_location.py)."""


class SchemaChangeStopped(JobStopped):
    """A DDL the job does not follow: schema_changes 'fail', or a type change Delta cannot hold
    value for value. Names the DDL and its position."""


class _Evolve(NamedTuple):
    """What carries a followed target's Delta table to the batch's end schema."""

    start: EndNames  # each Delta column's name at the batch's end
    ddl: Lineage  # the batch's last DDL of the table: an added column's CURRENT_TIMESTAMP, the accept setting
    where: str  # the table and DDL, for an error
    exists: bool  # the table exists at the batch's end (a DROP leaves its Delta table as it was)
    copy_from: TableLocation | None  # renamed from this table in the batch: its rows are this one's
    inherited: int = 0  # the replayed changes' first ones came from copy_from's table: logged there
    added: Mapping[str, AddedColumn] = {}  # the batch's ADD COLUMN of each column new at its end
    converted: tuple[str, ...] = ()  # columns a MODIFY of the batch converts as only the server knows how


@dataclasses.dataclass
class _TableWork:
    """One table's part of a batch, before its replay runs."""

    tally: Counter
    logged: list  # its changes the change log keeps under this table, in order
    undeclared: list | None = None  # no target: (entry, error) per change
    target: Target | None = None  # else what _replay_table replays: the target, its path, the changes
    path: TableLocation | None = None
    changes: list | None = None
    evolve: _Evolve | None = None  # carries a followed target to the batch's end schema first


@dataclasses.dataclass
class _Replayed:
    """What the replay of one batch gives the writes, nothing written yet."""

    counts: dict[str, Counter] = dataclasses.field(default_factory=dict)
    log: list[ChangeLogEntry] = dataclasses.field(default_factory=list)
    log_rows: list[int] = dataclasses.field(default_factory=list)  # row of `collected` per log entry
    errors: list[ReplayError] = dataclasses.field(default_factory=list)
    plans: list[TablePlan] = dataclasses.field(default_factory=list)


def _accept_setting(source: str, file: str, pos: int) -> str:
    """accept_schema_changes_through for the DDL at file:pos, as a user writes it."""
    return f"accept_schema_changes_through: {{{source}: '{file}:{pos}'}}"


def _fills_at_add(target: Target, added: Mapping[str, tuple[AddedColumn, int]]) -> list[tuple[int, str, Any]]:
    """(index of the ADD in the batch, target column, the value its ADD gave the rows there were)."""
    return [(k, target.column(end).name, fill_value(column.column or target.column(end), column.at))
            for end, (column, k) in added.items() if target.has_column(end)]


def _filled(change: Mapping[str, Any], index: int, fills: Sequence[tuple[int, str, Any]]) -> Mapping[str, Any]:
    """A row inserted before a column's ADD in the batch (a snapshot row too) holds what that
    ADD gave it, not the target's DEFAULT at the batch's end (libs/replay/images.py FILLED)."""
    if not fills or change["op"] not in ("insert", SNAPSHOT_OP):
        return change
    filled = {name: value for k, name, value in fills if k > index}
    return {**change, FILLED: filled} if filled else change


class DeltaApplier:
    """Named callable (STYLE.md practice 10): `applier(changes_df, batch_id) -> counts`.

    Returns {"<db>.<table>": {<op>: n changes, "rows_upserted": n, "rows_deleted": n,
    "quarantined": n, "already_applied": 0|1}} for every source table of the batch.
    """

    def __init__(self, catalog: TargetCatalog, config: JobConfig, app_id: str = APP_ID):
        self.catalog, self.config, self.app_id = catalog, config, app_id
        self.declared = catalog  # by hand; self.catalog adds the targets derived from the source
        self.tables = config.table_root  # where every table lives
        self.undeclared = config.undeclared_tables
        # What the declarations know that a binlog may not say: the rows stage decodes with it.
        self.decode_hints = DecodeHints(catalog.targets)
        self.source_schemas = SourceSchemas(self.tables, app_id)  # snapshot tables: schemas, positions
        # their versions after each DDL
        self.schema_history = SchemaHistoryTable(self.tables, app_id, config.tables.selects)
        self._ready: set[str] = set()  # target paths known to exist (no CREATE per batch)
        self._schema_checked: set[str] = set()  # existing targets whose schema matches the mapping
        # path -> the last batch this applier wrote there: a later batch id cannot be committed
        # yet (batch ids only grow), so its Delta txn lookup (a snapshot read) is skipped.
        self._written: dict[str, int] = {}
        self._progress: dict[str, dict] = {}  # source -> its last _cdc_progress row (heartbeat-only batches repeat it)
        self.last_batch = AppliedBatch()  # the last batch's lag and quarantined changes, for the metrics
        # path -> every row of the target as of its Delta version (libs/target_mirror.py): the
        # batch's touched rows without a Delta read. Paths in _unmirrored outgrew the cap.
        self._mirrors: dict[str, TargetMirror] = {}
        self._unmirrored: set[str] = set()
        self.appends = MarkedAppends()
        self.quarantine = QuarantineWriter(self.tables, app_id, APPLY_STAGE)
        self.maintenance = TableMaintenance(config.writes)  # compaction and VACUUM after batches

    @property
    def quarantine_app_id(self) -> str:
        return self.quarantine.app_id

    # -- the foreachBatch entry point --------------------------------------------------------------
    def prepare_batch(self, spark: SparkSession, truncates: Sequence[Mapping[str, Any]], batch_id: int,
                      ddl: Sequence[DdlEvent] = ()) -> DecodeHints:
        """Before the batch's rows are decoded: keep its snapshot `table` records (their truncate
        change records), whose source schemas may add targets, and version the source schemas
        with its DDL (`_cdc_schema_history`). The declarations and the schema versions tell the
        rows stage what the binlog does not say. Returns the decode hints for the batch. Idempotent."""
        started = [SnapshotTable.of_change(c) for c in truncates]
        new = self.source_schemas.keep(spark, started, batch_id)
        update = self.schema_history.update(spark, self.source_schemas.tables.all(), started, ddl, batch_id)
        if self.config.schema_changes == SCHEMA_CHANGES_FAIL:
            self._refuse_schema_changes(batch_id, update.changes)
        if new or update.changed:
            followed = self.schema_history.history if self.config.schema_changes != SCHEMA_CHANGES_IGNORE else None
            try:
                self.catalog = self.source_schemas.catalog(self.declared, self.config.tables, followed)
            except TargetConfigError as exc:
                raise SourceTargetStopped(batch_id, exc) from None
            self.decode_hints = DecodeHints(self.catalog.targets, self.schema_history.layouts())
        return self.decode_hints

    def _refuse_schema_changes(self, batch_id: int, changes) -> None:
        """schema_changes 'fail': the first DDL of the batch that changes a followed table's
        columns or keys, and that accept_schema_changes_through does not cover, stops the job
        before anything of the batch is written."""
        tables = self.config.tables
        for event, change in changes:
            name = change.name
            followed = name is not None and (self.declared.get(name.database, name.table) is not None or (
                tables.from_source and tables.selects(name.database, name.table)))
            if not followed or not changes_columns(change):
                continue
            if self._accepted(event.source, event.file, event.pos):
                continue
            raise SchemaChangeStopped(f"batch {batch_id}: schema_changes is 'fail' and source {event.source}, "
                                      f"{event.file}:{event.pos} {change.kind} {name}: {one_line(event.statement)}. "
                                      f"Nothing of the batch was written. To follow it, set "
                                      f"{_accept_setting(event.source, event.file, event.pos)} "
                                      f"(or schema_changes to evolve or ignore)")

    def _accepted(self, source: str, file: str, pos: int) -> bool:
        """Is the DDL at file:pos within the job's accept_schema_changes_through for its source?"""
        through = dict(self.config.accept_schema_changes_through).get(source)
        return through is not None and BinlogPosition.of(file, pos) <= through

    def __call__(self, changes_df: DataFrame, batch_id: int, caught_up: Mapping[str, int] | None = None) -> dict:
        """`caught_up`: source -> epoch micros of the batch's heartbeat, when it held one
        (_cdc_progress.caught_up_as_of, schemas/heartbeat_record.avsc)."""
        with gc_paused():  # the batch's changes, images and rows alive at once (libs/gc_pause.py)
            return self._apply(changes_df, batch_id, caught_up or {})

    def _apply(self, changes_df: DataFrame, batch_id: int, caught_up: Mapping[str, int]) -> dict:
        spark = changes_df.sparkSession
        split = self._split(spark, changes_df, batch_id)        # big tables' parts stay on the executors
        collected = self._collect(split.rest)                    # Arrow, commit_ts as epoch micros
        changes = arrow_rows(collected)                          # dicts, the replay's input
        if not changes and not split.tables:
            self.record_caught_up(spark, batch_id, caught_up)
            return {}
        self.prepare_batch(spark, [c for c in changes if c["op"] == TRUNCATE], batch_id)
        replayed = self._replay_all(spark, batch_id, changes)    # nothing written yet
        executor = self._replay_on_executors(spark, batch_id, split)  # nothing written yet either
        try:
            log_table = None
            if replayed.log:  # its Spark schema: D.change_log_schema()
                log_table = change_log_table(collected, replayed.log, replayed.log_rows, batch_id,
                                             to_arrow_schema(D.change_log_schema()))
            self._write(spark, batch_id, changes, log_table, replayed.errors, replayed.plans, caught_up,
                        executor, split.lasts)
        finally:
            for part in executor:
                part.unpersist()
        self.maintenance.after_batch(spark, self._written_in(batch_id))  # the batch is committed
        quarantined = Counter(e.lineage.source for e in replayed.errors) + split.quarantined(executor)
        self.last_batch = AppliedBatch(commit_lags([*changes, *split.oldest], time.time()), quarantined)
        return {**{name: dict(c) for name, c in replayed.counts.items()}, **split.counts(executor)}

    def _split(self, spark: SparkSession, changes_df: DataFrame, batch_id: int) -> "BatchSplit":
        """Which tables' parts of the batch replay on the executors (libs/apply_partition.py,
        config.executor_apply_min_changes): one small aggregate of the batch, then the rest."""
        min_changes = self.config.executor_apply_min_changes
        at_most = rows_at_most(changes_df)  # no job: a small batch skips the aggregate (~150 ms)
        if min_changes is None or (at_most is not None and at_most < min_changes):
            return BatchSplit(changes_df)
        summary = BatchSummary.of(changes_df)
        tables = {}
        for (database, table), ops in summary.ops.items():
            target = self.catalog.get(database, table)
            if (target is None or not self.config.tables.selects(database, table)
                    or not executor_eligible(ops, sum(ops.values()), min_changes, summary.has_ddl)):
                continue
            target = self._effective(target)
            tables[(database, table)] = (target, self._location(target, batch_id))
        return BatchSplit(changes_df, summary, tables)

    def _replay_on_executors(self, spark: SparkSession, batch_id: int, split: "BatchSplit") -> list[ExecutorReplay]:
        """Each executor table's part replayed where its changes are (pipelines/apply/executor_replay.py);
        a strict-mode stop raises here, before anything of the batch is written."""
        out: list[ExecutorReplay] = []
        # the cluster's cores (local[2]: 2), not spark.sql.shuffle.partitions (200 on Databricks,
        # which AQE coalesces for joins but not for an explicit repartition)
        parallelism = spark.sparkContext.defaultParallelism
        try:
            for (database, table), (target, path) in sorted(split.tables.items()):
                if self._already_committed(spark, path, target, batch_id):
                    split.already_applied.add((database, table))
                    continue
                exists = path in self._ready or D.is_delta_table(spark, path)
                if exists and path not in self._schema_checked:
                    self._check_existing(spark, path, target)
                part = replay_on_executors(spark, split.of_table(database, table), (database, table), target, path, exists,
                                           self.config.exec_mode, batch_id,
                                           self.source_schemas.tables.positions(database, table),
                                           parallelism)
                out.append(part)
                if part.stop is not None:
                    raise ApplyStopped(batch_id, target.delta_table, part.stop)
        except BaseException:
            for part in out:
                part.unpersist()
            raise
        return out

    def record_caught_up(self, spark: SparkSession, batch_id: int, caught_up: Mapping[str, int]) -> None:
        """A batch without changes: only the heartbeats' sources' progress moves."""
        self.last_batch = AppliedBatch()  # nothing applied: no lag, nothing quarantined
        if caught_up:
            self._append_progress(spark, batch_id, [], caught_up)
            self.maintenance.after_batch(spark, [self.tables.table(PROGRESS)])  # a file per heartbeat batch

    def _written_in(self, batch_id: int) -> list[TableLocation]:
        """The tables a batch may have added files to: its targets and the apply stage's appends."""
        targets = [path for path, written in self._written.items() if written == batch_id]
        return [*targets, *(self.tables.table(name) for name in (CHANGE_LOG, PROGRESS, QUARANTINE))]

    def _replay_all(self, spark: SparkSession, batch_id: int, changes: list[dict]) -> _Replayed:
        """Every table's changes replayed on its touched rows. Tables are read (a Spark job
        each) and replayed side by side, like the writes (_write_targets); results are taken in
        table order, so the change log's order is fixed."""
        out = _Replayed()
        row_of = {id(change): row for row, change in enumerate(changes)}
        work: list[_TableWork] = []
        selects = self.config.tables.selects
        with ThreadPoolExecutor(max_workers=TABLE_THREADS, thread_name_prefix="replay") as pool:
            groups = group_changes(changes)
            renames = self._table_renames(groups, batch_id)
            for database, table in sorted({*groups, *renames}):
                rename = renames.get((database, table))
                group = [*(rename.inherited if rename else ()), *groups.get((database, table), ())]
                tally = out.counts.setdefault(table_key(database, table), Counter(c["op"] for c in group))
                if not selects(database, table):  # JobConfig.tables: not replicated
                    tally["not_selected"] = len(group)
                    continue
                current = self._since_snapshot(groups.get((database, table), ()), rename)
                if len(current) < len(group):  # already in the table's snapshot rows (libs/snapshot/protocol.py)
                    tally["superseded_by_snapshot"] = len(group) - len(current)
                    group = current
                    if not group:
                        continue
                target = self.catalog.get(database, table)
                if target is None:
                    entries = [undeclared(change, self.undeclared) for change in group]
                    tally["quarantined"] += sum(error is not None for _, error in entries)
                    work.append(_TableWork(tally, group, undeclared=entries))
                    continue
                target = self._effective(target)
                path = self._location(target, batch_id)
                if self._already_committed(spark, path, target, batch_id):
                    tally["already_applied"] = 1
                    continue
                # A renamed table's inherited changes lead the group; the change log keeps them
                # under the table that logged them (the rest as logged: `own`).
                inherited = {id(c) for c in rename.inherited} & {id(c) for c in group} if rename else set()
                own = [c for c in group if id(c) not in inherited]
                replayed, evolve = with_ddl_truncates(group, server_version=self._server_version), None
                if self._follows(target) and (rename is not None or any(c["op"] in ("ddl", TRUNCATE) for c in group)):
                    replayed, evolve = self._across_ddl(database, table, own, rename, inherited)
                work.append(_TableWork(tally, own, target=target, path=path, changes=replayed, evolve=evolve))
            self._evolve_all(spark, pool, batch_id, [w for w in work if w.evolve is not None])
            replays = [pool.submit(self._replay_table, spark, batch_id, w.target, w.path, w.changes)
                       if w.target is not None else None for w in work]
            for w, replay in zip(work, replays):
                out.log_rows.extend(row_of[id(change)] for change in w.logged)  # one entry per change, in order
                if replay is None:  # undeclared table: (entry, error) per change
                    out.log.extend(entry for entry, _ in w.undeclared)
                    out.errors.extend(error for _, error in w.undeclared if error is not None)
                    continue
                plan, result = replay.result()
                # A renamed table's inherited changes are replayed on it but logged once, under
                # the table that logged them (issue #17 item 5).
                out.log.extend(result.change_log[w.evolve.inherited if w.evolve else 0:])
                out.errors.extend(result.quarantine)
                w.tally.update(rows_upserted=len(plan.upserts), rows_deleted=len(plan.deletes),
                               quarantined=len(result.quarantine))
                out.plans.append(plan)
        return out

    def _since_snapshot(self, own: Sequence[Mapping[str, Any]], rename: TableRename | None) -> list:
        """A table's changes not in its snapshot rows (libs/snapshot/protocol.py): from its last
        snapshot on. A table renamed to this name in the batch brings its changes before the
        rename along, unless this name's snapshot came after the rename."""
        fresh = lambda changes: [c for c in changes if not self.source_schemas.tables.is_superseded(c)]  # noqa: E731
        current = since_last_truncate(fresh(own))
        if rename is None or (current and current[0]["op"] == TRUNCATE
                              and change_sort_key(current[0]) > change_sort_key(rename.change)):
            return current
        return [*since_last_truncate(fresh(rename.inherited)), *current]

    def _follows(self, target: Target | None) -> bool:
        return (target is not None and target.follows_source
                and self.config.schema_changes != SCHEMA_CHANGES_IGNORE)

    def _table_renames(self, groups, batch_id: int) -> dict[tuple[str, str], TableRename]:
        """The batch's renames of a followed table to a followed name (libs/schema_history/table_renames.py)."""
        if self.config.schema_changes == SCHEMA_CHANGES_IGNORE:  # no table follows its source
            return {}
        try:
            renames = table_renames(groups, self._server_version)
        except RenameChainError as exc:
            raise SchemaChangeStopped(f"batch {batch_id}: {exc}. Go past it with schema_changes: ignore, then "
                                      f"snapshot the renamed tables again (cdc-ship --resnapshot)") from None
        return {name: r for name, r in renames.items()
                if self._follows(self.catalog.get(*name)) and self._follows(self.catalog.get(r.old.database, r.old.table))}

    def _across_ddl(self, database: str, table: str, own: list, rename: TableRename | None,
                    inherited: set[int]) -> tuple[list, "_Evolve"]:
        """A followed table's changes with their names as at the batch's end, and what carries
        its Delta table there (libs/schema_history/column_identity.py). A table renamed to this
        name in the batch: its changes before the rename (`inherited`, the ids of those a
        snapshot did not supersede) come first, as this table's."""
        # The rename starts this name anew at its place: the name's changes before it were
        # another table's (a swap's old table, or one dropped before), superseded here.
        arrival = rename.change if rename is not None and all(c is not rename.change for c in own) else None
        walked = own if arrival is None else sorted([*own, arrival], key=change_sort_key)
        per_change, start = end_names(walked, database, table, before=partial(self._schema_before, database, table),
                                      refused=partial(self._refused, database, table),
                                      server_version=self._server_version)
        added = self._added_columns(database, table, walked, per_change)
        fills = _fills_at_add(self.catalog.get(database, table), added)
        named = [_filled(with_names_at_end(c, names), k, fills)
                 for k, (c, names) in enumerate(zip(walked, per_change)) if c is not arrival]
        replayed = with_ddl_truncates(named, self._starts_anew, self._server_version)  # a CREATE starts it anew
        copy_from = None
        if rename is not None:
            old = rename.old
            after_rename = per_change[next(k for k, c in enumerate(walked) if c is rename.change)]
            per_earlier, start = end_names(rename.earlier, old.database, old.table, at_end=after_rename,
                                           before=partial(self._schema_before, old.database, old.table),
                                           server_version=self._server_version)
            # The name's changes before the rename were another table's: recorded, none applied.
            at = change_sort_key(rename.change)
            replayed = [converted if change_sort_key(n) >= at else n if n["op"] == "ddl" else {**n, "op": SUPERSEDED}
                        for n, converted in zip(named, replayed)]
            # A TRUNCATE or CREATE names the old table: it is told a truncate under that name.
            earlier = with_ddl_truncates(rename.earlier, self._starts_anew, self._server_version)
            replayed = [{**with_names_at_end(e, names), "database": database, "table": table}
                        for c, e, names in zip(rename.earlier, earlier, per_earlier)
                        if id(c) in inherited or e["op"] == TRUNCATE] + replayed
            copy_from = self.tables.table(self.catalog.get(old.database, old.table).delta_table)
        last = ([c for c in own if c["op"] in ("ddl", TRUNCATE)] or [rename.change])[-1]
        lineage = Lineage.of_change(last)
        where = (f"source {lineage.source}, {lineage.binlog_file}:{lineage.binlog_pos}, {database}.{table} "
                 f"({one_line(last['statement'] or '')})")
        versions = self.schema_history.history.versions(lineage.source, database, table)
        exists = bool(versions) and versions[-1].schema is not None  # not dropped by the batch
        return replayed, _Evolve(start, lineage, where, exists, copy_from, len(replayed) - len(own),
                                 {name: column for name, (column, _k) in added.items()},
                                 self._converted(database, table, walked, start, lineage.source))

    def _converted(self, database: str, table: str, walked: Sequence[Mapping[str, Any]], start: EndNames,
                   source: str) -> tuple[str, ...]:
        """The columns whose type the batch's DDL changed in a way the server converts their
        values and Delta would not (evolution.converted_by_server): "'a' (INT -> YEAR)"."""
        first = next((c for c in walked if c["op"] == "ddl"), None)
        before = self._schema_before(database, table, first) if first is not None else None
        after = self.schema_history.history.latest(source, database, table)
        if before is None or after is None:
            return ()
        now = {c.name.lower(): c for c in version_columns(after, source)}
        out = []
        for old in version_columns(before, first["source"]):
            end = start.end(old.name)
            new = now.get(end.lower()) if end is not None else None
            if new is not None and converted_by_server(old, new):
                out.append(f"{new.name!r} ({old.mysql_type} -> {new.mysql_type})")
        return tuple(out)

    def _added_columns(self, database: str, table: str, walked: Sequence[Mapping[str, Any]],
                       per_change: Sequence[EndNames]) -> dict[str, tuple[AddedColumn, int]]:
        """Each column a DDL of the batch added that reaches its end (by folded end name): its
        definition at that ALTER and the ALTER's time, with which the server filled the rows that
        existed then (the last ADD of a name re-added), and the ALTER's index in `walked`. A
        column the table's declaration by hand declares is filled with the declared definition
        (libs/schema_history/declared_schemas.py)."""
        declared = self.declared.get(database, table)
        out: dict[str, tuple[AddedColumn, int]] = {}
        for k, (change, names) in enumerate(zip(walked, per_change)):  # names: the end's after the change
            version = self._version_at(database, table, change) if change["op"] == "ddl" else None
            if version is None or version.schema is None or version.error is not None:
                continue
            steps = column_steps(change["statement"] or "", change["database"], database, table,
                                 self._schema_before(database, table, change), self._server_version(change))
            columns = None
            for name in (s.new for s in steps if s.kind == ADD):
                end = names.end(name)
                if end is None:
                    continue
                if columns is None:
                    columns = {c.name.lower(): c for c in version_columns(version.schema, change["source"])}
                own = declared is not None and declared.has_column(name)
                out[end.lower()] = (AddedColumn(None if own else columns.get(name.lower()),
                                                Lineage.of_change(change).commit_ts), k)
        return out

    def _schema_before(self, database: str, table: str, change) -> TableSchema | None:
        """The table's schema before a DDL change record (the history's)."""
        return self.schema_history.history.at(change["source"], database, table, _position(change))

    def _version_at(self, database: str, table: str, change) -> Version | None:
        """The version a DDL change record gave the table in the history, if it gave one."""
        at = _position(change)
        return next((v for v in self.schema_history.history.versions(change["source"], database, table)
                     if v.position == at), None)

    def _server_version(self, change) -> str | None:
        """The source server's version the history read a DDL change record's statement with."""
        return self.schema_history.history.server_version(change["source"], _position(change))

    def _refused(self, database: str, table: str, change) -> bool:
        """Did the schema history refuse this DDL for the table (HistoryError, or a rename from a
        table the job does not replicate)?"""
        version = self._version_at(database, table, change)
        return version is not None and version.error is not None

    def _starts_anew(self, change) -> bool:
        """A CREATE TABLE of the change's table that the schema history applied (not IF NOT
        EXISTS of a table that was there)."""
        return (creates(change["statement"] or "", change["database"], change["database"], change["table"],
                        self._server_version(change))
                and self._version_at(change["database"], change["table"], change) is not None)

    def _location(self, target: Target, batch_id: int) -> TableLocation:
        try:
            return self.tables.table(target.delta_table)
        except TableNameError as exc:
            raise TargetNameStopped(f"batch {batch_id}: {target.qualified_name}: {exc}") from None

    def _already_committed(self, spark: SparkSession, path: TableLocation, target: Target,
                           batch_id: int) -> bool:
        """Did Delta commit this batch on the target already (a batch replayed after a crash)?
        Asked of the Delta log unless this applier itself wrote an earlier batch there."""
        if self._written.get(path, batch_id) < batch_id:
            return False
        committed = committed_version(spark, path, table_app_id(self.app_id, target.delta_table))
        return committed is not None and committed >= batch_id

    # -- read + replay (nothing written) -------------------------------------------------------
    def _effective(self, target: Target) -> Target:
        """The target with the job's statement_format_policy applied (WL#3303, one rule:
        libs.replay.logging_format.on_statement_under_policy)."""
        on_statement = on_statement_under_policy(target.on_statement, self.config.statement_format_policy)
        if on_statement == target.on_statement:
            return target
        return dataclasses.replace(target, on_statement=on_statement)

    @staticmethod
    def _collect(changes_df: DataFrame) -> pa.Table:
        """The batch's changes as one Arrow table, commit_ts as epoch micros (no local-zone
        conversion). The replay takes them as dicts through libs.arrow_rows (~15-25 us per
        change; Row.asDict(recursive=True) over nested images cost ~0.4 ms); the change log
        copies its columns from the table itself (libs.change_log_table)."""
        columns = [F.unix_micros("commit_ts").alias("commit_ts") if c == "commit_ts"
                   else F.col(quote_identifier(c)) for c in changes_df.columns]
        return changes_df.select(*columns).toArrow()

    def _evolve_all(self, spark: SparkSession, pool: ThreadPoolExecutor, batch_id: int,
                    work: list["_TableWork"]) -> None:
        """Every followed target carried to the batch's end schema, before any row is read.
        Copies of renamed tables first: a swap (t TO t_old, t_new TO t) rewrites t, which t_old
        copies; after a kill, the rewrite of t is only ever committed after that copy."""
        copies = [w for w in work if w.evolve.copy_from is not None]
        for wave in (copies, [w for w in work if w.evolve.copy_from is None]):
            for done in [pool.submit(self._evolve, spark.newSession(), batch_id, w.target, w.path, w.evolve)
                         for w in wave]:
                done.result()

    def _replay_table(self, spark: SparkSession, batch_id: int, target: Target, path: TableLocation,
                      changes: Sequence[Mapping[str, Any]]):
        if path not in self._ready and path not in self._schema_checked and D.is_delta_table(spark, path):
            self._check_existing(spark, path, target)
        truncated = changes[0]["op"] == TRUNCATE  # the table starts anew (since_last_truncate): nothing to read
        if truncated:
            read = None
            self._mirrors.pop(path, None)
        else:
            read = self._reader(spark, path, target)
        recorder = ReadRecorder(read) if read is not None else None
        try:
            result = replay_touched(target, changes, recorder, mode=self.config.exec_mode)
        except ReplayStopped as stop:
            raise ApplyStopped(batch_id, target.delta_table, stop.error) from None
        upserts = [{**w.to_record(), OP_COLUMN: "upsert"} for w in result.upserts]
        deletes = [{ROW_ID_COLUMN: d.row_id, LINEAGE_COLUMN: d.lineage.to_dict(), OP_COLUMN: "delete"}
                   for d in result.deletes]
        only_new = not deletes and all(w.lineage.operation == SNAPSHOT_OP for w in result.upserts)
        replace = any(c["op"] == TRUNCATE for c in changes)  # the rows left after the last truncate
        scope = merge_scope(target, recorder.rows if recorder is not None else ())
        return TablePlan(target, path, upserts, deletes, replace=replace, append=only_new, scope=scope), result

    def _check_existing(self, spark: SparkSession, path: TableLocation, target: Target) -> None:
        """Once per existing table and process: its schema fits the mapping, and it has the
        write path's table features (pipelines/apply/write_features.py)."""
        D.check_target_schema(spark, path, target)
        if self.config.writes.deletion_vectors and enable_deletion_vectors(spark, path):
            self._mirrors.pop(path, None)  # the upgrade is a commit: the mirror's version is behind
        self._schema_checked.add(path)

    def _evolve(self, spark: SparkSession, batch_id: int, target: Target, path: TableLocation,
                evolve: "_Evolve") -> None:
        """The target's Delta table in the batch's end schema before its rows are read
        (pipelines/apply/schema_changes.py); a table the batch created exists, empty."""
        try:
            ddl = evolve.ddl
            if evolve_target(spark, path, target, evolve.start, ddl.commit_ts, evolve.where, self.app_id, batch_id,
                             evolve.copy_from, evolve.added, self._accepted(ddl.source, ddl.binlog_file, ddl.binlog_pos),
                             evolve.converted):
                self._mirrors.pop(path, None)
        except SchemaEvolutionError as exc:
            way_past = (f"snapshot the table again (cdc-ship --resnapshot --include '{target.database}\\."
                        f"{target.table}'), then restart with {_accept_setting(ddl.source, ddl.binlog_file, ddl.binlog_pos)}: "
                        f"the batch writes the DEFAULT, the "
                        f"snapshot after it the server's values" if exc.computed else
                        "recreate the table from a new snapshot, or set schema_changes to ignore")
            raise SchemaChangeStopped(f"batch {batch_id}: {exc}; nothing of the batch was written to this "
                                      f"table. The way past: {way_past}") from None
        if evolve.exists:
            self._ensure_target(spark, TablePlan(target, path, [], []))

    def _reader(self, spark: SparkSession, path: TableLocation, target: Target):
        """How the replay reads the rows a batch touches: from the mirror, from Delta, or None
        (no table yet: nothing to read)."""
        mirror = self._mirror(spark, path, target)
        if mirror is not None:
            return mirror.select if mirror.version is not None else None
        if path in self._ready or D.is_delta_table(spark, path):
            return partial(self._read_touched, spark, path, target)
        return None

    def _mirror(self, spark: SparkSession, path: TableLocation, target: Target) -> TargetMirror | None:
        """The table's mirror when it equals the table's latest Delta version; else a fresh one
        (the whole table read at that version) unless the table is too big (then None: reads
        per batch for the rest of this process)."""
        max_rows = self.config.target_mirror_max_rows
        if max_rows == 0 or path in self._unmirrored:
            return None
        version = table_version(spark, path)
        mirror = self._mirrors.get(path)
        if mirror is not None and mirror.version == version:
            return mirror
        self._mirrors.pop(path, None)
        try:
            mirror = load_mirror(spark, path, target, version, max_rows)
        except MirrorOverflow:
            self._unmirrored.add(path)
            return None
        self._mirrors[path] = mirror
        return mirror

    @staticmethod
    def _read_touched(spark: SparkSession, path: TableLocation, target: Target,
                      lookups: Lookups) -> list[dict[str, Any]]:
        return read_touched(spark, path, target, lookups)  # a method: benchmarks and tests wrap it

    # -- writes (each idempotent per (app_id, batch_id)) ---------------------------------------------
    def _write(self, spark: SparkSession, batch_id: int, changes, log_table: pa.Table | None, errors,
               plans, caught_up: Mapping[str, int], executor: Sequence[ExecutorReplay] = (),
               lasts: Mapping[str, tuple[Mapping[str, Any], int]] | None = None) -> None:
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
        writes = [partial(self._write_target, plan=p) for p in plans if p.upserts or p.deletes or p.replace]
        writes += [partial(self._merge_from_executors, part=part) for part in executor]
        self._write_targets(spark, batch_id, writes)
        self._append_progress(spark, batch_id, changes, caught_up, lasts)

    def _write_targets(self, spark: SparkSession, batch_id: int, writes: list) -> None:
        """One write per target table (_write_target, _merge_from_executors), the tables side
        by side: a MERGE of a few rows is seconds of driver-side planning and small jobs
        (measured: ~80% of a batch over five tables, bench/README.md), and the tables are
        independent (each has its own txnAppId). Each thread has its own session
        (spark.newSession(): same SparkContext, own SQL conf) because the txnAppId/txnVersion
        of a write are session confs (pipelines/delta_txn.py). Keeping those sessions across
        batches instead was measured: no gain."""
        if len(writes) <= 1:
            for write in writes:
                write(spark, batch_id)
            return
        with ThreadPoolExecutor(max_workers=min(len(writes), TABLE_THREADS), thread_name_prefix="write") as pool:
            futures = [pool.submit(write, spark.newSession(), batch_id) for write in writes]
            for future in futures:
                future.result()  # the first failure propagates; the batch is retried whole

    def _merge_from_executors(self, spark: SparkSession, batch_id: int, part: ExecutorReplay) -> None:
        """An executor-replayed table's rows, MERGEd by `_row_id` straight from the executors:
        ONE Delta write idempotent per (txn app id, batch_id), as _write_target's."""
        plan = TablePlan(part.target, part.path, [], [])
        self._ensure_target(spark, plan)
        self._mirrors.pop(part.path, None)  # the mirror is of an older version now
        with delta_txn(spark, table_app_id(self.app_id, part.target.delta_table), batch_id):
            merge(spark, part.merge_rows(), part.merge_names, part.path)
        self._written[part.path] = batch_id

    def _ensure_target(self, spark: SparkSession, plan: TablePlan) -> bool:
        """True when this call created the table (empty, at version 0)."""
        if plan.path in self._ready:
            return False
        created = D.ensure_target(spark, plan.path, plan.target, self.config.writes.deletion_vectors)
        self._ready.add(plan.path)
        return created

    def _write_target(self, spark: SparkSession, batch_id: int, plan: TablePlan) -> None:
        """The batch's rows of one target, committed as ONE Delta write idempotent per
        (txn app id, batch_id): a whole-table overwrite when the target is mirrored, small
        (config.target_overwrite_max_rows) and still at the mirror's version, else a MERGE by
        `_row_id`. Both give the same table; the overwrite skips the MERGE's planning and its
        scan/rewrite jobs (~1.5 s -> ~0.6 s per small table, bench/merge_vs_overwrite.py)."""
        created = self._ensure_target(spark, plan)
        rows, source_schema, names = merge_source(plan)
        if plan.replace or plan.append:  # a snapshot: the table anew, or rows no stored row can match
            mirror, base = None, None
            self._mirrors.pop(plan.path, None)
            write = new_rows_write(spark, plan)
        else:
            mirror, base = self._advance_mirror(plan, rows, created)
            write = self._overwrite(spark, plan, mirror, base)
            if write is None and plan.inserts_only:  # no stored row can match: an append
                write = new_rows_write(spark, plan)
        if write is None:
            write = partial(merge, spark, spark.createDataFrame(rows, source_schema), names, scope=plan.scope)
        with delta_txn(spark, table_app_id(self.app_id, plan.target.delta_table), batch_id):
            forget_last_commit_version(spark)
            write(plan.path)
            version = last_commit_version(spark)
        self._written[plan.path] = batch_id
        # The mirror equals the commit only if nothing else committed since its version.
        if mirror is not None and base is not None and version == base + 1:
            mirror.version = version
            self._mirrors[plan.path] = mirror

    def _advance_mirror(self, plan: TablePlan, rows: pa.Table,
                        created: bool) -> tuple[TargetMirror | None, int | None]:
        """The target's mirror with the batch's rows applied (taken out of _mirrors: back in
        only once it equals the commit), and the Delta version it was at before them."""
        mirror = self._mirrors.pop(plan.path, None)
        if mirror is None:
            return None, None
        # A table absent at the batch's start and created just now by us is empty at version
        # 0, as the (empty) mirror is.
        base = 0 if mirror.version is None and created else mirror.version
        try:
            mirror.apply(mirrored_upserts(plan, rows), [d[ROW_ID_COLUMN] for d in plan.deletes], None)
        except MirrorOverflow:
            self._unmirrored.add(plan.path)
            return None, None
        return mirror, base

    def _overwrite(self, spark: SparkSession, plan: TablePlan, mirror: TargetMirror | None, base: int | None):
        """The whole-table overwrite of the target from its mirror, or None (a MERGE then)."""
        cap = self.config.target_overwrite_max_rows  # 0: always MERGE, even a table left empty
        if mirror is None or base is None or cap == 0 or len(mirror) > cap:
            return None
        table = whole_table(spark, mirror.whole_rows(), plan.target)
        # Asked last, right before the write: a foreign commit after this check and before the
        # overwrite's own snapshot (its planning, milliseconds) would still be replaced; one
        # after that snapshot fails the overwrite in Delta's conflict check (it read every file).
        if not replaceable(spark, plan.path, base):
            return None
        return writer(table, "overwrite")

    def _append_progress(self, spark: SparkSession, batch_id: int, changes, caught_up: Mapping[str, int],
                         more: Mapping[str, tuple[Mapping[str, Any], int]] | None = None) -> None:
        """Append-only: one row per (source, batch); the latest batch_id per (app_id, source) is
        the source's position (libs.lineage_sql.latest_progress). An append is one cheap commit
        where a MERGE would rewrite files. A heartbeat-only source repeats its last row, read
        from the table once per process and then kept."""
        path = self.tables.table(PROGRESS)
        idle = {s for s in caught_up if s not in self._progress} - {c["source"] for c in changes} - set(more or ())
        if idle:
            self._progress.update(D.last_progress(spark, path, self.app_id, idle))
        rows = progress_rows(changes, self.app_id, batch_id, caught_up, self._progress, more)
        if not rows:
            return
        # add_columns: caught_up_as_of is newer than progress tables of earlier releases
        self.appends.append(arrow_frame(spark, rows, D.progress_schema()), path,
                            table_app_id(self.app_id, PROGRESS), batch_id, add_columns=True)
        self._progress.update((r["source"], r) for r in rows)


class AppliedBatch(NamedTuple):
    """What the last batch applied, for the job's metrics (pipelines/job_metrics.py)."""

    commit_lags: dict[tuple[str, str], float] = {}  # (source, db.table) -> commit -> visible, s
    quarantined: Counter = Counter()  # source -> changes the replay quarantined


def _position(change: Mapping[str, Any]) -> Position:
    """Where a change record's event is in its source's binlog."""
    return Position(change["binlog_file"], int(change["binlog_pos"]))

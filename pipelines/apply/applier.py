"""DeltaApplier: the foreachBatch writer of the apply stage (STYLE.md practice 10).

    applier = DeltaApplier(catalog, config, app_id="cdc-replicate")
    query = changes.writeStream.foreachBatch(applier).option("checkpointLocation", ...).start()

One call = one micro-batch of change records (spark_schema("change_record")) holding every
change of COMPLETE transactions, in any order. Steps:

1. Collect the batch's changes to the driver (commit_ts as epoch micros: no local-zone
   conversion), group them by source table, each group in commit order (libs.apply_plan).
2. Per target table (libs.targets catalog, target.delta_table under config.delta_root):
   skip it when Delta already committed (f"{app_id}:{delta_table}", batch_id) on it (a retried
   batch); else read ONLY the rows the batch can touch (semi-joins of the Delta table with the
   batch's key values / before images, libs.apply_plan.lookups_for), replay the changes on them
   with libs.replay in commit order (config.exec_mode), repeat the read for key values the
   replay produced but did not read (fixed point). Nothing is written yet: in strict mode a
   ReplayStopped becomes ApplyStopped here (table, key, GTID/position), and the batch has
   written nothing (tables are created lazily, at write time).
3. Writes, each idempotent per (app_id, batch_id) (appends: commit marks,
   pipelines/marked_appends.py; target writes: Delta's txnAppId/txnVersion), in this order:
   `_cdc_change_log` (append; before any target, so a target already written implies its
   change log is committed), `_cdc_quarantine` (append), ONE write per target table (a MERGE
   by `_row_id`: delete / update / insert; or, for a small mirrored table, the whole table
   replaced by its new content: see _write_target), then `_cdc_progress` (append, one row per
   source).
   Calling again with the same batch_id changes nothing.

Decisions:
* A row/statement change for a table without a target declaration raises UndeclaredTableError
  (`undeclared="fail"`, default) or is logged + quarantined (`undeclared="quarantine"`); DDL of
  undeclared tables (and database-level DDL) is only recorded in the change log.
* config.statement_format_policy == "quarantine" makes every rows-only target quarantine
  statement-format DML (WL#3303, libs.replay.logging_format); "fail" keeps each target's own
  `on_statement`.
* config.exec_mode "idempotent": 1032/1062 go to `_cdc_quarantine` (kind row_not_found /
  duplicate_key, reason naming table, key, GTID and position) and to the change log with outcome
  skipped_* / overwritten; "strict": ApplyStopped.
* Changes of several sources for one table are replayed source by source (no global order).
* DDL is recorded, never executed: a changed source schema needs a changed target declaration.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from functools import partial, reduce
from typing import Any, Mapping, Sequence

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T
from pyspark.sql.pandas.types import to_arrow_schema

from libs.apply_plan import (
    UNDECLARED_FAIL, UNDECLARED_QUARANTINE, Lookups, group_changes, progress_rows, quarantine_row,
    replay_touched, undeclared,
)
from libs.arrow_rows import rows as arrow_rows
from libs.change_log_table import change_log_table
from libs.config import JobConfig
from libs.gc_pause import gc_paused
from libs.lineage_sql import quote_identifier
from libs.replay import LINEAGE_COLUMN, ROW_ID_COLUMN, ReplayError, ReplayStopped
from libs.replay.lineage import ChangeLogEntry
from libs.replay.logging_format import on_statement_under_policy
from libs.stops import JobStopped
from libs.target_mirror import MirrorOverflow, TargetMirror
from libs.targets.decoding import DecodeHints
from libs.targets import TargetCatalog
from libs.targets.model import Target
from pipelines.apply import tables as D
from pipelines.marked_appends import MarkedAppends

OP_COLUMN = "_cdc_op"  # MERGE source only: 'upsert' | 'delete'
TABLE_THREADS = 4  # target tables replayed, and written, side by side (see _write_targets)
# Key lookups up to these sizes read through a filter instead of a broadcast join
# (_read_touched): an IN list of one column, or an OR of per-tuple ANDs. Whole-image lookups
# (keyless tables, null-safe, every column) stay joins: as a filter, Delta's data-skipping
# expression over min/max/null counts outgrew whole-stage codegen (bench/apply_steady.py).
IN_LIST_MAX, OR_LIST_MAX = 5000, 16


class ApplyStopped(JobStopped):
    """The batch cannot be applied (strict mode); nothing of it was written. Carries the
    ReplayError (table, key, lineage with GTID/file/position)."""

    def __init__(self, batch_id: int, delta_table: str, error: ReplayError):
        self.batch_id, self.delta_table, self.error = batch_id, delta_table, error
        super().__init__(f"apply stopped in batch {batch_id}, Delta table {delta_table}: {error}")


@dataclasses.dataclass
class _TablePlan:
    target: Target
    path: str
    upserts: list[dict[str, Any]]
    deletes: list[dict[str, Any]]


def arrow_table(rows: Sequence[Mapping[str, Any]], schema: T.StructType) -> pa.Table:
    """Driver-side dict rows as one Arrow table of the Spark schema's Arrow types. Naive
    datetimes are UTC here (libs/targets/values.py), as Arrow's timestamp[us, UTC] reads them."""
    return pa.Table.from_pylist(list(rows), schema=to_arrow_schema(schema))


def arrow_frame(spark: SparkSession, rows: Sequence[Mapping[str, Any]], schema: T.StructType) -> DataFrame:
    """DataFrame of driver-side dict rows through one Arrow table: PySpark's row path verifies
    and pickles every nested value (seconds per 10k change-log rows, bench/README.md)."""
    return spark.createDataFrame(arrow_table(rows, schema), schema)


def _matches_any(table: DataFrame, columns: Sequence[str], tuples):
    """Column predicate: the row's key `columns` equal one of `tuples`. Literals go through
    D.to_spark_value: a naive datetime is UTC here, not the driver's zone."""
    cols = [table[quote_identifier(c)] for c in columns]
    if len(cols) == 1:
        return cols[0].isin([D.to_spark_value(t[0]) for t in tuples])
    return reduce(lambda a, b: a | b, (
        reduce(lambda a, b: a & b, (c == F.lit(D.to_spark_value(v)) for c, v in zip(cols, t)))
        for t in tuples))


def _col(alias: str, name: str):
    return F.col(f"{alias}.{quote_identifier(name)}")


class DeltaApplier:
    """Named callable (STYLE.md practice 10): `applier(changes_df, batch_id) -> counts`.

    Returns {"<db>.<table>": {<op>: n changes, "rows_upserted": n, "rows_deleted": n,
    "quarantined": n, "already_applied": 0|1}} for every source table of the batch.
    """

    def __init__(self, catalog: TargetCatalog, config: JobConfig, app_id: str = "cdc-replicate", *,
                 undeclared: str = UNDECLARED_FAIL):
        if undeclared not in (UNDECLARED_FAIL, UNDECLARED_QUARANTINE):
            raise ValueError(f"undeclared must be {UNDECLARED_FAIL!r} or {UNDECLARED_QUARANTINE!r}")
        self.catalog, self.config, self.app_id, self.undeclared = catalog, config, app_id, undeclared
        # What the declarations know that a binlog may not say: the rows stage decodes with it.
        self.decode_hints = DecodeHints(catalog.targets)
        self._ready: set[str] = set()  # target paths known to exist (no CREATE per batch)
        self._schema_checked: set[str] = set()  # existing targets whose schema matches the mapping
        # path -> the last batch this applier wrote there: a later batch id cannot be committed
        # yet (batch ids only grow), so its Delta txn lookup (a snapshot read) is skipped.
        self._written: dict[str, int] = {}
        # path -> every row of the target as of its Delta version (libs/target_mirror.py): the
        # batch's touched rows without a Delta read. Paths in _unmirrored outgrew the cap.
        self._mirrors: dict[str, TargetMirror] = {}
        self._unmirrored: set[str] = set()
        self.appends = MarkedAppends()

    @property
    def quarantine_app_id(self) -> str:
        """Not the stream stages' app id for `_cdc_quarantine` (ReplicateBatch): both may append
        there in one batch, and one's mark must not make the other's append look done."""
        return f"{D.txn_app_id(self.app_id, D.QUARANTINE)}:apply"

    # -- the foreachBatch entry point --------------------------------------------------------------
    def __call__(self, changes_df: DataFrame, batch_id: int) -> dict:
        with gc_paused():  # the batch's changes, images and rows alive at once (libs/gc_pause.py)
            return self._apply(changes_df, batch_id)

    def _apply(self, changes_df: DataFrame, batch_id: int) -> dict:
        spark = changes_df.sparkSession
        collected = self._collect(changes_df)
        changes = arrow_rows(collected)
        if not changes:
            return {}
        counts: dict[str, Counter] = {}
        log: list[ChangeLogEntry] = []
        log_rows: list[int] = []  # row of `collected` holding each log entry's change
        row_of = {id(change): row for row, change in enumerate(changes)}
        errors: list[ReplayError] = []
        plans: list[_TablePlan] = []
        # Tables are read (a Spark semi-join each) and replayed side by side, like the MERGEs
        # (_write_targets); results are taken in table order, so the change log's order is fixed.
        pending: list[tuple[Counter, list, Any]] = []
        with ThreadPoolExecutor(max_workers=TABLE_THREADS, thread_name_prefix="replay") as pool:
            for (database, table), group in group_changes(changes).items():
                tally = counts.setdefault(f"{database}.{table}", Counter(c["op"] for c in group))
                target = self.catalog.get(database, table)
                if target is None:
                    entries = [undeclared(change, self.undeclared) for change in group]
                    tally["quarantined"] += sum(error is not None for _, error in entries)
                    pending.append((tally, group, entries))
                    continue
                target = self._effective(target)
                path = D.table_path(self.config.delta_root, target.delta_table)
                if self._already_committed(spark, path, target, batch_id):
                    tally["already_applied"] = 1
                    continue
                pending.append((tally, group, pool.submit(self._replay_table, spark, batch_id, target, path, group)))
            for tally, group, work in pending:
                # one log entry per change, in the group's order (libs.change_log_table)
                log_rows.extend(row_of[id(change)] for change in group)
                if isinstance(work, list):  # undeclared table: (entry, error) per change
                    log.extend(entry for entry, _ in work)
                    errors.extend(error for _, error in work if error is not None)
                    continue
                plan, result = work.result()
                log.extend(result.change_log)
                errors.extend(result.quarantine)
                tally.update(rows_upserted=len(plan.upserts), rows_deleted=len(plan.deletes),
                             quarantined=len(result.quarantine))
                plans.append(plan)
        log_table = None
        if log:  # its Spark schema: D.change_log_schema()
            log_table = change_log_table(collected, log, log_rows, batch_id, to_arrow_schema(D.change_log_schema()))
        self._write(spark, batch_id, changes, log_table, errors, plans)
        return {name: dict(c) for name, c in counts.items()}

    def _already_committed(self, spark: SparkSession, path: str, target: Target, batch_id: int) -> bool:
        """Did Delta commit this batch on the target already (a batch replayed after a crash)?
        Asked of the Delta log unless this applier itself wrote an earlier batch there."""
        if self._written.get(path, batch_id) < batch_id:
            return False
        committed = D.committed_version(spark, path, D.txn_app_id(self.app_id, target.delta_table))
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

    def _replay_table(self, spark: SparkSession, batch_id: int, target: Target, path: str,
                      changes: Sequence[Mapping[str, Any]]):
        if path not in self._ready and path not in self._schema_checked and D.is_delta_table(spark, path):
            D.check_target_schema(spark, path, target)  # once per table and process
            self._schema_checked.add(path)
        mirror = self._mirror(spark, path, target)
        if mirror is not None:
            read = mirror.select if mirror.version is not None else None
        elif path in self._ready or D.is_delta_table(spark, path):
            read = partial(self._read_touched, spark, path, target)
        else:
            read = None  # no table yet: nothing to read
        try:
            result = replay_touched(target, changes, read, mode=self.config.exec_mode)
        except ReplayStopped as stop:
            raise ApplyStopped(batch_id, target.delta_table, stop.error) from None
        upserts = [{**w.to_record(), OP_COLUMN: "upsert"} for w in result.upserts]
        deletes = [{ROW_ID_COLUMN: d.row_id, LINEAGE_COLUMN: d.lineage.to_dict(), OP_COLUMN: "delete"}
                   for d in result.deletes]
        return _TablePlan(target, path, upserts, deletes), result

    def _mirror(self, spark: SparkSession, path: str, target: Target) -> TargetMirror | None:
        """The table's mirror when it equals the table's latest Delta version; else a fresh one
        (the whole table read at that version) unless the table is too big (then None: reads
        per batch for the rest of this process)."""
        max_rows = self.config.target_mirror_max_rows
        if max_rows == 0 or path in self._unmirrored:
            return None
        version = D.table_version(spark, path)
        mirror = self._mirrors.get(path)
        if mirror is not None and mirror.version == version:
            return mirror
        self._mirrors.pop(path, None)
        try:
            if version is None:
                mirror = TargetMirror([], None, max_rows)
            else:
                table = spark.read.format("delta").option("versionAsOf", version).load(path)
                if table.count() > max_rows:  # answered from Delta's file statistics
                    raise MirrorOverflow(path)
                mirror = TargetMirror(self._rows_of(table, target, LINEAGE_COLUMN), version, max_rows)
        except MirrorOverflow:
            self._unmirrored.add(path)
            return None
        self._mirrors[path] = mirror
        return mirror

    @staticmethod
    def _rows_of(table: DataFrame, target: Target, *extra: str) -> list[dict[str, Any]]:
        """Target columns + _row_id (+ `extra` columns) of `table`'s rows, through Arrow
        (D.python_rows)."""
        names = list(target.column_names) + [ROW_ID_COLUMN, *extra]
        return D.python_rows(table.select(*(F.col(quote_identifier(n)) for n in names)).toArrow())

    @classmethod
    def _read_touched(cls, spark: SparkSession, path: str, target: Target,
                      lookups: Lookups) -> list[dict[str, Any]]:
        """Target rows matching the lookups, only those collected. A few key tuples are a
        filter (one scan job; Delta skips files by min/max stats); many, and whole before
        images, are a broadcast left-semi join. Rows matched twice come back twice: the caller keys them by _row_id."""
        table = spark.read.format("delta").load(path)
        filters, parts = [], []
        for columns, tuples, null_safe in ([(k, v, False) for k, v in lookups.by_key.items()]
                                           + [(k, v, True) for k, v in lookups.by_image.items()]):
            if not tuples:
                continue
            if not null_safe and len(tuples) <= (IN_LIST_MAX if len(columns) == 1 else OR_LIST_MAX):
                filters.append(_matches_any(table, columns, tuples))
                continue
            fields = [T.StructField(f"_k{i}", table.schema[c].dataType, True) for i, c in enumerate(columns)]
            keys = arrow_frame(spark, [{f"_k{i}": v for i, v in enumerate(t)} for t in tuples], T.StructType(fields))
            conds = [(table[quote_identifier(c)].eqNullSafe(keys[f"_k{i}"]) if null_safe
                      else table[quote_identifier(c)] == keys[f"_k{i}"]) for i, c in enumerate(columns)]
            parts.append(table.join(F.broadcast(keys), on=reduce(lambda a, b: a & b, conds), how="left_semi"))
        if filters:
            parts.append(table.filter(reduce(lambda a, b: a | b, filters)))
        if not parts:
            return []
        return cls._rows_of(reduce(DataFrame.unionByName, parts), target)

    # -- writes (each idempotent per (app_id, batch_id)) ---------------------------------------------
    def _write(self, spark: SparkSession, batch_id: int, changes, log_table: pa.Table | None, errors,
               plans) -> None:
        root = self.config.delta_root
        if log_table is not None:
            self.appends.append(spark.createDataFrame(log_table, D.change_log_schema()),
                                D.table_path(root, D.CHANGE_LOG), D.txn_app_id(self.app_id, D.CHANGE_LOG), batch_id)
        if errors:
            path = D.table_path(root, D.QUARANTINE)
            now = dt.datetime.now(dt.timezone.utc)
            rows = [quarantine_row(e, now) for e in errors]
            self.appends.append(arrow_frame(spark, rows, D.quarantine_schema()), path, self.quarantine_app_id, batch_id)
        self._write_targets(spark, batch_id, [p for p in plans if p.upserts or p.deletes])
        self._append_progress(spark, batch_id, changes)

    def _write_targets(self, spark: SparkSession, batch_id: int, plans: list[_TablePlan]) -> None:
        """One write per target table (_write_target), the tables side by side: a MERGE of a
        few rows is seconds of driver-side planning and small jobs (measured: ~80% of a batch
        over five tables, bench/README.md), and the tables are independent (each has its own
        txnAppId). Each thread has its own session (spark.newSession(): same SparkContext, own
        SQL conf) because the txnAppId/txnVersion of a write are session confs
        (tables.delta_txn). Keeping those sessions across batches instead was measured: no gain
        (session 6)."""
        if len(plans) <= 1:
            for plan in plans:
                self._write_target(spark, batch_id, plan)
            return
        with ThreadPoolExecutor(max_workers=min(len(plans), TABLE_THREADS), thread_name_prefix="write") as pool:
            futures = [pool.submit(self._write_target, spark.newSession(), batch_id, plan) for plan in plans]
            for future in futures:
                future.result()  # the first failure propagates; the batch is retried whole

    def _ensure_target(self, spark: SparkSession, plan: _TablePlan) -> bool:
        """True when this call created the table (empty, at version 0)."""
        if plan.path in self._ready:
            return False
        created = D.ensure_target(spark, plan.path, plan.target)
        self._ready.add(plan.path)
        return created

    def _write_target(self, spark: SparkSession, batch_id: int, plan: _TablePlan) -> None:
        """The batch's rows of one target, committed as ONE Delta write idempotent per
        (txn app id, batch_id): a whole-table overwrite when the target is mirrored, small
        (config.target_overwrite_max_rows) and still at the mirror's version, else a MERGE by
        `_row_id`. Both give the same table; the overwrite skips the MERGE's planning and its
        scan/rewrite jobs (~1.5 s -> ~0.6 s per small table, bench/merge_vs_overwrite.py)."""
        created = self._ensure_target(spark, plan)
        schema = D.target_schema(plan.target)
        source_schema = T.StructType([T.StructField(f.name, f.dataType, True) for f in schema.fields]
                                     + [T.StructField(OP_COLUMN, T.StringType(), False)])
        names = [f.name for f in schema.fields] + [OP_COLUMN]
        rows = arrow_table([{n: r.get(n) for n in names} for r in plan.upserts + plan.deletes], source_schema)
        mirror = self._mirrors.pop(plan.path, None)  # back in only once it equals the commit
        # The Delta version the mirror equals: a table absent at the batch's start and created
        # just now by us is empty at version 0, as the (empty) mirror is.
        base = mirror.version if mirror is not None else None
        if mirror is not None and base is None and created:
            base = 0
        if mirror is not None:
            # In the representation of a Delta read (D.python_rows), as the mirror holds rows.
            kept = list(plan.target.column_names) + [ROW_ID_COLUMN, LINEAGE_COLUMN]
            upserts = D.python_rows(rows.filter(pc.equal(rows[OP_COLUMN], "upsert")).select(kept))
            try:
                mirror.apply(upserts, [d[ROW_ID_COLUMN] for d in plan.deletes], None)
            except MirrorOverflow:
                self._unmirrored.add(plan.path)
                mirror = None
        app_id = D.txn_app_id(self.app_id, plan.target.delta_table)
        cap = self.config.target_overwrite_max_rows  # 0: always MERGE, even a table left empty
        write = None
        if mirror is not None and base is not None and cap > 0 and len(mirror) <= cap:
            table = spark.createDataFrame(arrow_table(mirror.whole_rows(), schema), schema).coalesce(1)
            # Asked last, right before the write: a foreign commit after this check and before the
            # overwrite's own snapshot (its planning, milliseconds) would still be replaced; one
            # after that snapshot fails the overwrite in Delta's conflict check (it read every file).
            if D.replaceable(spark, plan.path, base):
                write = table.write.format("delta").mode("overwrite").save
        if write is None:
            write = partial(self._merge, spark, spark.createDataFrame(rows, source_schema), names)
        with D.delta_txn(spark, app_id, batch_id):
            D.forget_last_commit_version(spark)
            write(plan.path)
            version = D.last_commit_version(spark)
        self._written[plan.path] = batch_id
        # The mirror equals the commit only if nothing else committed since its version.
        if mirror is not None and base is not None and version == base + 1:
            mirror.version = version
            self._mirrors[plan.path] = mirror

    @staticmethod
    def _merge(spark: SparkSession, source: DataFrame, names: Sequence[str], path: str) -> None:
        from delta.tables import DeltaTable

        assignments = {quote_identifier(n): _col("s", n) for n in names[:-1]}
        is_delete = _col("s", OP_COLUMN) == F.lit("delete")
        (DeltaTable.forPath(spark, path).alias("t")
         .merge(source.alias("s"), _col("t", ROW_ID_COLUMN) == _col("s", ROW_ID_COLUMN))
         .whenMatchedDelete(condition=is_delete)
         .whenMatchedUpdate(set={k: v for k, v in assignments.items()
                                 if k != quote_identifier(ROW_ID_COLUMN)})
         .whenNotMatchedInsert(condition=~is_delete, values=assignments)
         .execute())

    def _append_progress(self, spark: SparkSession, batch_id: int, changes) -> None:
        """Append-only: one row per (source, batch); the latest batch_id per (app_id, source) is
        the source's position (libs.lineage_sql.latest_progress). An append is one cheap commit
        where a MERGE would rewrite files."""
        path = D.table_path(self.config.delta_root, D.PROGRESS)
        rows = progress_rows(changes, self.app_id, batch_id)
        self.appends.append(arrow_frame(spark, rows, D.progress_schema()), path,
                            D.txn_app_id(self.app_id, D.PROGRESS), batch_id)

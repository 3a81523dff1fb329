"""One target table's part of a batch replayed on the executors (issue #21 goal 1): nothing of
it is collected to the driver, and the work grows with the cluster.

    changes --keys (mapInArrow)--> + before/after key text, key values
            --key-changing UPDATEs (few, collected) -> components -> group per change
    target rows with a key the batch names (a join) + the changes, cogrouped by group
            --replay (applyInArrow: libs.apply.plan.replay_touched, the driver's own replay)-->
    one output frame: MERGE rows | change-log rows | quarantine rows | a strict-mode stop

The split is libs/apply/partition.py's: changes that can touch the same row share a group, and
a group's changes replay in commit order on the rows they touch, as on the driver. The applier
(pipelines/apply/applier.py) checks the output for a stop before anything of the batch is
written, then commits it like the driver's tables: one MERGE per table and batch, the change
log and quarantine rows in the batch's single append of each.
"""
from __future__ import annotations

import dataclasses
from collections import Counter
from functools import reduce
from typing import Any, Iterator, Mapping, NamedTuple

import numpy as np
import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T
from pyspark.sql.pandas.types import to_arrow_schema

import pipelines.apply.tables as D
from libs.apply.partition import components, key_text, split_key
from libs.apply.modes.select import mode_of
from libs.apply.plan import quarantine_row, replay_touched
from libs.contracts.change import Op, changes_of
from libs.apply.fold import Folded, fold, foldable
from libs.apply.fold_values import ImageEntries, commit_order_of, image_keys
from libs.apply.superseded import COMMIT, superseded_rows
from libs.apply.write_op import WriteOp
from libs.apply.change_log import change_log_table, decided_change_log
from libs.runtime.gc_pause import gc_paused
from libs.reads.lineage_sql import quote_identifier
from libs.replay import ROW_ID_COLUMN, ReplayStopped
from libs.replay.lineage import LINEAGE_COLUMN
from libs.contracts.position import BinlogPosition
from libs.tables.table_location import TableLocation
from libs.targets.model import Target
from pipelines.apply.target_writes import OP_COLUMN
from pipelines.apply.touched_rows import live_rows
from pipelines.delta.delta_tables import read
from pipelines.delta.quarantine import now_utc, quarantine_schema

BEFORE_KEY, AFTER_KEY, KEYS, GROUP = "_cdc_key_before", "_cdc_key_after", "_cdc_keys", "_cdc_group"
LOG, QUARANTINED, STOP, SUPERSEDED = "_cdc_log", "_cdc_quarantined", "_cdc_stop", "_cdc_superseded"
FOLDED, REPLAYED = "_cdc_folded", "_cdc_replayed"  # a group's changes folded / replayed change by change
UNDECODABLE = "_cdc_undecodable"  # a snapshot chunk that did not decode (pipelines/apply/snapshot_rows.py)
MAX_KEY_CHANGES = 100_000  # key-changing UPDATEs collected for the union-find; more: one group
WHOLE_TABLE = "whole table"  # the group of a table whose changes cannot be split


@dataclasses.dataclass
class ExecutorReplay:
    """One table's replayed part of the batch, nothing written. `out` is cached until the
    writes are done (unpersist)."""

    source_table: tuple[str, str]  # (database, table) as the change records name it
    target: Target
    path: TableLocation
    out: DataFrame
    merge_names: list[str]
    tally: Counter  # rows_upserted, rows_deleted, quarantined, superseded_by_snapshot
    stop: str | None = None  # strict mode: the ReplayError that stops the batch, as text
    new_rows: bool = False  # snapshot rows only (pipelines/apply/snapshot_rows.py): no MERGE
    replace: bool = False  # ... and the batch starts the table anew with them (its truncate)
    carried: Any = None  # ... in the end schema the batch gives it (schema_changes.Carried)
    truncated: dict[str, Any] | None = None  # ... a soft target's earlier rows flagged by its truncate
    folded: int = 0  # changes the fold applied (libs/apply/fold.py), for the job's metrics
    replayed: int = 0  # changes replayed change by change (libs/replay)
    undecodable: str | None = None  # snapshot rows: the first chunk that did not decode, as text

    def merge_rows(self) -> DataFrame:
        return self.out.filter(F.col(OP_COLUMN).isNotNull()).select(*(F.col(quote_identifier(n))
                                                                      for n in self.merge_names))

    def target_rows(self) -> DataFrame:
        """The upserts as target rows (new_rows parts)."""
        names = [n for n in self.merge_names if n != OP_COLUMN]
        return self.out.filter(F.col(OP_COLUMN) == WriteOp.UPSERT).select(
            *(F.col(quote_identifier(n)) for n in names))

    def change_log(self) -> DataFrame:
        return self.out.filter(F.col(LOG).isNotNull()).select(f"{LOG}.*")

    def quarantine(self) -> DataFrame:
        return self.out.filter(F.col(QUARANTINED).isNotNull()).select(f"{QUARANTINED}.*")

    def unpersist(self) -> None:
        self.out.unpersist()


def merge_schema(target: Target) -> T.StructType:
    """The MERGE source's columns: the target's (all nullable: deletes carry only _row_id and
    lineage) + OP_COLUMN (as pipelines/apply/target_writes.merge_source)."""
    return T.StructType([T.StructField(f.name, f.dataType, True) for f in D.target_schema(target).fields]
                        + [T.StructField(OP_COLUMN, T.StringType(), True)])


def output_schema(target: Target) -> T.StructType:
    return T.StructType(merge_schema(target).fields + [
        T.StructField(LOG, D.change_log_schema(), True),
        T.StructField(QUARANTINED, quarantine_schema(), True),
        T.StructField(STOP, T.StringType(), True), T.StructField(SUPERSEDED, T.LongType(), True),
        T.StructField(FOLDED, T.LongType(), True), T.StructField(REPLAYED, T.LongType(), True),
        T.StructField(UNDECODABLE, T.StringType(), True)])


def key_schema(target: Target, key: tuple[str, ...]) -> T.StructType:
    types = {f.name: f.dataType for f in D.target_schema(target).fields}
    return T.StructType([T.StructField(f"k{i}", types[c], True) for i, c in enumerate(key)])


class KeyChanges:
    """mapInArrow: each change record + its before/after key as text and the key values it
    names (for the join with the target's rows). Without a split key every change is in
    WHOLE_TABLE."""

    def __init__(self, target: Target, key: tuple[str, ...] | None, key_type: T.StructType):
        self.target, self.key = target, key
        self.keys_type = to_arrow_schema(
            T.StructType([T.StructField(KEYS, T.ArrayType(key_type), True)])).field(0).type
        self.kinds = [f.type for f in self.keys_type.value_type]

    def _keys(self, batch: pa.RecordBatch) -> Iterator[tuple[tuple | None, tuple | None]]:
        """Each change's (before, after) key as libs/apply/partition.change_keys gives it, the
        images read column by column (libs/apply/fold_values.py)."""
        n = batch.num_rows
        if not self.key:
            return iter([(None, None)] * n)
        before, _ = image_keys(ImageEntries.of(self.target, batch.column("before")), self.key, n, self.kinds)
        after, _ = image_keys(ImageEntries.of(self.target, batch.column("after")), self.key, n, self.kinds)
        return ((None if op == Op.INSERT else b,
                 b if op == Op.UPDATE and a is None else None if op == Op.DELETE else a)
                for op, b, a in zip(batch.column("op").to_pylist(), before, after))

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            before_text, after_text, values = [], [], []
            for before, after in self._keys(batch):
                named = [k for k in dict.fromkeys((before, after)) if k is not None]
                whole = self.key is None or not named
                before_text.append(WHOLE_TABLE if whole else key_text(before) if before else None)
                after_text.append(WHOLE_TABLE if whole else key_text(after) if after else None)
                values.append([{f"k{i}": v for i, v in enumerate(k)} for k in named])
            yield pa.RecordBatch.from_arrays(
                [*batch.columns, pa.array(before_text, pa.string()), pa.array(after_text, pa.string()),
                 pa.array(values, self.keys_type)], names=[*batch.schema.names, BEFORE_KEY, AFTER_KEY, KEYS])


class ReplayGroup:
    """cogroup applyInArrow: one group's changes replayed on the target rows they touch; the
    output frame's rows (output_schema). The common case is folded per row in Arrow
    (libs/apply/fold.py), the rest replayed change by change (libs/replay)."""

    def __init__(self, target: Target, mode: str, batch_id: int, snapshots: Mapping[str, BinlogPosition],
                 start: tuple | None = None, fold: bool = True):
        self.target, self.mode, self.batch_id = target, mode, batch_id
        self.snapshots = snapshots  # source -> the table's latest snapshot position (libs/snapshot/tables.py)
        self.start = start  # the source_order of the batch's last truncate of the table: rows before it went
        self.fold = fold and foldable(target)
        self.schema = to_arrow_schema(output_schema(target))
        self.row_schema = pa.schema([self.schema.field(n)
                                     for n in (*target.column_names, ROW_ID_COLUMN, LINEAGE_COLUMN)])
        self.no_rows = self.row_schema.remove(self.row_schema.get_field_index(LINEAGE_COLUMN)).empty_table()
        self.log_schema = to_arrow_schema(D.change_log_schema())

    def function(self):
        """The cogroup function: a plain (left, right) function, as PySpark counts its
        arguments to tell it from a (key, left, right) one."""
        def replay_group(changes: pa.Table, current: pa.Table) -> pa.Table:
            with gc_paused():
                return self._replay(changes, current)
        return replay_group

    def _replay(self, changes: pa.Table, current: pa.Table) -> pa.Table:
        stored = current.select([*self.target.column_names, ROW_ID_COLUMN])
        return self.replay_records(changes.drop_columns([BEFORE_KEY, AFTER_KEY, KEYS, GROUP]), stored)

    def replay_records(self, records: pa.Table, stored: pa.Table | None) -> pa.Table:
        """Change records applied to the `stored` rows they touch (None: no stored row, a table
        started anew): output_schema rows, or the one row of a strict-mode stop."""
        order, superseded_count = self._commit_order(records)
        records = records.take(pa.array(order, pa.int64()))
        parts = []
        if stored is None:  # (snapshot rows: libs/apply/fold.py makes them new rows as inserts)
            stored = self.no_rows
        rest, rest_stored = np.arange(records.num_rows), np.arange(stored.num_rows)
        if self.fold:
            folded = fold(self.target, records, stored, self.row_schema)
            parts += self._folded(records, folded)
            rest, rest_stored = folded.rest, folded.rest_stored
        replayed, stopped = self._replayed(records.take(pa.array(rest, pa.int64())),
                                           stored.take(pa.array(rest_stored, pa.int64())))
        counts = {SUPERSEDED: superseded_count or None,  # (the tally's; folded/replayed: the job's metrics)
                  FOLDED: records.num_rows - len(rest), REPLAYED: len(rest)}
        return replayed if stopped else pa.concat_tables([*parts, replayed, self._rows([counts])])

    def _folded(self, records: pa.Table, folded: Folded) -> list[pa.Table]:
        n = len(folded.log.at)
        log = decided_change_log(records, folded.log.at, {
            "row_id": folded.log.row_ids, "key": folded.log.keys,
            "delta_table": [self.target.delta_table] * n,
            "outcome": ["applied"] * n}, self.batch_id, self.log_schema)
        merge = pa.concat_tables([self._merge_part(folded.upserts, WriteOp.UPSERT),
                                  self._merge_part(folded.deletes, WriteOp.DELETE)])
        return [self._beside(merge, LOG, self._struct(log))]

    def _replayed(self, records: pa.Table, stored: pa.Table) -> tuple[pa.Table, bool]:
        """`records` replayed change by change on `stored` (libs/replay): its rows, or the stop's
        one row and True."""
        rows, stored_rows = changes_of(records), D.python_rows(stored)
        try:
            result = replay_touched(self.target, rows, lambda _lookups: stored_rows, mode=self.mode)
        except ReplayStopped as stop:
            return self._rows([{STOP: str(stop.error)}]), True
        upserts, deletes = mode_of(self.target).table_writes(self.target, result)  # (its mode's rows)
        log = change_log_table(records, result.change_log, range(len(rows)), self.batch_id, self.log_schema)
        now = now_utc()
        return pa.concat_tables([
            self._rows([{**u, OP_COLUMN: WriteOp.UPSERT} for u in upserts]
                       + [{**d, OP_COLUMN: WriteOp.DELETE} for d in deletes]),
            self._column(LOG, self._struct(log)),
            self._rows([{QUARANTINED: quarantine_row(e, now)} for e in result.quarantine])]), False

    def _commit_order(self, records: pa.Table) -> tuple[list[int], int]:
        """The rows to apply in commit order (Change.source_order, sorted by columns), and how many
        went as superseded."""
        order = commit_order_of(records)
        if self.start is None and not self.snapshots:
            return order.tolist(), 0
        ordered = records.select([*COMMIT, "change_seq"]).take(order)
        kept = order[~superseded_rows(ordered, self.start, self.snapshots)]
        return kept.tolist(), len(order) - len(kept)

    def _rows(self, rows: list[dict[str, Any]]) -> pa.Table:
        return pa.Table.from_pylist(rows, schema=self.schema)

    def _merge_part(self, rows: pa.Table, op: WriteOp) -> pa.Table:
        """Folded MERGE rows (some of the output's columns) with their op."""
        return self._part({**{name: rows.column(name) for name in rows.column_names},
                           OP_COLUMN: pa.array([op] * rows.num_rows, pa.string())}, rows.num_rows)

    @staticmethod
    def _struct(table: pa.Table) -> pa.StructArray:
        return pa.StructArray.from_arrays([c.combine_chunks() for c in table.columns],
                                          fields=list(table.schema))

    def _beside(self, part: pa.Table, name: str, values: pa.Array) -> pa.Table:
        """`part` with `values` in its column `name` (null there), null rows added when `values`
        is longer: MERGE rows and change-log entries share output rows (the readers filter each
        by its own column), half the rows to move to the JVM and cache."""
        n = max(part.num_rows, len(values))
        part = pa.concat_tables([part, self._part({}, n - part.num_rows)])
        column = pa.concat_arrays([values, pa.nulls(n - len(values), values.type)])
        return part.set_column(part.schema.get_field_index(name), self.schema.field(name), column)

    def _column(self, name: str, values: pa.Array) -> pa.Table:
        return self._part({name: values}, len(values))

    def _part(self, columns: Mapping[str, pa.Array | pa.ChunkedArray], n: int) -> pa.Table:
        """`n` output rows holding `columns`, every other column null."""
        return pa.Table.from_arrays([columns[f.name] if f.name in columns else pa.nulls(n, f.type)
                                     for f in self.schema],
                                    schema=self.schema)


def spread(changes: DataFrame, parallelism: int) -> DataFrame:
    """`changes` over at least `parallelism` tasks (one Kafka partition's worth may be one task)."""
    return changes.repartition(parallelism) if changes.rdd.getNumPartitions() < parallelism else changes


def replay_on_executors(spark: SparkSession, changes: DataFrame, source_table: tuple[str, str],
                        target: Target, path: TableLocation, exists: bool, mode: str, batch_id: int,
                        snapshots: Mapping[str, BinlogPosition], parallelism: int,
                        fold: bool = True) -> ExecutorReplay:
    """`changes`: the table's change records (commit_ts as epoch micros). `exists`: the Delta
    table exists (else nothing is read). `parallelism`: the tasks the work spreads over; keys
    hash into twice as many groups."""
    changes = spread(changes, parallelism)
    groups = 2 * parallelism
    key = split_key(target)
    key_type = key_schema(target, key) if key else T.StructType([T.StructField("k0", T.StringType(), True)])
    keyed_schema = T.StructType(changes.schema.fields + [
        T.StructField(BEFORE_KEY, T.StringType(), True), T.StructField(AFTER_KEY, T.StringType(), True),
        T.StructField(KEYS, T.ArrayType(key_type), True)])
    keyed = changes.mapInArrow(KeyChanges(target, key, key_type), keyed_schema).persist()
    try:
        grouped = _grouped(spark, keyed, groups) if key else None
        if grouped is None:  # one group: the whole table's part of the batch on the whole table
            grouped = keyed.withColumn(GROUP, F.lit(0))
            current = live_rows(read(spark, path), target).withColumn(GROUP, F.lit(0)) if exists else None
        else:
            current = _touched_rows(spark, grouped, target, path, key) if exists else None
        if current is None:
            current = spark.createDataFrame([], D.target_schema(target)).withColumn(GROUP, F.lit(0))
        current = current.select(*(F.col(quote_identifier(c))
                                   for c in (*target.column_names, ROW_ID_COLUMN, GROUP)))
        out = (grouped.groupBy(GROUP).cogroup(current.groupBy(GROUP))
               .applyInArrow(ReplayGroup(target, mode, batch_id, snapshots, fold=fold).function(),
                             output_schema(target))
               .persist())
        tally = tallied(out)  # out is computed here, keyed still cached
    finally:
        keyed.unpersist()
    return ExecutorReplay(source_table, target, path, out, [f.name for f in merge_schema(target).fields],
                          tally.counts, tally.stop, folded=tally.folded, replayed=tally.replayed)


class Tally(NamedTuple):
    counts: Counter  # the driver's tally: the row counts always, superseded_by_snapshot when any
    stop: str | None
    folded: int
    replayed: int
    undecodable: str | None  # the first snapshot chunk that did not decode, as text


def tallied(out: DataFrame) -> Tally:
    """An output frame's counts (one job: it computes the persisted frame), its stop, how many
    changes were folded and replayed (ExecutorReplay's fields), and its first undecodable chunk."""
    stats = out.agg(F.count(F.when(F.col(OP_COLUMN) == WriteOp.UPSERT, 1)).alias("rows_upserted"),
                    F.count(F.when(F.col(OP_COLUMN) == WriteOp.DELETE, 1)).alias("rows_deleted"),
                    F.count(QUARANTINED).alias("quarantined"),
                    F.sum(SUPERSEDED).alias("superseded_by_snapshot"),
                    F.first(STOP, ignorenulls=True).alias(STOP),
                    F.sum(FOLDED).alias(FOLDED), F.sum(REPLAYED).alias(REPLAYED),
                    F.first(UNDECODABLE, ignorenulls=True).alias(UNDECODABLE)).first().asDict()
    text = {k: stats.pop(k) for k in (STOP, UNDECODABLE)}
    how = {k: int(stats.pop(k) or 0) for k in (FOLDED, REPLAYED)}
    tally = Counter({k: int(v or 0) for k, v in stats.items() if v or k != "superseded_by_snapshot"})
    return Tally(tally, text[STOP], how[FOLDED], how[REPLAYED], text[UNDECODABLE])


def _grouped(spark: SparkSession, keyed: DataFrame, groups: int) -> DataFrame | None:
    """The changes with their group: the hash of their key's component (a key-changing UPDATE
    joins its two keys), mod `groups`. None when some change has no whole key (one group)."""
    named = F.coalesce(F.col(BEFORE_KEY), F.col(AFTER_KEY))
    moved = (F.col(BEFORE_KEY) != F.col(AFTER_KEY))
    whole, moves = keyed.agg(F.max((named == WHOLE_TABLE).cast("int")), F.sum(moved.cast("int"))).first()
    if whole or (moves or 0) > MAX_KEY_CHANGES:
        return None
    if not moves:
        return keyed.withColumn(GROUP, F.pmod(F.xxhash64(named), F.lit(groups)).cast("int"))
    roots = components((r[0], r[1]) for r in keyed.filter(moved).select(BEFORE_KEY, AFTER_KEY).collect())
    roots_df = spark.createDataFrame(list(roots.items()), "_cdc_k string, _cdc_root string")
    return (keyed.join(F.broadcast(roots_df), named == roots_df["_cdc_k"], "left")
            .withColumn(GROUP, F.pmod(F.xxhash64(F.coalesce(F.col("_cdc_root"), named)),
                                      F.lit(groups)).cast("int"))
            .drop("_cdc_k", "_cdc_root"))


def _touched_rows(spark: SparkSession, grouped: DataFrame, target: Target, path: TableLocation,
                  key: tuple[str, ...]) -> DataFrame:
    """The target's rows whose key a change of the batch names, each with that change's group."""
    # a new column: cogrouped with `grouped` later
    keys = grouped.select(F.explode(KEYS).alias("_k"), F.col(GROUP).alias("_g")).distinct()
    table = live_rows(read(spark, path), target)
    on = reduce(lambda a, b: a & b, (table[quote_identifier(c)] == keys["_k"][f"k{i}"]
                                     for i, c in enumerate(key)))
    return table.join(keys, on=on, how="inner").select(*(table[quote_identifier(c)]
                                                         for c in target.column_names),
                                                        table[ROW_ID_COLUMN], keys["_g"].alias(GROUP))

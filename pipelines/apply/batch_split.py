"""A batch's change records split between the driver's replay and the executors' (issue #21
goal 1, libs/apply/partition.py): what the driver needs to know of the executors' part without
collecting it (one small aggregate: per source, table, op and binlog file), and the two parts.
"""
from __future__ import annotations

import dataclasses
from collections import Counter
from functools import reduce
from typing import Mapping

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from libs.apply.group_summary import LAST_FIELDS, GroupSummary
from libs.contracts.change import ROW_OPS, Commit, Op
from libs.reads.lineage_sql import quote_identifier
from libs.tables.table_location import TableLocation
from libs.contracts.table_names import table_key
from libs.targets.model import Target
from pipelines.apply.executor_replay import ExecutorReplay

# Plan nodes that never give more rows than their one input (rows_at_most), and inputs that may
# know their row count (a materialised cache does).
_ONE_INPUT = frozenset({"Project", "Filter", "ResolvedHint", "Repartition", "RepartitionByExpression"})
_COUNTED = frozenset({"InMemoryRelation", "LocalRelation"})


def rows_at_most(df: DataFrame) -> int | None:
    """An upper bound of `df`'s rows without running a job, or None: the row count Spark keeps
    of its input when every node between them can only drop rows (filters, projections, the
    left side of an anti- or semi-join). The sink's changes are such a frame over the rows
    stage's cached output, counted when the sink asked it for failed transactions
    (pipelines/stages/sink.py)."""
    return _bound(df._jdf.queryExecution().optimizedPlan())


def _bound(node) -> int | None:
    """Rows a logical plan node (a JVM object) gives at most, or None."""
    name = node.nodeName()
    if name in _COUNTED:
        count = node.stats().rowCount()
        return None if count.isEmpty() else int(str(count.get()))  # a Scala BigInt
    if name == "Join" and node.joinType().toString() in ("LeftAnti", "LeftSemi"):
        return _bound(node.left())
    if name in _ONE_INPUT:
        return _bound(node.child())
    return None


@dataclasses.dataclass(frozen=True)
class BatchSummary:
    """`groups`: one per (source, database, table, op, trx_file) (libs/apply/group_summary.py)."""

    groups: tuple[GroupSummary, ...]

    @classmethod
    def of(cls, changes: DataFrame, more: tuple = ()) -> "BatchSummary":
        """`more`: groups of changes not in `changes` (snapshot chunks replayed from their bytes)."""
        micros = F.unix_micros("commit_ts").alias("commit_ts")
        rows = (changes.groupBy("source", "database", "table", "op", "trx_file")
                .agg(F.count(F.lit(1)).alias("n"), F.min(F.unix_micros("commit_ts")).alias("oldest"),
                     F.max(F.struct(*(micros if c == "commit_ts" else F.col(c) for c in LAST_FIELDS)))
                     .alias("last"))
                .collect())
        return cls(tuple(GroupSummary.of(r.asDict(recursive=True)) for r in rows) + tuple(more))

    @property
    def ops(self) -> dict[tuple[str, str], Counter]:
        out: dict[tuple[str, str], Counter] = {}
        for g in self.groups:
            out.setdefault(g.name, Counter())[g.op] += g.n
        return out

    @property
    def all_ops(self) -> set[str]:
        return {g.op for g in self.groups}

    @property
    def has_ddl(self) -> bool:
        """Any change other than a row change (DDL, truncate, snapshot, statement) in the batch."""
        return any(g.op not in ROW_OPS for g in self.groups)


@dataclasses.dataclass
class BatchSplit:
    """`changes`: the batch; `tables`: (database, table) -> (target, location) of the parts the
    executors replay; of those, `snapshots` are tables whose snapshot rows alone go there (their
    run's start, a truncate, stays on the driver: libs/apply/partition.snapshot_rows_eligible);
    `already_applied`: those Delta committed for this batch before."""

    changes: DataFrame
    summary: BatchSummary = BatchSummary(())
    tables: Mapping[tuple[str, str], tuple[Target, TableLocation]] = dataclasses.field(default_factory=dict)
    snapshots: frozenset = frozenset()
    already_applied: set = dataclasses.field(default_factory=set)
    # replayed already
    made: Mapping[tuple[str, str], ExecutorReplay] = dataclasses.field(default_factory=dict)

    @property
    def rest(self) -> DataFrame:
        """The driver's part."""
        if not self.tables:
            return self.changes
        return self.changes.filter(~reduce(lambda a, b: a | b, (self._is(*name) for name in self.tables)))

    def of_table(self, database: str, table: str) -> DataFrame:
        """One executor table's change records, commit_ts as epoch micros (as the driver
        collects them)."""
        columns = [F.unix_micros("commit_ts").alias("commit_ts") if c == "commit_ts"
                   else F.col(quote_identifier(c))
                   for c in self.changes.columns]
        return self.changes.filter(self._is(database, table)).select(*columns)

    def _is(self, database: str, table: str):
        """A change record of the table's executor part."""
        mine = (F.col("database") == database) & (F.col("table") == table)
        return mine & (F.col("op") == Op.SNAPSHOT.value) if (database, table) in self.snapshots else mine

    def _mine(self):
        return [g for g in self.summary.groups if g.name in self.tables
                and (g.name not in self.snapshots or g.op == Op.SNAPSHOT)]

    @property
    def lasts(self) -> dict[str, tuple[Commit, int]]:
        """source -> (last change, count) of the executors' part (libs.apply.plan.last_changes)."""
        out: dict[str, tuple[Commit, int]] = {}
        for g in self._mine():
            mine, n = out.get(g.source, (g.last, 0))
            out[g.source] = (g.last if g.last.order > mine.order else mine, n + g.n)
        return out

    @property
    def oldest(self) -> dict[tuple[str, str], int]:
        """The executors' part's oldest commit per (source, table_key), for libs.apply.lag.commit_lags."""
        out: dict[tuple[str, str], int] = {}
        for g in self._mine():
            if g.name not in self.already_applied:
                key = (g.source, table_key(*g.name))
                out[key] = min(out.get(key, g.oldest), g.oldest)
        return out

    def counts(self, executor: list[ExecutorReplay], driver: Mapping[str, Counter]) -> dict[str, dict]:
        """The applier's return value: the driver's counts (`driver`), and for the executors'
        tables their ops, rows upserted/deleted, ... (a snapshot table's entry holds its run's
        start too: the driver's truncates superseded by a later one count with its rows)."""
        ops = self.summary.ops
        out = {name: dict(c) for name, c in driver.items()}
        out.update({table_key(d, t): dict(ops[(d, t)], already_applied=1) for d, t in self.already_applied})
        for part in executor:
            name = table_key(*part.source_table)
            tally = Counter(part.tally)
            earlier = driver.get(name, Counter())["superseded_by_snapshot"] if part.new_rows else 0
            if earlier:
                tally["superseded_by_snapshot"] += earlier
            out[name] = {**ops[part.source_table], **tally}
        return out

    @staticmethod
    def quarantined(executor: list[ExecutorReplay]) -> Counter:
        """source -> changes the executors' replay quarantined (one small job per table that has any)."""
        out: Counter = Counter()
        for part in executor:
            if part.tally["quarantined"]:
                out.update({r["source"]: r["count"]
                            for r in part.quarantine().groupBy("source").count().collect()})
        return out

"""Which tables' snapshot chunks skip the rows stage and go straight to target rows (issue #37
goal c): a chunk decoded once, in the pass that replays it (snapshot_rows.py), instead of its
change records cached by the rows stage and handed back to Python (3.0 of 6.3 s per 150,000
rows, bench/README.md "Issue #37, session 27").

pipelines/stages/sink.py asks, around the rows stage:

    plan_fusion (before it; no decoding: the chunks' heads, as the assembler read them)
        a table's chunks are planned when its snapshot rows would go to the executors as new
        rows (libs/apply/partition.snapshot_rows_eligible: a declared, selected, non-SCD2
        target, at least executor_apply_min_changes rows, no DDL in the batch) and Delta has
        not committed the batch on it yet (a replayed batch takes the rows stage's way);
    SnapshotFusion.run (after it, on its change records, before anything is quarantined)
        a planned table with other changes in the batch than its run's start (the binlog
        after its snapshot) is refused, as is one with a chunk that does not decode; the
        others are replayed (ExecutorReplay parts, nothing written).

A refused table's chunks are then decoded by the rows stage as before: what the driver's
replay or the executors' part make of change records, and an undecodable chunk an error row
whose transaction is quarantined with its frames (pipelines/delta/quarantine.py). The applier takes
the parts with the batch's change records (DeltaApplier.__call__ `fused`) and writes them as
its other executor parts; `groups` tells it what they hold without decoding (BatchSummary).
"""
from __future__ import annotations

import dataclasses
from functools import reduce
from typing import Callable, Mapping

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from libs.apply.group_summary import GroupSummary
from libs.contracts.change import Op
from libs.apply.partition import snapshot_rows_eligible
from libs.contracts.position import sort_key_of
from libs.stream.assembler.change_records import ROWS_PER_EVENT
from libs.config.job import JobConfig
from libs.tables.table_location import TableLocation
from libs.contracts.table_names import parse_table_key, table_key
from libs.apply.modes.select import mode_of
from libs.targets import TargetCatalog
from libs.targets.model import Target
from pipelines.apply.executor_parts import latest_starts
from pipelines.apply.executor_replay import ExecutorReplay
from pipelines.apply.known_targets import KnownTargets
from pipelines.apply.snapshot_rows import chunk_rows_on_executors, is_chunk, snapshot_chunks

Name = tuple[str, str]


def chunk_groups(batch: DataFrame) -> list[GroupSummary]:
    """The batch's snapshot chunks as BatchSummary groups (source, database, table, op, trx_file,
    n, oldest, last), from their heads: n = rows, last = the last row's commit order (its
    change_seq: libs/snapshot/changes.py). One small job over the cached batch."""
    change_seq = (F.col("segment_no") + 1) * ROWS_PER_EVENT + F.col("snapshot_rows") - 1
    last = F.struct("trx_end_pos", F.unix_micros("commit_ts").alias("commit_ts"),
                    change_seq.alias("change_seq"), "trx_id", "gtid")
    rows = (snapshot_chunks(batch).groupBy("source", "snapshot_table", "trx_file")
            .agg(F.sum("snapshot_rows").alias("n"), F.min(F.unix_micros("commit_ts")).alias("oldest"),
                 F.max(last).alias("last"), F.collect_set("trx_id").alias("trx_ids")).collect())
    return [GroupSummary.of({"source": r["source"],
                             **dict(zip(("database", "table"), parse_table_key(r["snapshot_table"]))),
                             "op": Op.SNAPSHOT.value, "trx_file": r["trx_file"], "n": r["n"],
                             "oldest": r["oldest"], "last": r["last"].asDict(), "trx_ids": r["trx_ids"]})
            for r in rows]


@dataclasses.dataclass
class SnapshotFusion:
    """`planned`: (database, table) -> (target, location) whose chunks skip the rows stage;
    after `run`, `parts` holds their replays and `refused` those that went back to it."""

    planned: Mapping[Name, tuple[Target, TableLocation]]
    groups: list[GroupSummary]
    batch_id: int
    config: JobConfig
    parts: list[ExecutorReplay] = dataclasses.field(default_factory=list)
    refused: set = dataclasses.field(default_factory=set)

    def taken(self) -> Column:
        """Over the rows stage's input: a chunk of a planned table."""
        keys = [table_key(*name) for name in sorted(self.planned)]
        return is_chunk() & F.col("snapshot_table").isin(keys)

    def run(self, spark: SparkSession, segments: DataFrame, changes: DataFrame) -> DataFrame | None:
        """The planned tables replayed from their chunks in `segments`, given the rows stage's
        `changes` of the batch; returns the chunks the rows stage must decode after all (None:
        none)."""
        others, starts = self._others(changes)
        parallelism = spark.sparkContext.defaultParallelism
        chunks = snapshot_chunks(segments)
        try:
            for name, (target, path) in sorted(self.planned.items()):
                if name in others:
                    self.refused.add(name)
                    continue
                part = chunk_rows_on_executors(chunks.filter(F.col("snapshot_table") == table_key(*name)),
                                               name, target, path, self.config.exec_mode, self.batch_id,
                                               starts.get(name), parallelism, fold=self.config.executor_fold)
                if part.undecodable is not None:
                    part.unpersist()
                    self.refused.add(name)
                else:
                    self.parts.append(part)
        except BaseException:
            self.unpersist()
            raise
        if not self.refused:
            return None
        return chunks.filter(F.col("snapshot_table").isin([table_key(*name)
                                                           for name in sorted(self.refused)]))

    def _others(self, changes: DataFrame) -> tuple[set[Name], dict[Name, tuple]]:
        """Planned tables with changes other than their snapshot's start, and per table the
        the source_order of its last start (a truncate: few). One small job over the cached
        change records."""
        mine = reduce(lambda a, b: a | b, ((F.col("database") == d) & (F.col("table") == t)
                                           for d, t in self.planned))
        start = F.when(F.col("op") == Op.TRUNCATE.value,
                       F.struct("source", "trx_file", "trx_end_pos",
                                F.unix_micros("commit_ts").alias("commit_ts"), "change_seq"))
        rows = (changes.filter(mine & (F.col("op") != Op.SNAPSHOT.value)).groupBy("database", "table", "op")
                .agg(F.collect_list(start).alias("starts")).collect())
        others = {(r["database"], r["table"]) for r in rows if r["op"] != Op.TRUNCATE}
        return others, latest_starts(((r["database"], r["table"]), sort_key_of(**s.asDict()))
                                     for r in rows for s in r["starts"])

    def drop_failed(self, failed_rows: list) -> None:
        """Parts of tables with a transaction the rows stage failed (its run's table record did
        not decode): its frames, chunks included, are quarantined, so none of its rows is written."""
        failed = {(r["source"], r["trx_id"]) for r in failed_rows}
        names = {g.name for g in self.groups if failed & {(g.source, t) for t in g.trx_ids}}
        for part in [p for p in self.parts if p.source_table in names]:
            part.unpersist()
            self.parts.remove(part)
            self.refused.add(part.source_table)

    @property
    def fused_groups(self) -> list[GroupSummary]:
        """`groups` of the tables replayed here."""
        made = {part.source_table for part in self.parts}
        return [g for g in self.groups if g.name in made]

    def unpersist(self) -> None:
        for part in self.parts:
            part.unpersist()


def plan_fusion(spark: SparkSession, batch_id: int, groups: list[GroupSummary], batch_has_ddl: bool,
                catalog: TargetCatalog, config: JobConfig, known: KnownTargets,
                located: Callable[[Target], tuple[Target, TableLocation]]) -> SnapshotFusion | None:
    """The tables whose chunks skip the rows stage (module docstring); None when there are none."""
    rows: dict[Name, int] = {}
    for g in groups:
        rows[g.name] = rows.get(g.name, 0) + g.n
    planned = {}
    for name, n in sorted(rows.items()):
        declared = catalog.get(*name)
        if declared is None or not config.tables.selects(*name) or not mode_of(declared).on_executors:
            continue
        if not snapshot_rows_eligible({Op.SNAPSHOT: n}, config.executor_apply_min_changes,
                                      [Op.DDL] if batch_has_ddl else []):
            continue
        target, path = located(declared)
        if not known.already_committed(spark, path, target, batch_id):
            planned[name] = (target, path)
    if not planned:
        return None
    return SnapshotFusion(planned, [g for g in groups if g.name in planned], batch_id,
                          config)

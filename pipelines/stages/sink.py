"""The foreachBatch sink of cdc-replicate: one micro-batch of assembled records -> Delta
(DESIGN.md "Dataflow": rows, apply). `ReplicateBatch._replicate` reads as these stages:

    segments ---rows (parallel)---> change records | failed transactions
    snapshot chunks the applier plans to make new rows of ---(decoded where they replay,
                      pipelines/apply/snapshot_fusion.py)---> the applier's executor parts
    quarantine records + frames of failed transactions ---------> _cdc_quarantine
                      (fail policy: stop here, libs/config/bad_input.py: kept, nothing applied)
    change records ---apply---> target tables, change log, progress  (or ---> _cdc_changes)
    releases ---(recorded now, deleted while the next batch runs)---> spill store
    heartbeats ---> _cdc_progress.caught_up_as_of (a batch of only these skips the stages above)
    counters (one per source) ---> the job's metrics only (libs/stages/counters.py)

Every Delta write is idempotent per batch (appends: commit marks, pipelines/delta/marked_appends.py;
target writes: Delta's txnAppId/txnVersion), so a batch replayed after a crash changes nothing it
already wrote (DESIGN.md "Exactly once").
Spill chunks released by batch N are deleted while running batch N+1, when N is committed: a
replay of N still finds them (libs/stream/assembler/release_log.py)."""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Callable

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from libs.stream.assembler.file_spill import FileSpillStore
from libs.stream.assembler.release_log import Release, ReleaseLog
from libs.config.bad_input import (
    CONSEQUENCE, BadInputPolicy, Incident, stop_message,
)
from libs.contracts.position import BinlogPosition, KafkaPosition
from libs.binlog.limits import DecodeLimits
from libs.snapshot.changes import change_records as snapshot_change_records
from libs.contracts.assembled import RecordKind
from libs.contracts.change import Change
from libs.snapshot.record import TABLE, SnapshotRecord
from libs.stages.counters import SourceCounters
from libs.runtime.step_clock import BatchCost, StepClock
from libs.runtime.stops import JobStopped
from libs.stages.assembly import segment_ddl
from libs.tables.system_tables import APP_ID, CHANGES, QUARANTINE, STREAM_STAGES, changes_app_id
from libs.tables.table_location import TableLocation, TableRoot
from libs.targets.decoding import DecodeHints
from pipelines.apply.snapshot_fusion import SnapshotFusion, chunk_groups
from pipelines.job.batch_jobs import jobs_since, jobs_submitted
from pipelines.delta.marked_appends import MarkedAppends
from pipelines.stages.apply_stage import ApplyStage
from pipelines.delta.quarantine import QuarantineWriter, assembler_rejects, failed_transaction_frames
from pipelines.stages.rows import change_records, decode_rows

RELEASES_DIR = "spill_releases"
# a batch of only these has no row to decode
IDLE_KINDS = frozenset({RecordKind.HEARTBEAT, RecordKind.RELEASE, RecordKind.COUNTERS})
_FAILED_SCHEMA = "source string, trx_id string, reason string, kind string, trx_file string, trx_end_pos long"


@dataclass(frozen=True)
class BatchPaths:
    delta_root: str
    checkpoint: str
    catalog_schema: str | None = None  # JobConfig.catalog_schema: tables by catalog name

    @property
    def root(self) -> TableRoot:
        return TableRoot.of(self.delta_root, self.catalog_schema)

    def table(self, name: str) -> TableLocation:
        return self.root.table(name)

    @property
    def spill_root(self) -> str:
        return f"{self.checkpoint.rstrip('/')}/spill"

    @property
    def releases(self) -> str:
        return f"{self.checkpoint.rstrip('/')}/{RELEASES_DIR}"


@dataclass
class DecodedRows:
    """The rows stage's output for one batch. `decoded` is cached (its errors are asked once,
    then its change records are read); `failed` holds (source, trx_id, reason, kind, trx_file,
    trx_end_pos) of transactions with an undecodable segment, None when there are none: then
    neither the frame join nor the anti-join runs, so a clean batch shuffles neither.
    `failed_rows` are the same rows, as collected on the driver."""

    segments: DataFrame
    decoded: DataFrame
    failed_rows: list
    failed: DataFrame | None
    fused: SnapshotFusion | None = None  # tables whose snapshot chunks skipped the rows stage, replayed

    def changes(self) -> DataFrame:
        """Change records of the transactions that decoded completely."""
        failed = None if self.failed is None else self.failed.select("source", "trx_id")
        return change_records(self.decoded, failed)


class ReplicateBatch:
    """Named foreachBatch callable (STYLE.md practice 10): session from batch_df.sparkSession.

    `partitions`: tasks of the rows stage (JobConfig.rows.partitions; pipelines/replicate.py)."""

    def __init__(self, paths: BatchPaths, apply: ApplyStage | None,
                 partitions: int = 2, app_id: str = APP_ID, limits: DecodeLimits = DecodeLimits(),
                 hints: DecodeHints | None = None, bad_input: BadInputPolicy = BadInputPolicy(),
                 metrics=None):
        self.paths, self.apply, self.partitions, self.app_id = paths, apply, partitions, app_id
        self.metrics = metrics  # pipelines/job/job_metrics.JobMetrics: told what each batch read and applied
        # the batch's split (libs/runtime/step_clock.py), the applier's steps in the same clock
        self.steps = metrics.steps if metrics is not None else StepClock()
        self.limits, self.hints, self.bad_input = limits, hints, bad_input
        self.stopped: JobStopped | None = None  # why the last call stopped the stream, for the entry point
        self.running: int | None = None  # the batch id being written now (pipelines/job/stopping.py)
        # Called with the batch id before the batch's first step: raises JobStopped to begin no
        # batch once the job is asked to stop (pipelines/job/stopping.py StopSignals.check).
        self.before_batch: Callable[[int], None] = lambda batch_id: None
        self.release_log = ReleaseLog(paths.releases)
        self.appends = MarkedAppends()
        self.quarantine = QuarantineWriter(paths.root, app_id, STREAM_STAGES, create=True)

    def __call__(self, batch_df: DataFrame, batch_id: int) -> None:
        self.running = batch_id
        self.steps.take()  # a stopped batch's steps are not the next one's
        try:
            self.before_batch(batch_id)
            self._replicate(batch_df, batch_id)
        except JobStopped as stop:
            self.stopped = stop
            raise
        finally:
            self.running = None

    def _replicate(self, batch_df: DataFrame, batch_id: int) -> None:
        first_job = jobs_submitted(batch_df.sparkSession)
        self._delete_released_chunks(batch_id)
        batch = batch_df.persist()  # kind: segment | snapshot | quarantine | release | heartbeat
        try:
            with self.steps.step("assemble"):  # the first action: Kafka read, frames, transactions
                seen = _kinds(batch)
            if self.metrics is not None:
                self.metrics.read(batch_id, seen.counters)  # from now on its lag gauge grows
            caught_up, quarantined = seen.caught_up, seen.quarantined
            if seen.kinds <= IDLE_KINDS:  # an idle source's heartbeats: nothing to decode or apply
                self._record_caught_up(batch, batch_id, caught_up)
            else:
                quarantined.update(self._replicate_records(batch, batch_id, caught_up, seen))
            if RecordKind.RELEASE in seen.kinds:
                self._record_releases(batch, batch_id)          # deleted by the next batch
            self._report(batch_id, seen, quarantined, jobs_since(batch.sparkSession, first_job))
        finally:
            batch.unpersist()

    def _replicate_records(self, batch: DataFrame, batch_id: int, caught_up: dict[str, int],
                           seen: "BatchKinds") -> Counter:
        """The stages; returns the transactions the rows stage quarantined, per source."""
        with self.steps.step("prepare"):
            hints = self._prepare(batch, batch_id, seen)  # source schemas of snapshot tables -> targets
            fused = (self._plan_fusion(batch, batch_id, seen.ddl) if RecordKind.SNAPSHOT in seen.kinds
                     else None)
        with self.steps.step("decode"):
            rows = self._rows(batch, hints, fused)          # change records | failed transactions
        try:
            with self.steps.step("quarantine"):
                if self._quarantine(batch, rows, batch_id, seen):   # -> _cdc_quarantine
                    self._stop_on_bad_input(batch, rows.failed_rows)  # after the append: nothing is lost
            self._apply(rows.changes(), batch_id, caught_up, rows.fused)  # -> targets (or _cdc_changes)
        finally:
            rows.decoded.unpersist()
            if rows.fused is not None:
                rows.fused.unpersist()
        return Counter(r["source"] for r in rows.failed_rows)

    def _report(self, batch_id: int, seen: "BatchKinds", quarantined: Counter, jobs: int | None) -> None:
        """The committed batch's lag and counts to the metrics (the apply stage's own: its
        `last_batch`, pipelines/apply/applier.py; the assembler's: its counters records), and
        the Spark jobs it started (pipelines/job/batch_jobs.py)."""
        if self.metrics is None:
            return
        applied = self.apply.last_batch if self.apply is not None else None
        if applied is not None:
            quarantined = quarantined + applied.quarantined
        self.metrics.batch(batch_id, applied.commit_lags if applied is not None else {}, seen.caught_up,
                           quarantined, counters=seen.counters, newest_commits=seen.newest_commits,
                           cost=BatchCost(self.steps.take(), jobs))
        if applied is not None:
            self.metrics.applied(applied.folded, applied.replayed)

    # -- the stages, in the order _replicate runs them ----------------------------------------------
    def _delete_released_chunks(self, batch_id: int) -> None:
        """Earlier batches are committed (this one runs): the spill chunks they released can go."""
        self.release_log.delete_before(batch_id, FileSpillStore(self.paths.spill_root))

    def _prepare(self, batch: DataFrame, batch_id: int, seen: "BatchKinds") -> DecodeHints | None:
        """The batch's snapshot `table` records and DDL statements (a few small rows) go to the
        apply stage first: a table's source schema may give it a target whose declaration tells
        the rows stage what the binlog does not say (libs/snapshot/tables.py), and each row image
        reads with its table's schema version at its position (libs/schema_history). Returns
        the hints for the batch. Each is a job only when `_kinds` saw some in the batch."""
        if self.apply is None:
            return self.hints
        tables = [] if not seen.snapshot_tables else (
            batch.filter((F.col("kind") == RecordKind.SNAPSHOT) & (F.col("snapshot_kind") == TABLE))
            .select("source", F.col("frames")[0]["raw"].alias("raw")).collect())
        truncates = [Change.of(c) for r in tables
                     for c in snapshot_change_records(r["source"], SnapshotRecord.decode(r["raw"]))]
        flagged = [] if not seen.ddl else (
            batch.filter((F.col("kind") == RecordKind.SEGMENT) & F.col("ddl"))
            .select("source", "fde", "frames", F.unix_micros("commit_ts").alias("commit_ts")).collect())
        ddl = [e for s in flagged for e in segment_ddl(s.asDict(recursive=True), self.limits)]
        # (every Query event that makes a `ddl` change record flags its segment: libs/stages/assembly.py)
        return self.apply.prepare_batch(batch.sparkSession, truncates, batch_id, ddl)

    def _rows(self, batch: DataFrame, hints: DecodeHints | None, fused: SnapshotFusion | None) -> DecodedRows:
        """Segments and snapshot records -> decoded change records, spread over `partitions`
        tasks (pipelines/stages/rows.py). The snapshot chunks of tables the applier plans to
        replay from their bytes skip it (pipelines/apply/snapshot_fusion.py); those it then
        refuses are decoded here after all."""
        segments = batch.filter(F.col("kind").isin(RecordKind.SEGMENT, RecordKind.SNAPSHOT))
        rest = segments if fused is None else segments.filter(~fused.taken())
        decoded = decode_rows(rest, self.partitions, self.limits, hints).persist()
        try:
            refused = (None if fused is None
                       else fused.run(batch.sparkSession, segments, change_records(decoded)))
        except BaseException:
            decoded.unpersist()
            raise
        first = decoded
        if refused is not None:
            decoded = first.unionByName(decode_rows(refused, self.partitions, self.limits, hints)).persist()
        rows = DecodedRows(segments, decoded, *_failed(decoded), fused)  # (computes the cache)
        if first is not decoded:
            first.unpersist()  # only now: the union's cache was made from it
        if fused is not None and rows.failed_rows:
            fused.drop_failed(rows.failed_rows)
        return rows

    def _plan_fusion(self, batch: DataFrame, batch_id: int, has_ddl: bool) -> SnapshotFusion | None:
        """The applier's plan for the batch's snapshot chunks (None: they go the rows stage's way)."""
        if self.apply is None:
            return None
        groups = chunk_groups(batch)
        return self.apply.plan_fusion(batch.sparkSession, batch_id, groups, has_ddl) if groups else None

    def _quarantine(self, batch: DataFrame, rows: DecodedRows, batch_id: int, seen: "BatchKinds") -> bool:
        """The assembler's quarantine records and every frame of a failed transaction; False
        when there were none (a clean batch then asks no more of its rejects: `_kinds` counted
        none, and the rows stage failed none)."""
        if RecordKind.QUARANTINE not in seen.kinds and rows.failed is None and self.quarantine.created:
            return False
        rejects = assembler_rejects(batch)
        if rows.failed is not None:
            rejects = rejects.unionByName(failed_transaction_frames(rows.segments, rows.failed))
        return self.quarantine.append(rejects, batch_id)

    def _stop_on_bad_input(self, batch: DataFrame, failed_rows: list) -> None:
        """Raise BadInputStopped when a quarantined incident's policy is fail (libs/config/bad_input.py).
        Asked only when something was quarantined and a policy can stop: one small aggregate of
        the batch's quarantine rows."""
        if not self.bad_input.can_stop:
            return
        rows = (batch.filter((F.col("kind") == RecordKind.QUARANTINE) & (F.col("q_kind") != CONSEQUENCE))
                .groupBy("source", "q_kind", "reason")
                .agg(F.min(F.struct("binlog_file", "binlog_pos")).alias("first"),
                     F.max(F.struct("binlog_file", "binlog_pos")).alias("last"),
                     F.max(F.struct("kafka_topic", "kafka_partition", "kafka_offset")).alias("kafka"))
                .collect())
        incidents = [Incident(r["source"], r["q_kind"], r["reason"], _binlog_position(r["first"]),
                              _binlog_position(r["last"]), _kafka_position(r["kafka"])) for r in rows]
        for r in failed_rows:  # a rows-stage rejection covers its whole transaction
            end = BinlogPosition(r["trx_file"], r["trx_end_pos"])
            incidents.append(Incident(r["source"], r["kind"], r["reason"], end, end))
        stop = self.bad_input.first_stop(incidents)
        if stop is not None:
            raise BadInputStopped(stop_message(*stop, QUARANTINE))

    def _record_caught_up(self, batch: DataFrame, batch_id: int, caught_up: dict[str, int]) -> None:
        """A batch of heartbeats only: the sources' progress moves, nothing else is written.
        Kept short: the time it takes is how stale caught_up_as_of reads (issue #20 item 1)."""
        # also without heartbeats: it resets the applier's last_batch, which _report reads
        if self.apply is not None:
            self.apply.record_caught_up(batch.sparkSession, batch_id, caught_up)

    def _apply(self, changes: DataFrame, batch_id: int, caught_up: dict[str, int], fused=None) -> None:
        """The apply stage when targets are declared; else the change records as they are.
        `caught_up`: the batch's heartbeats, for _cdc_progress (no progress without targets);
        `fused`: snapshot tables replayed from their chunks (given only when there are some)."""
        if self.apply is not None:
            self.apply(changes, batch_id, caught_up, fused)
        else:
            self.appends.append(changes, self.paths.table(CHANGES), changes_app_id(self.app_id), batch_id)

    def _record_releases(self, batch: DataFrame, batch_id: int) -> None:
        releases = batch.filter(F.col("kind") == RecordKind.RELEASE).select(
            "source", "release_trx_key", "release_chunk_count").collect()
        self.release_log.record(batch_id, (Release(*r) for r in releases))


class BadInputStopped(JobStopped):
    """A quarantined incident whose policy is fail (libs/config/bad_input.py); the batch is not applied."""


@dataclass(frozen=True)
class BatchKinds:
    """What `_kinds` saw of a batch."""

    kinds: set[str]
    caught_up: dict[str, int]  # source -> epoch micros of its last heartbeat the assembler vouched for
    quarantined: Counter  # source -> the assembler's quarantine records
    counters: list[SourceCounters]  # the assembler's counts, one per source it ran for
    newest_commits: dict[str, int]  # source -> epoch micros of the newest transaction segment's commit
    ddl: bool = False  # a transaction segment flagged `ddl` (libs/stages/assembly.py)
    snapshot_tables: bool = False  # a snapshot `table` record (libs/snapshot/record.py)


def _kinds(batch: DataFrame) -> BatchKinds:
    """One small aggregate, so an idle batch costs one job before its write, and a batch without
    DDL, snapshot tables or quarantine records asks nothing more of them. A source has one
    counters record per batch; max/min only pick its values out of the group."""
    rows = batch.groupBy("kind", "source").agg(
        F.max(F.unix_micros("commit_ts")).alias("at"), F.count(F.lit(1)).alias("n"),
        *(F.max(c).alias(c)
          for c in ("ignorable_events", "dummy_events", "spilled_bytes_total", "spill_bytes")),
        F.min("oldest_kafka_ms").alias("oldest_kafka_ms"),
        F.max(F.coalesce(F.col("ddl"), F.lit(False))).alias("ddl"),
        F.max(F.coalesce(F.col("snapshot_kind") == TABLE, F.lit(False))).alias("snapshot_tables")).collect()
    return BatchKinds({r["kind"] for r in rows},
                      {r["source"]: r["at"] for r in rows if r["kind"] == RecordKind.HEARTBEAT},
                      Counter({r["source"]: r["n"] for r in rows if r["kind"] == RecordKind.QUARANTINE}),
                      [SourceCounters.from_record(r) for r in rows if r["kind"] == RecordKind.COUNTERS],
                      {r["source"]: r["at"] for r in rows
                       if r["kind"] == RecordKind.SEGMENT and r["at"] is not None},
                      ddl=any(r["ddl"] for r in rows),
                      snapshot_tables=any(r["snapshot_tables"] for r in rows))


def _binlog_position(row) -> BinlogPosition | None:
    """(binlog_file, binlog_pos) -> the position; None when a record named none
    (libs/stages/kafka_input.py)."""
    return None if row is None or None in tuple(row) else BinlogPosition(*row)


def _kafka_position(row) -> KafkaPosition | None:
    """(kafka_topic, kafka_partition, kafka_offset) -> the position; None when not all are known."""
    return None if row is None or None in tuple(row) else KafkaPosition(*row)


def _failed(decoded: DataFrame) -> tuple[list, DataFrame | None]:
    """(source, trx_id, reason, kind, trx_file, trx_end_pos) of transactions with an error row:
    the collected rows, and the same as a small frame (None when there are none). Few or none:
    collected once (decoded is cached)."""
    rows = (decoded.filter(F.col("decode_error").isNotNull())
            .groupBy("source", "trx_id").agg(F.first("decode_error").alias("reason"),
                                              F.first("error_kind").alias("kind"),
                                              F.first("trx_file").alias("trx_file"),
                                              F.first("trx_end_pos").alias("trx_end_pos")).collect())
    if not rows:
        return [], None
    return rows, decoded.sparkSession.createDataFrame([tuple(r) for r in rows], _FAILED_SCHEMA)

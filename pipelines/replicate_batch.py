"""The foreachBatch sink of cdc-replicate: one micro-batch of assembled records -> Delta.

    quarantine rows -------------------------------------------> _cdc_quarantine
                     (fail policy: stop here, libs/bad_input.py)
    segments --rows stage (parallel)--> change records --apply--> target tables, change log, progress
    releases ------(recorded, deleted one batch later)---------> spill store

Every Delta write is idempotent per batch (appends: commit marks, pipelines/marked_appends.py;
target writes: Delta's txnAppId/txnVersion), so a batch replayed after a crash changes nothing it
already wrote (DESIGN.md "Exactly once").
Spill chunks released by batch N are deleted while running batch N+1, when N is committed: a
replay of N still finds them (libs/assembler/release_log.py)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from libs.assembler.file_spill import FileSpillStore
from libs.assembler.release_log import Release, ReleaseLog
from libs.bad_input import CONSEQUENCE, BadInputPolicy, BinlogPosition, Incident, stop_message
from libs.binlog.limits import DecodeLimits
from libs.stops import JobStopped
from libs.targets.decoding import DecodeHints
from pipelines.marked_appends import MarkedAppends
from pipelines.schemas import QUARANTINE_RECORD, spark_schema
from pipelines.stages.rows import change_records, decode_rows

QUARANTINE_TABLE = "_cdc_quarantine"
CHANGES_TABLE = "_cdc_changes"  # decoded change records, when no apply stage is configured
RELEASES_DIR = "spill_releases"


@dataclass(frozen=True)
class BatchPaths:
    delta_root: str
    checkpoint: str

    def table(self, name: str) -> str:
        return f"{self.delta_root.rstrip('/')}/{name}"

    @property
    def spill_root(self) -> str:
        return f"{self.checkpoint.rstrip('/')}/spill"

    @property
    def releases(self) -> str:
        return f"{self.checkpoint.rstrip('/')}/{RELEASES_DIR}"


class ReplicateBatch:
    """Named foreachBatch callable (STYLE.md practice 10): session from batch_df.sparkSession."""

    def __init__(self, paths: BatchPaths, apply: Callable[[DataFrame, int], dict] | None,
                 partitions: int = 2, app_id: str = "cdc-replicate", limits: DecodeLimits = DecodeLimits(),
                 hints: DecodeHints | None = None, bad_input: BadInputPolicy = BadInputPolicy()):
        self.paths, self.apply, self.partitions, self.app_id = paths, apply, partitions, app_id
        self.limits, self.hints, self.bad_input = limits, hints, bad_input
        self.stopped: JobStopped | None = None  # why the last call stopped the stream, for the entry point
        self._created: set[str] = set()  # tables known to exist (no per-batch existence check)
        self.release_log = ReleaseLog(paths.releases)
        self.appends = MarkedAppends()

    def __call__(self, batch_df: DataFrame, batch_id: int) -> None:
        try:
            self._replicate(batch_df, batch_id)
        except JobStopped as stop:
            self.stopped = stop
            raise

    def _replicate(self, batch_df: DataFrame, batch_id: int) -> None:
        # Earlier batches are committed (this one runs): their released spill chunks can go.
        self.release_log.delete_before(batch_id, FileSpillStore(self.paths.spill_root))
        batch = batch_df.persist()
        try:
            segments = batch.filter(F.col("kind") == "segment")
            decoded = decode_rows(segments, self.partitions, self.limits, self.hints).persist()
            # Transactions with an undecodable segment: few or none. Asked once (decoded is
            # cached); the frame join and the anti-join of the change records run only when
            # there are some, so a clean batch shuffles neither its frames nor its changes.
            failed = self._failed(decoded)
            quarantine = self._assembler_quarantine(batch, batch_id)
            if failed is not None:
                quarantine = quarantine.unionByName(self._failed_transactions(segments, failed, batch_id))
            self._append_unless_empty(quarantine, self.paths.table(QUARANTINE_TABLE), batch_id, create=True)
            self._stop_on_bad_input(batch, failed)  # after the quarantine append: nothing is lost
            changes = change_records(decoded, failed.select("source", "trx_id") if failed is not None else None)
            if self.apply is not None:
                self.apply(changes, batch_id)
            else:
                self.appends.append(changes, self.paths.table(CHANGES_TABLE), f"{self.app_id}:changes", batch_id)
            releases = batch.filter(F.col("kind") == "release").select(
                "source", "release_trx_key", "release_chunk_count").collect()
            self.release_log.record(batch_id, (Release(*r) for r in releases))
            decoded.unpersist()
        finally:
            batch.unpersist()

    @property
    def quarantine_app_id(self) -> str:
        """The apply stage appends its own rejects to the same table under another app id
        (DeltaApplier.quarantine_app_id): one's mark must not make the other's append look done."""
        return f"{self.app_id}:{QUARANTINE_TABLE}"

    def _append_unless_empty(self, df: DataFrame, path: str, batch_id: int, *, create: bool = False) -> None:
        """An empty append would still cost a Delta commit per batch; skipping it loses nothing
        (a replayed batch recomputes the same empty set). `create`: the first batch writes even
        when empty, so the table exists for readers (an empty quarantine is a query result)."""
        app_id = self.quarantine_app_id
        if create and path not in self._created:
            self._created.add(path)
            if not _is_delta_table(df.sparkSession, path):
                self.appends.append(df, path, app_id, batch_id)
                return
        if not df.isEmpty():
            self.appends.append(df, path, app_id, batch_id)

    def _stop_on_bad_input(self, batch: DataFrame, failed: DataFrame | None) -> None:
        """Raise BadInputStopped when a quarantined incident's policy is fail (libs/bad_input.py).
        Asked only when a policy can stop: one small aggregate of the batch's quarantine rows."""
        if not self.bad_input.can_stop:
            return
        rows = (batch.filter((F.col("kind") == "quarantine") & (F.col("q_kind") != CONSEQUENCE))
                .groupBy("source", "q_kind", "reason")
                .agg(F.min(F.struct("binlog_file", "binlog_pos")).alias("first"),
                     F.max(F.struct("binlog_file", "binlog_pos")).alias("last")).collect())
        incidents = [Incident(r["source"], r["q_kind"], r["reason"], BinlogPosition.of(*r["first"]),
                              BinlogPosition.of(*r["last"])) for r in rows]
        if failed is not None:  # a rows-stage rejection covers its whole transaction
            incidents += [Incident(r["source"], r["kind"], r["reason"], BinlogPosition.of(r["trx_file"], r["trx_end_pos"]),
                                   BinlogPosition.of(r["trx_file"], r["trx_end_pos"])) for r in failed.collect()]
        stop = self.bad_input.first_stop(incidents)
        if stop is not None:
            raise BadInputStopped(stop_message(*stop, QUARANTINE_TABLE))

    @staticmethod
    def _failed(decoded: DataFrame) -> DataFrame | None:
        """(source, trx_id, reason, kind, trx_file, trx_end_pos) of transactions with an error
        row, or None."""
        rows = (decoded.filter(F.col("decode_error").isNotNull())
                .groupBy("source", "trx_id").agg(F.first("decode_error").alias("reason"),
                                                  F.first("error_kind").alias("kind"),
                                                  F.first("trx_file").alias("trx_file"),
                                                  F.first("trx_end_pos").alias("trx_end_pos")).collect())
        if not rows:
            return None
        schema = "source string, trx_id string, reason string, kind string, trx_file string, trx_end_pos long"
        return decoded.sparkSession.createDataFrame([tuple(r) for r in rows], schema)

    def _assembler_quarantine(self, batch: DataFrame, batch_id: int) -> DataFrame:
        q = batch.filter(F.col("kind") == "quarantine")
        return q.select("source", "binlog_file", "binlog_pos", "type_code", F.col("q_kind").alias("kind"),
                        "reason", "raw", "kafka_partition", "kafka_offset",
                        F.current_timestamp().alias("quarantined_at")).select(*_quarantine_columns())

    def _failed_transactions(self, segments: DataFrame, errors: DataFrame, batch_id: int) -> DataFrame:
        """Every frame of a transaction with an undecodable segment, with the decode error."""
        frames = (segments.select("source", "trx_id", "frames").join(F.broadcast(errors), ["source", "trx_id"])
                  .select("source", "reason", "kind", F.explode("frames").alias("f"))
                  .filter(~F.col("f.context")))
        return frames.select(
            "source", F.col("f.file").alias("binlog_file"), F.col("f.pos").alias("binlog_pos"),
            F.conv(F.hex(F.substring(F.col("f.raw"), 5, 1)), 16, 10).cast("int").alias("type_code"),
            "kind", "reason", F.col("f.raw").alias("raw"), F.lit(None).cast("int").alias("kafka_partition"),
            F.lit(None).cast("long").alias("kafka_offset"), F.current_timestamp().alias("quarantined_at"),
        ).select(*_quarantine_columns())


class BadInputStopped(JobStopped):
    """A quarantined incident whose policy is fail (libs/bad_input.py); the batch is not applied."""


def _is_delta_table(spark, path: str) -> bool:
    from delta.tables import DeltaTable

    return DeltaTable.isDeltaTable(spark, path)


def _quarantine_columns() -> list[str]:
    return spark_schema(QUARANTINE_RECORD).fieldNames()

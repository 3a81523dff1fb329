"""`_cdc_quarantine`: its one writer and the rows the stream stages put there (DESIGN.md "Bad
input": the raw frame kept, with source/file/position, never a partial apply).

Two stages reject input in one micro-batch, at different points of it:
  stream stages  frames the decode/assemble/rows stages could not use; appended BEFORE the
                 bad-input stop (pipelines/stages/sink.py), so a stopped batch lost nothing;
  apply stage    changes its replay did not apply (pipelines/apply/); appended after the replay.
One append cannot hold both (the stop sits between them), so each stage appends under its own
app id (libs/tables/system_tables.py quarantine_app_id) and each append is idempotent per (app id,
batch) through its commit mark (pipelines/delta/marked_appends.py): a replayed batch writes neither twice.
"""
from __future__ import annotations

import datetime as dt
from typing import Any, Mapping, Sequence

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from libs.contracts.assembled import RecordKind
from libs.tables.system_tables import QUARANTINE, quarantine_app_id
from libs.tables.table_location import TableRoot, as_root
from pipelines.delta.arrow_frames import arrow_frame
from pipelines.delta.delta_txn import is_delta_table
from pipelines.delta.marked_appends import MarkedAppends
from pipelines.job.schemas import QUARANTINE_RECORD, spark_schema


def quarantine_schema():
    return spark_schema(QUARANTINE_RECORD)


class QuarantineWriter:
    """Appends one stage's rejects to `_cdc_quarantine` (under `root`, libs/tables/table_location.py),
    idempotent per batch.

    `create`: the first append of this process writes even when empty, so the table exists for
    readers (an empty quarantine is a query result); after that an empty append is skipped (it
    would still cost a Delta commit per batch, and a replayed batch recomputes the same empty set).
    Columns the schema gained since a table was created (kafka_topic) are added by the append."""

    def __init__(self, root: TableRoot | str, app_id: str, stage: str, *, create: bool = False):
        self.path = as_root(root).table(QUARANTINE)
        self.app_id = quarantine_app_id(app_id, stage)
        self.appends = MarkedAppends()
        self._create = create

    @property
    def created(self) -> bool:
        """False while a writer made with `create` has yet to make its first append (which
        creates the table, empty or not, when missing); True after it, and always for the others."""
        return not self._create

    def append(self, df: DataFrame, batch_id: int) -> bool:
        """False when `df` is known to be empty (nothing to look at); True otherwise."""
        if self._create:
            self._create = False
            if not is_delta_table(df.sparkSession, self.path):
                self.appends.append(df, self.path, self.app_id, batch_id, add_columns=True)
                return True  # written without asking whether it was empty
        if df.isEmpty():
            return False
        self.appends.append(df, self.path, self.app_id, batch_id, add_columns=True)
        return True

    def append_rows(self, spark: SparkSession, rows: Sequence[Mapping[str, Any]], batch_id: int) -> None:
        """Driver-side quarantine records (dicts of quarantine_record, quarantined_at included)."""
        if rows:
            self.append(arrow_frame(spark, rows, quarantine_schema()), batch_id)


# -- the stream stages' rejects ----------------------------------------------------------------
def assembler_rejects(batch: DataFrame) -> DataFrame:
    """The assemble stage's quarantine records of the batch (kind == 'quarantine')."""
    q = batch.filter(F.col("kind") == RecordKind.QUARANTINE)
    return q.select("source", "binlog_file", "binlog_pos", "type_code", F.col("q_kind").alias("kind"),
                    "reason", "raw", "kafka_topic", "kafka_partition", "kafka_offset",
                    F.current_timestamp().alias("quarantined_at")).select(*quarantine_schema().fieldNames())


def failed_transaction_frames(segments: DataFrame, failed: DataFrame) -> DataFrame:
    """Every frame of a transaction with an undecodable segment, with the decode error: the
    whole transaction is quarantined, never partially applied (DESIGN.md "Whole transactions")."""
    frames = (segments.select("source", "trx_id", "frames").join(F.broadcast(failed), ["source", "trx_id"])
              .select("source", "reason", "kind", F.explode("frames").alias("f"))
              .filter(~F.col("f.context")))
    return frames.select(
        "source", F.col("f.file").alias("binlog_file"), F.col("f.pos").alias("binlog_pos"),
        # common header (rows_event.h / log_event.h): timestamp u32, then the type code u8
        F.conv(F.hex(F.substring(F.col("f.raw"), 5, 1)), 16, 10).cast("int").alias("type_code"),
        "kind", "reason", F.col("f.raw").alias("raw"), F.lit(None).cast("string").alias("kafka_topic"),
        F.lit(None).cast("int").alias("kafka_partition"),
        F.lit(None).cast("long").alias("kafka_offset"), F.current_timestamp().alias("quarantined_at"),
    ).select(*quarantine_schema().fieldNames())


def now_utc() -> dt.datetime:
    """The quarantined_at of driver-side rows (libs/ never reads a clock)."""
    return dt.datetime.now(dt.timezone.utc)

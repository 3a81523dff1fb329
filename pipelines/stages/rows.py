"""Rows stage: segments of complete transactions -> change records, decoded in parallel.

Issue #4 "Heavy row decoding must not serialise": the segments of one transaction are dealt
round-robin over the tasks (slot = hash(source, trx_id) + segment_no, modulo the partitions), so
a 1M-row transaction's segments decode on every core. Plain hash partitioning of
(trx_id, segment_no) left the split to chance (measured in bench/README.md). The function
runs over Arrow batches (mapInArrow): records go dict <-> Arrow directly, without pandas object
columns, and records leave in Arrow batches of OUT_BATCH_ROWS as they are decoded (a worker
holds at most one batch plus one segment's change records, not its partition's: bounded memory
for a big transaction).

A segment that cannot be decoded (a row image that does not match its table map) becomes an
error row: its whole transaction is quarantined by the caller, never partially applied."""
from __future__ import annotations

from typing import Iterator

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T
from pyspark.sql.pandas.types import to_arrow_schema

from libs.contracts.arrow_rows import rows as arrow_rows
from libs.binlog.errors import BinlogError
from libs.binlog.limits import DecodeLimits
from libs.runtime.gc_pause import gc_paused
from libs.contracts.assembled import RecordKind
from libs.snapshot.changes import change_batch
from libs.snapshot.record import ROWS, SnapshotRecord
from libs.stages.assembly import decode_segment
from libs.targets.decoding import DecodeHints
from pipelines.job.schemas import CHANGE_RECORD, spark_schema

ERROR_FIELDS = [T.StructField("decode_error", T.StringType()), T.StructField("error_kind", T.StringType())]
OUT_BATCH_ROWS = 8192  # change records per Arrow batch handed back to Spark


def decoded_schema() -> T.StructType:
    """change_record with every field nullable (error rows carry only identity) + the error."""
    fields = [T.StructField(f.name, f.dataType, True) for f in spark_schema(CHANGE_RECORD).fields]
    return T.StructType(fields + ERROR_FIELDS)


def _as_micros(batch: pa.RecordBatch) -> pa.Table:
    """Timestamps as int epoch micros, as libs/ carries them (change_record timestamp-micros)."""
    table = pa.Table.from_batches([batch])
    for i, field in enumerate(table.schema):
        if pa.types.is_timestamp(field.type):
            table = table.set_column(i, field.name, table.column(i).cast(pa.int64()))
    return table


class DecodeSegments:
    """The mapInArrow function: picklable, no globals."""

    def __init__(self, limits: DecodeLimits = DecodeLimits(), hints: DecodeHints | None = None):
        self.out_schema = to_arrow_schema(decoded_schema())
        self.limits, self.hints = limits, hints

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        pending: list[dict] = []
        for batch in batches:
            with gc_paused():  # libs/runtime/gc_pause.py: one input batch's segments and records
                for seg in arrow_rows(_as_micros(batch)):
                    rows = _snapshot_rows(seg, self.out_schema)
                    if rows is not None:
                        yield rows
                        continue
                    pending.extend(_decoded_or_error(seg, self.limits, self.hints))
                    # Full batches only: RecordBatch.from_pylist costs ~0.4 ms a call whatever the
                    # row count, so one call per (small) segment was most of this stage's time.
                    while len(pending) >= OUT_BATCH_ROWS:
                        yield pa.RecordBatch.from_pylist(pending[:OUT_BATCH_ROWS], schema=self.out_schema)
                        del pending[:OUT_BATCH_ROWS]
        if pending:
            yield pa.RecordBatch.from_pylist(pending, schema=self.out_schema)


def _snapshot_rows(seg: dict, schema: pa.Schema) -> pa.RecordBatch | None:
    """A snapshot chunk's change records as one Arrow batch, built column by column
    (libs/snapshot/changes.change_batch: no dict per row); None for anything else, and for a
    record that does not decode (decode_segment then makes its error row)."""
    if seg.get("kind") != RecordKind.SNAPSHOT:
        return None
    try:
        record = SnapshotRecord.decode(seg["frames"][0]["raw"])
        return change_batch(seg["source"], record, schema) if record.kind == ROWS else None
    except ValueError:
        return None


def _decoded_or_error(seg: dict, limits: DecodeLimits, hints: DecodeHints | None) -> list[dict]:
    try:
        return decode_segment(seg, limits, hints)
    except (BinlogError, ValueError, KeyError) as err:
        kind = getattr(err, "kind", type(err).__name__)
        return [{"source": seg["source"], "trx_id": seg["trx_id"], "trx_file": seg["trx_file"],
                 "trx_end_pos": seg["trx_end_pos"], "decode_error": str(err), "error_kind": kind}]


_SLOT_KEYS: dict[int, list[int]] = {}


def slot_keys(spark: SparkSession, partitions: int) -> list[int]:
    """keys[i] = an int that Spark's hash partitioning sends to partition i of `partitions`
    (HashPartitioning = pmod(murmur3(key, seed 42), n) = pmod(F.hash(key), n)); asked of Spark
    once per partition count, so the mapping is Spark's own, not re-implemented here."""
    if partitions not in _SLOT_KEYS:
        ids = spark.range(0, 64 * partitions).select(F.col("id").cast("int").alias("k"))
        rows = ids.select("k", F.pmod(F.hash("k"), F.lit(partitions)).alias("p")).collect()
        first = {}
        for row in rows:
            first.setdefault(row["p"], row["k"])
        if len(first) < partitions:
            raise RuntimeError(f"no hash key found for every one of {partitions} partitions")
        _SLOT_KEYS[partitions] = [first[i] for i in range(partitions)]
    return _SLOT_KEYS[partitions]


def decode_rows(segments: DataFrame, partitions: int, limits: DecodeLimits = DecodeLimits(),
                hints: DecodeHints | None = None) -> DataFrame:
    """segments (kind == 'segment') -> decoded change records (+ error rows); `hints`: what the
    target declarations know that the binlog may not say (libs/targets/decoding.py)."""
    keys = slot_keys(segments.sparkSession, partitions)
    slot = F.pmod(F.hash("source", "trx_id") + F.col("segment_no"), F.lit(partitions))
    key = F.element_at(F.array(*[F.lit(k) for k in keys]), slot + 1)
    spread = segments.repartition(partitions, key)
    return spread.mapInArrow(DecodeSegments(limits, hints), decoded_schema())


def change_records(decoded: DataFrame, failed: DataFrame | None = None) -> DataFrame:
    """Change records of transactions that decoded completely (schema: change_record).
    `failed`: (source, trx_id) of transactions with an error row; None = there are none."""
    ok = decoded.filter(F.col("decode_error").isNull())
    if failed is not None:
        ok = ok.join(F.broadcast(failed), ["source", "trx_id"], "left_anti")
    return ok.select(*spark_schema(CHANGE_RECORD).fieldNames())

"""One table's snapshot rows made target rows on the executors and written as new rows (issue
#37 item 3 and goal c): nothing of them is collected to the driver, and no MERGE joins the table.

    the table's snapshot chunks (the shipper's bytes: pipelines/apply/snapshot_fusion.py)
      or its snapshot change records (the rows stage decoded them: a replayed batch, a caller
      of the applier alone)
        --mapInArrow: a chunk decoded to change records as the rows stage decodes it
          (libs/snapshot/changes.change_batch), in the pass that replays it: no change record
          crosses between the JVM and Python; then replayed as the driver replays snapshot rows
          (libs/apply/fold.py: new rows as inserts, the replay for what it leaves; nothing
          to read: the run emptied the table)-->
    one output frame (executor_replay.output_schema): target rows | change-log rows | quarantine
                                                    | a chunk that did not decode

A snapshot row needs no stored row (libs/apply/partition.snapshot_rows_eligible): the driver
keeps the run's start (its truncate: the schema version, the table made anew) and the writes
put these rows in the same single commit, an overwrite when the batch holds that start, else
an append (pipelines/apply/batch_writes.py). Rows before the batch's last truncate of the table
went with it, as on the driver (ReplayGroup.start). A chunk that does not decode is named in
the output; the table's chunks then go the rows stage's way, where it becomes an error row and
its transaction is quarantined (snapshot_fusion.py).
"""
from __future__ import annotations

from typing import Iterator

import pyarrow as pa
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.pandas.types import to_arrow_schema

from libs.contracts.assembled import RecordKind
from libs.runtime.gc_pause import gc_paused
from libs.snapshot.changes import change_batch
from libs.snapshot.record import ROWS, SnapshotRecord
from libs.tables.table_location import TableLocation
from libs.targets.model import Target
from pipelines.apply.executor_replay import (
    UNDECODABLE, ExecutorReplay, ReplayGroup, merge_schema, output_schema, spread, tallied,
)
from pipelines.job.schemas import CHANGE_RECORD, spark_schema

def records_schema() -> pa.Schema:
    """change_record as the replay takes it: commit_ts as epoch micros (BatchSplit.of_table)."""
    schema = to_arrow_schema(spark_schema(CHANGE_RECORD))
    return schema.set(schema.get_field_index("commit_ts"), pa.field("commit_ts", pa.int64()))


class SnapshotRows:
    """mapInArrow: each batch of snapshot change records -> output_schema rows."""

    def __init__(self, group: ReplayGroup):
        self.group = group

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            with gc_paused():
                out = self.group.replay_records(pa.Table.from_batches([batch]), None)
            yield from out.to_batches()


class ChunkRows:
    """mapInArrow: each batch of chunks (source, raw, kafka_partition, kafka_offset) ->
    output_schema rows, chunk by chunk."""

    def __init__(self, group: ReplayGroup):
        self.group, self.schema = group, records_schema()

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            for chunk in batch.to_pylist():
                with gc_paused():
                    out = self._rows(chunk)
                yield from out.to_batches()

    def _rows(self, chunk: dict) -> pa.Table:
        try:
            record = SnapshotRecord.decode(chunk["raw"])
            records = pa.Table.from_batches([change_batch(chunk["source"], record, self.schema)])
        except (ValueError, KeyError) as err:
            where = (f"source {chunk['source']}, partition {chunk['kafka_partition']} "
                     f"offset {chunk['kafka_offset']}")
            return pa.Table.from_pylist([{UNDECODABLE: f"{err} ({where})"}], schema=self.group.schema)
        return self.group.replay_records(records, None)


def is_chunk() -> Column:
    """Over the rows stage's input: a snapshot chunk (kind snapshot, snapshot_kind rows)."""
    return (F.col("kind") == RecordKind.SNAPSHOT) & (F.col("snapshot_kind") == ROWS)


def snapshot_chunks(segments: DataFrame) -> DataFrame:
    """The rows stage's input narrowed to snapshot chunks."""
    return segments.filter(is_chunk())


def snapshot_rows_on_executors(changes: DataFrame, source_table: tuple[str, str], target: Target,
                               path: TableLocation, mode: str, batch_id: int, start: tuple | None,
                               parallelism: int, fold: bool = True) -> ExecutorReplay:
    """`changes`: the table's snapshot change records (commit_ts as epoch micros); `start`: the
    the source_order of the batch's last truncate of the table, if it has one."""
    group = ReplayGroup(target, mode, batch_id, {}, start, fold=fold)
    return _part(spread(changes, parallelism).mapInArrow(SnapshotRows(group), output_schema(target)),
                 source_table, target, path)


def chunk_rows_on_executors(chunks: DataFrame, source_table: tuple[str, str], target: Target,
                            path: TableLocation, mode: str, batch_id: int, start: tuple | None,
                            parallelism: int, fold: bool = True) -> ExecutorReplay:
    """The same from the table's snapshot chunks (snapshot_chunks), decoded where they replay."""
    raw = chunks.select("source", F.col("frames")[0]["raw"].alias("raw"), "kafka_partition", "kafka_offset")
    group = ReplayGroup(target, mode, batch_id, {}, start, fold=fold)
    # Always dealt round-robin: the assembler leaves one source's records in one partition
    # (grouped by source), whatever the partition count.
    return _part(raw.repartition(parallelism).mapInArrow(ChunkRows(group), output_schema(target)),
                 source_table, target, path)


def _part(out: DataFrame, source_table: tuple[str, str], target: Target,
          path: TableLocation) -> ExecutorReplay:
    out = out.persist()
    tally = tallied(out)
    return ExecutorReplay(source_table, target, path, out, [f.name for f in merge_schema(target).fields],
                          tally.counts, tally.stop, new_rows=True, folded=tally.folded,
                          replayed=tally.replayed, undecodable=tally.undecodable)

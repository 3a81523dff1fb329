"""One table's snapshot rows made target rows on the executors and written as new rows (issue
#37 item 3): nothing of them is collected to the driver, and no MERGE joins the table.

    snapshot change records of the table (the rows stage decoded them on the executors)
        --mapInArrow: each Arrow batch replayed as the driver replays snapshot rows
          (libs/apply/fold.py: new rows as inserts, the replay for what it leaves; nothing
          to read: the run emptied the table)-->
    one output frame (executor_replay.output_schema): target rows | change-log rows | quarantine

A snapshot row needs no stored row (libs/apply_partition.snapshot_rows_eligible): the driver
keeps the run's start (its truncate: the schema version, the table made anew) and the writes
put these rows in the same single commit, an overwrite when the batch holds that start, else
an append (pipelines/apply/batch_writes.py). Rows before the batch's last truncate of the table
went with it, as on the driver (ReplayGroup.start).
"""
from __future__ import annotations

from typing import Iterator

import pyarrow as pa
from pyspark.sql import DataFrame

from libs.gc_pause import gc_paused
from libs.table_location import TableLocation
from libs.targets.model import Target
from pipelines.apply.executor_replay import (
    ExecutorReplay, ReplayGroup, merge_schema, output_schema, spread, tallied,
)


class SnapshotRows:
    """mapInArrow: each batch of snapshot change records -> output_schema rows."""

    def __init__(self, group: ReplayGroup):
        self.group = group

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            with gc_paused():
                out = self.group.replay_records(pa.Table.from_batches([batch]), None)
            yield from out.to_batches()


def snapshot_rows_on_executors(changes: DataFrame, source_table: tuple[str, str], target: Target,
                               path: TableLocation, mode: str, batch_id: int, start: tuple | None,
                               parallelism: int, fold: bool = True) -> ExecutorReplay:
    """`changes`: the table's snapshot change records (commit_ts as epoch micros); `start`: the
    change_sort_key of the batch's last truncate of the table, if it has one."""
    changes = spread(changes, parallelism)
    group = ReplayGroup(target, mode, batch_id, {}, start, fold=fold)
    out = changes.mapInArrow(SnapshotRows(group), output_schema(target)).persist()
    tally, stop, folded, replayed = tallied(out)
    return ExecutorReplay(source_table, target, path, out, [f.name for f in merge_schema(target).fields], tally,
                          stop, new_rows=True, folded=folded, replayed=replayed)

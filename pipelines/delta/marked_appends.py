"""Appends to the append-only Delta tables (libs/tables/system_tables.py: changes, change log, progress,
quarantine), idempotent per (app_id, batch_id) through commit marks (libs/tables/commit_marks.py).

A writer asks a table's history once per process for its newest mark; after that it knows what
it committed itself. So a steady batch appends without reading the table's state (Delta's
txnAppId check reconstructs it on every write: libs/tables/commit_marks.py).

A table at a path or by catalog name (libs/tables/table_location.py): both keep the mark in the
commit's userMetadata and answer DESCRIBE HISTORY (pipelines/delta/delta_tables.py append).
"""
from __future__ import annotations

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from libs.tables.commit_marks import last_marked_batch, mark
from libs.tables.table_location import TableLocation
from pipelines.delta.delta_tables import append, delta_table, exists
from pipelines.delta.delta_txn import committed_version

HISTORY_PAGE = 100  # commits read first; the whole history only if no mark is among them


class MarkedAppends:
    def __init__(self) -> None:
        # (table, app_id) -> newest committed batch id
        self._last: dict[tuple[TableLocation | str, str], int] = {}

    def append(self, df: DataFrame, path: TableLocation | str, app_id: str, batch_id: int, *,
               add_columns: bool = False) -> bool:
        """Append `df` as batch `batch_id` of `app_id` unless that batch (or a later one) is
        committed there already; True when it appended. `add_columns`: columns of `df` the
        table lacks are added (a table an earlier release created: only nullable additions)."""
        if self.committed(df.sparkSession, path, app_id) >= batch_id:
            return False
        append(df, path, mergeSchema=str(add_columns).lower(), userMetadata=mark(app_id, batch_id))
        self._last[(path, app_id)] = batch_id
        return True

    def committed(self, spark: SparkSession, path: TableLocation | str, app_id: str) -> int:
        """The newest batch `app_id` appended to the table (-1: none): asked of its history once
        per process, then kept."""
        key = (path, app_id)
        if key not in self._last:
            self._last[key] = committed_batch(spark, path, app_id)
        return self._last[key]


def committed_batch(spark: SparkSession, path: TableLocation | str, app_id: str) -> int:
    """The newest batch `app_id` appended to the table at `path` (-1: none, or no table).
    Commits of earlier releases carried Delta's txnAppId instead of a mark: those count too."""
    if not exists(spark, path):
        return -1
    table = delta_table(spark, path)
    page = [r.userMetadata for r in table.history(HISTORY_PAGE).orderBy(F.desc("version"))
            .select("userMetadata").collect()]
    marked = last_marked_batch(page, app_id)
    if marked is None and len(page) == HISTORY_PAGE:
        marked = last_marked_batch((r.userMetadata for r in table.history().orderBy(F.desc("version"))
                                    .select("userMetadata").collect()), app_id)
    txn = committed_version(spark, path, app_id)
    return max(-1 if marked is None else marked, -1 if txn is None else txn)

"""The Delta state of the targets a batch wrote, rebuilt in the background once the batch is
committed, so that each table's next write finds it built (issue #37 item 5, bench/README.md
"Issue #37 goal e").

Why: every target write carries Delta's txnAppId/txnVersion (pipelines/delta/delta_txn.py), and Delta
4.0 answers the txn check from the snapshot's computed state (Snapshot.transactions: a replay of
the table's log, 3 Spark jobs "Compute snapshot for version: N"), never from the `.crc` it
writes; an overwrite or MERGE then lists its files from the same cached state. Each commit
installs a new snapshot whose state nobody has built yet, so each write of a steady batch began
with that rebuild: 15 of the 28 Spark jobs of a small batch over five tables, side by side with
the other tables' writes. Built here, it runs between batches (while the next micro-batch is read
and decoded); the write finds it done. It is a lazy value of the one Snapshot object DeltaLog
keeps per table: a write that starts while it is being built waits for it, nothing is built twice.

Only a read of the table's log, in no transaction: a failure (a table removed meanwhile, the
session stopping) costs only the head start, since the write builds the state itself as before.
A commit of another writer in between makes the write load the newer snapshot and build that
one: Delta's own checks run as before, nothing here decides anything."""
from __future__ import annotations

from concurrent.futures import Future, ThreadPoolExecutor
from typing import Sequence

from pyspark.sql import SparkSession

from libs.tables.table_location import TableLocation
from pipelines.delta.delta_tables import snapshot

WARM_THREADS = 2  # the machine's cores: more threads only queue their Spark jobs behind each other
JOB_GROUP = "cdc-snapshot-warm"  # its Spark jobs' group: the UI (and bench/apply_steady.py) tell them apart


def warm_one(spark: SparkSession, path: TableLocation) -> None:
    """The table's latest snapshot with its state built (the txn versions Delta's write asks)."""
    snapshot(spark, path).transactions()


class SnapshotWarmer:
    """warm(spark, tables) after a committed batch. `enabled` False: nothing (the benchmark's
    "before", bench/apply_steady.py --compare)."""

    def __init__(self, enabled: bool = True) -> None:
        self.enabled = enabled
        self._pool: ThreadPoolExecutor | None = None
        self._pending: list[Future] = []

    def warm(self, spark: SparkSession, tables: Sequence[TableLocation]) -> None:
        if not self.enabled or not tables:
            return
        if self._pool is None:
            self._pool = ThreadPoolExecutor(max_workers=WARM_THREADS, thread_name_prefix="warm")
        self._pending = [f for f in self._pending if not f.done()]
        self._pending += [self._pool.submit(_warm_quietly, spark, path) for path in tables]

    def wait(self) -> None:
        """Until every warm submitted so far has ended (benchmarks, tests)."""
        for future in self._pending:
            future.result()
        self._pending = []


def _warm_quietly(spark: SparkSession, path: TableLocation) -> None:
    try:
        spark.sparkContext.setJobGroup(JOB_GROUP, f"Delta state of {path} for its next write")
        warm_one(spark, path)
    except Exception:  # noqa: BLE001 - a head start only: the table's next write builds the state itself
        pass

"""Compaction and VACUUM of the job's Delta tables after a batch (libs/apply/maintenance.py
decides which and when; this module runs them). README "Deletion vectors, compaction and
vacuum" says what they mean for readers and how to run them by hand.

Each runs in its own Spark session (same context, own SQL conf): the OPTIMIZE file sizes and
VACUUM's retention check are session confs, and must not leak into the batch's writes. One that
fails (another writer's conflicting commit, a file system error) is one line on stderr and
waits for the table's next turn: the batch before it is committed, and must not be failed by it."""
from __future__ import annotations

import sys
import time
from typing import Sequence

from pyspark.sql import SparkSession

from libs.apply.maintenance import COMPACTIONS, OPTIMIZE_WIDE, MaintenancePlanner, MaintenancePolicy
from libs.config.job import WritesSettings
from libs.settings.errors import one_line
from libs.tables.table_location import TableLocation
from pipelines.delta.delta_tables import exists
from pipelines.delta.delta_txn import table_version

MB = 1024 * 1024
DELTA_RETENTION_FLOOR_HOURS = 168  # Delta refuses a shorter VACUUM unless its check is off
# VACUUM lists a table's files in `spark.sql.sources.parallelPartitionDiscovery.parallelism`
# tasks, 10,000 by default (a legacy of Spark's, delta-io/delta#220): on 2 cores a VACUUM of a
# table of a few files took 49-74 s, with the session's core count 2.9-4.8 s (bench/vacuum_listing.py,
# bench/README.md "VACUUM's listing"). The job's tables are unpartitioned: one directory to list.
LISTING_PARALLELISM = "spark.sql.sources.parallelPartitionDiscovery.parallelism"


def policy_of(settings: WritesSettings) -> MaintenancePolicy:
    every = settings.vacuum_every_minutes
    return MaintenancePolicy(settings.optimize_after_commits, None if every is None else every * 60.0,
                             settings.maintenance_per_batch, settings.optimize_wide_every)


class TableMaintenance:
    """After each committed batch: `after_batch(spark, tables the batch wrote)`."""

    def __init__(self, settings: WritesSettings):
        self.settings = settings
        self.planner = MaintenancePlanner(policy_of(settings))
        self.ran: list[tuple[str, str, float]] = []  # (table, operation, seconds), for tests and benches
        self._exist: set[TableLocation] = set()  # tables seen to exist (no log listing per batch)

    def after_batch(self, spark: SparkSession, tables: Sequence[TableLocation]) -> None:
        if self.settings.maintenance_per_batch == 0:
            return
        self._exist.update(t for t in tables if t not in self._exist and exists(spark, t))
        by_name = {str(t): t for t in tables if t in self._exist}
        versions = {name: table_version(spark, t) for name, t in by_name.items()}
        for name, operation in self.planner.due(versions, time.monotonic()):
            started = time.monotonic()
            session = spark.newSession()
            try:
                if operation in COMPACTIONS:
                    self._optimize(session, by_name[name], wide=operation == OPTIMIZE_WIDE)
                else:
                    self._vacuum(session, by_name[name])
            except Exception as exc:  # noqa: BLE001 - the batch is committed; upkeep waits for its next turn
                print(f"cdc-replicate: {operation} of {name} skipped until its next turn: "
                      f"{one_line((str(exc).strip().splitlines() or [''])[0])}", file=sys.stderr)
            self.planner.done(name, operation, table_version(spark, by_name[name]), time.monotonic())
            self.ran.append((name, operation, time.monotonic() - started))

    def _optimize(self, session: SparkSession, table: TableLocation, wide: bool) -> None:
        small_mb = self.settings.optimize_small_file_mb if wide else self.settings.optimize_new_file_mb
        session.conf.set("spark.databricks.delta.optimize.minFileSize", str(small_mb * MB))
        session.conf.set("spark.databricks.delta.optimize.maxFileSize",
                         str(self.settings.optimize_target_file_mb * MB))
        session.sql(f"OPTIMIZE {table.sql_ref()}").collect()

    def _vacuum(self, session: SparkSession, table: TableLocation) -> None:
        hours = self.settings.vacuum_retention_hours
        if hours < DELTA_RETENTION_FLOOR_HOURS:  # set below the floor on purpose (WritesSettings doc)
            session.conf.set("spark.databricks.delta.retentionDurationCheck.enabled", "false")
        session.conf.set(LISTING_PARALLELISM, str(session.sparkContext.defaultParallelism))
        session.sql(f"VACUUM {table.sql_ref()} RETAIN {int(hours)} HOURS").collect()

"""A batch's DDL carried to the followed targets' Delta tables (libs/apply/ddl.py decides what
the DDL means): each such table is carried to the batch's end schema before the batch's rows are
read (pipelines/apply/schema_changes.py: a DataFrame, committed with the batch's rows in the
table's one write of the batch).
"""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Sequence

from pyspark.sql import SparkSession

from libs.apply.ddl import DdlPlan, Evolve, accept_setting
from libs.apply.stops import SchemaChangeStopped
from libs.config.job import JobConfig
from libs.schema_history.evolution import SchemaEvolutionError
from libs.schema_history.history import SchemaHistory
from libs.tables.table_location import TableLocation
from libs.targets import TargetCatalog
from libs.targets.model import Target
from pipelines.apply.known_targets import KnownTargets
from pipelines.apply.schema_changes import Carried, carried_table


class BatchDdl(DdlPlan):
    """DdlPlan, and the Delta tables it carries (`known`: the job's known targets)."""

    def __init__(self, config: JobConfig, declared: TargetCatalog, history: SchemaHistory,
                 known: KnownTargets):
        super().__init__(config, declared, history)
        self.known = known

    def carry_all(self, spark: SparkSession, pool: ThreadPoolExecutor, batch_id: int,
                  tables: Sequence[tuple[Target, TableLocation, Evolve]]) -> dict[TableLocation, Carried]:
        """Every followed target carried to the batch's end schema, before any row is read, as
        DataFrames of the versions the batch starts from: nothing is written here; each table's
        new schema is committed with its rows, in its one write of the batch (issue #39)."""
        futures = [(t[1], pool.submit(self._carry, spark.newSession(), batch_id, *t)) for t in tables]
        return {path: carried for path, done in futures if (carried := done.result()) is not None}

    def _carry(self, spark: SparkSession, batch_id: int, target: Target, path: TableLocation,
               evolve: Evolve) -> Carried | None:
        """The target's Delta table in the batch's end schema (pipelines/apply/schema_changes.py);
        a table the batch created, and not renamed to, exists, empty."""
        try:
            ddl = evolve.ddl
            accepted = self.accepted(ddl.source, ddl.binlog_file, ddl.binlog_pos)
            carried = carried_table(spark, path, target, evolve.start, ddl.commit_ts, evolve.where,
                                    self.known.app_id, batch_id, evolve.copy_from, evolve.added, accepted,
                                    evolve.converted)
        except SchemaEvolutionError as exc:
            way_past = (f"snapshot the table again (cdc-ship --resnapshot --include '{target.database}\\."
                        f"{target.table}'), then restart with "
                        f"{accept_setting(ddl.source, ddl.binlog_file, ddl.binlog_pos)}: the batch writes "
                        f"the DEFAULT, the snapshot after it the server's values" if exc.computed else
                        "recreate the table from a new snapshot, or set schema_changes to ignore")
            raise SchemaChangeStopped(f"batch {batch_id}: {exc}; nothing of the batch was written to this "
                                      f"table. The way past: {way_past}") from None
        if carried is not None:
            self.known.mirrors.pop(path, None)
        elif evolve.exists:
            self.known.ensure(spark, path, target)
        return carried

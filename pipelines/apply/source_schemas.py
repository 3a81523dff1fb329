"""`_cdc_source_schemas`: the snapshot `table` records the apply stage has read, kept so a
restarted job still knows each table's source schema and snapshot position
(libs/snapshot/tables.py; schemas/source_schema_record.avsc). Appended in the micro-batch that
read the records, before its rows are decoded, idempotently per (app_id, batch_id)."""
from __future__ import annotations

from typing import Sequence

from pyspark.sql import SparkSession

from libs.contracts.change import Change, Op

from libs.contracts.position import BinlogPosition
from libs.config.job import TablesSettings
from libs.schema_history.declared_schemas import followed_declarations
from libs.schema_history.history import SchemaHistory
from libs.schema_history.target_schemas import with_source_targets
from libs.schema_history.table_renames import TableRename
from libs.snapshot.tables import SnapshotTable, SnapshotTables, since_last_truncate
from libs.tables.system_tables import SOURCE_SCHEMAS, table_app_id
from libs.tables.table_location import TableRoot, as_root
from pipelines.delta.arrow_frames import arrow_frame
from pipelines.delta.delta_tables import read
from pipelines.delta.delta_txn import is_delta_table
from pipelines.delta.marked_appends import MarkedAppends
from libs.targets import TargetCatalog
from pipelines.job.schemas import SOURCE_SCHEMA_RECORD, spark_schema


class SourceSchemas:
    def __init__(self, root: TableRoot | str, app_id: str):
        self.path = as_root(root).table(SOURCE_SCHEMAS)
        self.app_id = table_app_id(app_id, SOURCE_SCHEMAS)
        self.appends = MarkedAppends()
        self.tables = SnapshotTables()  # every table record kept so far (read by the first `keep`)
        self._loaded = False

    def keep(self, spark: SparkSession, tables: list[SnapshotTable], batch_id: int) -> bool:
        """Keep the batch's table records; True when the set of snapshot tables may have changed
        (first call of the process, or records not kept yet: the apply stage asks again with the
        records ReplicateBatch already gave)."""
        first = not self._loaded
        if first:
            self.tables, self._loaded = self.load(spark), True
        self.append(spark, tables, batch_id)
        return self.tables.add(tables) or first

    def catalog(self, declared: TargetCatalog, settings: TablesSettings,
                history: SchemaHistory) -> TargetCatalog:
        """The declared targets, following the source's DDL when `history` is given
        (libs/schema_history/declared_schemas.py), plus those derived from the source schemas:
        the snapshots' and every version since (libs/schema_history/target_schemas.py)."""
        if history is not None:
            declared = followed_declarations(declared, history)
        return with_source_targets(declared, self.tables, settings.selects, from_source=settings.from_source,
                                   history=history, keeps=settings.history)

    def load(self, spark: SparkSession) -> SnapshotTables:
        """Every table record kept so far (none when the table does not exist yet)."""
        if not is_delta_table(spark, self.path):
            return SnapshotTables()
        rows = read(spark, self.path).collect()
        return SnapshotTables(SnapshotTable(r["source"], r["database"], r["table"], r["snapshot_id"],
                                            BinlogPosition(r["binlog_file"], r["binlog_pos"]),
                                            r["create_table"])
                              for r in rows)

    def append(self, spark: SparkSession, tables: list[SnapshotTable], batch_id: int) -> None:
        if not tables:
            return
        rows = [{"source": t.source, "database": t.database, "table": t.table, "snapshot_id": t.snapshot_id,
                 "binlog_file": t.position.file, "binlog_pos": t.position.pos, "create_table": t.create_table,
                 "batch_id": batch_id} for t in tables]
        self.appends.append(arrow_frame(spark, rows, spark_schema(SOURCE_SCHEMA_RECORD)), self.path,
                            self.app_id, batch_id)

    def since_snapshot(self, own: Sequence[Change], rename: TableRename | None) -> list[Change]:
        """A table's changes not in its snapshot rows (libs/snapshot/protocol.py): from its last
        snapshot on. A table renamed to this name in the batch brings its changes before the
        rename along, unless this name's snapshot came after the rename."""
        fresh = lambda changes: [c for c in changes if not self.tables.is_superseded(c)]  # noqa: E731
        current = since_last_truncate(fresh(own))
        if rename is None or (current and current[0].op == Op.TRUNCATE
                              and current[0].source_order > rename.change.source_order):
            return current
        return [*since_last_truncate(fresh(rename.inherited)), *current]

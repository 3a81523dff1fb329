"""`_cdc_schema_history`: the job's schema history (libs/schema_history/history.py), kept so a
restarted job resumes with each source table's versions (issue #17 item 1;
schemas/schema_version_record.avsc).

Each micro-batch, before its rows are decoded (pipelines/stages/sink.py `_prepare`): the
snapshot tables the batch brought start their tables' histories at the snapshot position, then
the batch's DDL statements apply in binlog order; the versions they gave are appended,
idempotently per (app_id, batch_id). A replayed batch applies its DDL to the versions before it
again and gets the same versions (history.py). A DDL the history cannot apply to a table it
knows (unreadable, or naming a column the version lacks) leaves that table's schema unknown from
there: its row images are quarantined, never read by guess (libs/schema_history/row_layout.py),
until a snapshot or a CREATE TABLE gives it a schema again."""
from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import Callable, Iterable

import sqlglot
from pyspark.sql import SparkSession

from libs.stream.assembler.change_records import statement_target
from libs.schema_history.history import RENAMED, HistoryError, SchemaHistory, TableChange, Version
from libs.schema_history.row_layout import history_layouts
from libs.schema_history.statements import TableName
from libs.schema_history.table_schema import TableSchema
from libs.contracts.position import BinlogPosition
from libs.snapshot.tables import SnapshotTable
from libs.stages.assembly import DdlEvent
from libs.tables.system_tables import SCHEMA_HISTORY, table_app_id
from libs.tables.table_location import TableRoot, as_root
from pipelines.delta.arrow_frames import arrow_frame
from pipelines.delta.delta_tables import read
from pipelines.delta.delta_txn import is_delta_table
from pipelines.delta.marked_appends import MarkedAppends
from pipelines.job.schemas import SCHEMA_VERSION_RECORD, spark_schema


@dataclass(frozen=True)
class Update:
    changed: bool  # the history may have changed: row layouts and followed targets are built again
    changes: list[tuple[DdlEvent, TableChange]]  # what each DDL of the batch did, in binlog order


class SchemaHistoryTable:
    def __init__(self, root: TableRoot | str, app_id: str,
                 selects: Callable[[str, str], bool] = lambda db, t: True):
        self.path = as_root(root).table(SCHEMA_HISTORY)
        self.selects = selects  # JobConfig.tables: the tables the job replicates
        self.app_id = table_app_id(app_id, SCHEMA_HISTORY)
        self.appends = MarkedAppends()
        self.history = SchemaHistory()
        self._loaded = False
        self._layouts: dict = {}  # TableSchema -> RowLayout, across batches (history_layouts)

    def update(self, spark: SparkSession, kept: Iterable[SnapshotTable], new: Iterable[SnapshotTable],
               ddl: Iterable[DdlEvent], batch_id: int) -> Update:
        """Start the `new` snapshot tables, apply the batch's DDL, keep the versions it gave.
        `kept`: every snapshot table kept so far (read on the first call, with the table's rows)."""
        first = not self._loaded
        if first:
            self._load(spark, kept)
        new, ddl = list(new), sorted(ddl, key=lambda e: (e.source, BinlogPosition(e.file, e.pos).key()))
        for t in new:
            _start(self.history, t)
        rows, changes = [], []
        for event in ddl:
            rows += self._apply(event, batch_id, changes)
        if rows:
            # add_columns: a table kept by a job before `server_version` was recorded takes it
            self.appends.append(arrow_frame(spark, rows, spark_schema(SCHEMA_VERSION_RECORD)), self.path,
                                self.app_id, batch_id, add_columns=True)
        return Update(first or bool(new) or bool(ddl), changes)

    def layouts(self) -> dict:
        """DecodeHints' layouts of every table the history knows."""
        return history_layouts(self.history, self._layouts)

    def _apply(self, event: DdlEvent, batch_id: int, changes: list) -> list[dict]:
        position = BinlogPosition(event.file, event.pos)
        try:
            applied = self.history.apply(event.source, position, event.statement, event.default_db,
                                         event.server_version)
        except HistoryError as exc:
            names = exc.names or _named(event)
            self.history.refuse(event.source, position, names, event.statement, exc.reason,
                                event.server_version)
        else:
            changes += [(event, change) for change in applied]
            for change in applied:
                self._refuse_unreplicated_rename(event, position, change)
        return [{"source": event.source, "database": name.database, "table": name.table,
                 "binlog_file": event.file, "binlog_pos": event.pos,
                 "create_table": version.schema.create_table() if version.schema is not None else None,
                 "statement": event.statement, "server_version": event.server_version, "error": version.error,
                 "commit_ts": event.commit_ts,
                 "batch_id": batch_id}
                for name, version in self.history.added_at(event.source, position)]

    def _refuse_unreplicated_rename(self, event: DdlEvent, position: BinlogPosition,
                                    change: TableChange) -> None:
        """A replicated table renamed FROM one the job does not replicate (the swap of gh-ost or
        pt-online-schema-change with its ghost table not in tables.include): its rows are in no
        Delta table, so the name's rows from the rename on are refused (quarantined) until a new
        snapshot of it, and its Delta table stays as it was before the rename."""
        old, new = change.renamed_from, change.name
        if change.kind != RENAMED or not self.selects(new.database, new.table) or self.selects(old.database,
                                                                                             old.table):
            return
        self.history.refuse(event.source, position, (new,), event.statement,
                            f"renamed from {old}, which tables.include does not select: its rows are in no "
                            f"Delta table. Select it too (gh-ost's _<table>_gho, "
                            f"pt-online-schema-change's _<table>_new) "
                            f"and snapshot {new} again: cdc-ship --resnapshot "
                            f"--include '{new.database}\\.{new.table}'")

    def _load(self, spark: SparkSession, kept: Iterable[SnapshotTable]) -> None:
        """The snapshot schemas and the versions kept by earlier runs, in position order (a
        snapshot before a DDL at the same position: the DDL was logged after it)."""
        steps = [(t.source, t.position.key(), 0, partial(_start, self.history, t)) for t in kept]
        if is_delta_table(spark, self.path):
            for r in read(spark, self.path).collect():
                position = BinlogPosition(r["binlog_file"], r["binlog_pos"])
                schema = TableSchema.parse(r["create_table"], r["database"]) if r["create_table"] else None
                version = Version(position, schema, r["statement"], r["error"],
                                  r.asDict().get("server_version"))
                steps.append((r["source"], position.key(), 1,
                              partial(self.history.restore, r["source"], r["database"], r["table"], version)))
        for *_order, step in sorted(steps, key=lambda s: s[:3]):
            step()
        self._loaded = True


def _start(history: SchemaHistory, table: SnapshotTable) -> None:
    """A snapshot table's SHOW CREATE TABLE starts its history; one the history cannot read
    starts none (its target, derived from the same text, stops the batch with the reason)."""
    try:
        schema = TableSchema.parse(table.create_table, table.database)
    except (ValueError, sqlglot.errors.SqlglotError):
        return
    history.start(table.source, schema, table.position)


def _named(event: DdlEvent) -> tuple[TableName, ...]:
    """The table an unreadable DDL names first, as far as a pattern finds it."""
    database, table = statement_target(event.statement, event.default_db)
    return (TableName(database, table),) if table else ()

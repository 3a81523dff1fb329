"""The schemas targets derived from the source follow (issue #17 item 3; README "Schema changes").

A table without a declaration by hand takes its target from the source (README "Onboarding"):
from the schema history's latest version of it, so the target follows every DDL of the stream
(ADD, DROP, RENAME, MODIFY COLUMN) and a table created in the stream gets one. A snapshot table
the history could not read keeps the snapshot's SHOW CREATE TABLE (its target then stops the
batch with the reason, libs/apply/stops.py SourceTargetStopped). A dropped table keeps
its last schema's target, so the rows logged before the DROP apply; its Delta table stays.

One schema per (database, table): a table read from several sources takes the first source's.
"""
from __future__ import annotations

from functools import lru_cache
from typing import Iterable

from libs.schema_history.history import SchemaHistory
from libs.schema_history.table_schema import TableSchema
from libs.snapshot.tables import SnapshotTables
from libs.targets.config import TargetCatalog
from libs.targets.ddl import TableDDL
from libs.targets.model import Column


def followed_ddl(history: SchemaHistory, snapshots: SnapshotTables,
                 declared: Iterable[tuple[str, str]] = ()) -> list[TableDDL]:
    """The source schema of every table the history or a snapshot knows, except `declared`."""
    skip = set(declared)
    out: dict[tuple[str, str], TableDDL] = {}
    in_history: set[tuple[str, str]] = set()
    for source, database, table in history.tables():
        name = (database, table)
        if name in skip or name in in_history:
            continue
        in_history.add(name)
        schema = history.latest(source, database, table)
        if schema is not None:
            out[name] = _table_ddl(schema, source)
    snapshot_ddl = snapshots.derived_ddl(skip | in_history)
    return list(out.values()) + snapshot_ddl


@lru_cache(maxsize=4096)
def _table_ddl(schema: TableSchema, source: str) -> TableDDL:
    """Parsed once per version: the catalog is built again whenever the history changes."""
    return schema.table_ddl(f"schema of {schema.database}.{schema.table} (source {source})")


def version_columns(schema: TableSchema, source: str) -> tuple[Column, ...]:
    """A version's columns as target columns (one type mapping: libs/targets/ddl.py)."""
    return _table_ddl(schema, source).columns


def with_source_targets(declared: TargetCatalog, snapshots: SnapshotTables, selects, *,
                        from_source: bool = True, history: SchemaHistory | None = None,
                        keeps: str | None = None) -> TargetCatalog:
    """The declared targets plus one per source table that is selected (JobConfig.tables) and
    not declared, from its followed schema (the history's, else the snapshot's) and the YAML's
    override for it, if any (README "Onboarding": a declaration always wins). `keeps`: their
    history (JobConfig.tables.history) where the YAML sets none."""
    history = history if history is not None else SchemaHistory()
    if not from_source or not (len(snapshots) or history.tables()):
        return declared
    names = {(t.database, t.table) for t in declared.targets}
    return declared.with_source([d for d in followed_ddl(history, snapshots, names)
                                 if selects(d.database, d.table)],
                                keeps)

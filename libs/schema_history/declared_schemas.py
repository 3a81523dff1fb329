"""A target declared by hand follows its source table's DDL as a replica's own table does (issue
#17 item 3: "ADD COLUMN (with the replica-side DEFAULT of the declaration if one exists, else the
source's)"; README "Schema changes"), no Spark.

A declaration is the replica's table Ts, which may differ from the source's Tm (WL#5092: other
DEFAULTs, other types, columns of its own). A MySQL replica runs the source's ALTER TABLE on Ts;
so does this, statement by statement in binlog order (the schema history's versions of the
table), with a replica's latitude where Ts differs from Tm:
  * ADD COLUMN c: a column the declaration declares keeps its declared definition (the
    replica-side DEFAULT, type and charset); otherwise the source's, at the source's place (at
    the end when the AFTER column is not Ts's);
  * CHANGE / MODIFY / RENAME / DROP COLUMN, SET DEFAULT, key changes: applied to the columns Ts
    has; an action on a column Ts lacks does nothing (it was left out of the replica);
  * CREATE TABLE of the name, or a table renamed to it: the table starts again as declared (the
    declaration is the replica's table of that name). A DROP leaves the last schema (the Delta
    table keeps the rows logged before it). A later snapshot changes nothing (the stream's DDL
    already brought Ts where the source is).
A DDL the history refused changes nothing: its table's rows are quarantined from there.

The history starts with the table's snapshot or its CREATE TABLE in the stream; a declared table
with neither has no history, and its declaration stays as written.
"""
from __future__ import annotations

from typing import Sequence

from libs.schema_history import statements as S
from libs.schema_history.column_identity import REPLACE, column_steps
from libs.schema_history.history import SchemaHistory, Version
from libs.schema_history.table_schema import SchemaChangeError, TableSchema, column_def
from libs.contracts.table_names import TableName
from libs.targets.config import Declaration, TargetCatalog
from libs.targets.ddl import TableDDL


def declared_schema(declared: TableSchema, versions: Sequence[Version]) -> TableSchema:
    """The declared table after the DDL of `versions` (the history's versions of its source
    table, the first being its start: a snapshot or a CREATE TABLE)."""
    name = S.TableName(declared.database, declared.table)
    schema = declared
    for version in versions[1:]:
        if version.statement is None or version.error is not None or version.schema is None:
            continue  # a later snapshot; a refused DDL; the table dropped or renamed away
        # a statement that makes the name anew (column_identity's REPLACE) alters nothing of it
        steps = column_steps(version.statement, name.database, name.database, name.table,
                             server_version=version.server_version)
        if any(step.kind == REPLACE for step in steps):
            schema = declared
            continue
        for change in S.parse(version.statement, name.database, version.server_version):
            if isinstance(change, S.AlterTable) and change.name == name:
                for action in change.actions:
                    schema = _replica_applies(action, schema, declared)
    return schema


def _replica_applies(action: S.Action, schema: TableSchema, declared: TableSchema) -> TableSchema:
    """One ALTER TABLE action on the replica's table, with the latitude the module describes."""
    if isinstance(action, S.RenameTo):
        return schema  # the table's name is the declaration's
    if isinstance(action, S.AddColumn):
        added = column_def(action.definition).name
        if schema.has_column(added):
            return schema
        if declared.has_column(added):  # the replica declares it: its own definition
            action = S.AddColumn(declared.columns[declared.index(added)].definition, action.position)
        if action.position not in (None, S.FIRST) and not schema.has_column(action.position):
            action = S.AddColumn(action.definition)
    elif isinstance(action, S.ChangeColumn) and action.position not in (None, S.FIRST) \
            and not schema.has_column(action.position):
        action = S.ChangeColumn(action.old, action.definition, None, action.if_exists)
    try:
        return action.apply(schema)
    except SchemaChangeError:  # a column or key the replica's table does not have
        return schema


def followed_declarations(declared: TargetCatalog, history: SchemaHistory) -> TargetCatalog:
    """The declared targets whose source table has DDL in the history, following it: built on
    the declaration as that DDL changed it. One history per table: the first source's."""
    first: dict[tuple[str, str], tuple[Version, ...]] = {}
    for source, database, table in history.tables():
        first.setdefault((database, table), history.versions(source, database, table))
    schemas: dict[TableName, TableDDL | None] = {}
    for declaration in declared.declarations:
        versions = first.get(declaration.name, ())  # a TableName is its (database, table) tuple
        if not any(v.statement is not None for v in versions[1:]):
            continue  # no DDL of it: the declaration as written
        start = _declared_start(declaration)
        schema = declared_schema(start, versions)
        schemas[declaration.name] = None if schema == start else schema.table_ddl(declaration.path)
    return declared.following(schemas)


def _declared_start(declaration: Declaration) -> TableSchema:
    """The declared table without its `leave_out` columns (the replica does not have them)."""
    schema = TableSchema.parse(declaration.create_table, declaration.name.database)
    for column in declaration.entry.get("leave_out") or ():
        schema = schema.drop_column(column)
    return schema

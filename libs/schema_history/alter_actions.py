"""ALTER TABLE and its actions, each applying itself to a table's version (issue #17 item 1),
no Spark. libs/schema_history/statements.py reads them from the statement's text; a column
definition is kept as its SQL (as the server executes it: libs/schema_history/executed_text.py)
and read with sqlglot's MariaDB dialect (libs/targets/ddl.py) when applied.
"""
from __future__ import annotations

from dataclasses import dataclass

import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError

from libs.schema_history.ddl_results import DdlParseError, TableName
from libs.schema_history.table_schema import SchemaChangeError, TableSchema
from libs.targets.ddl import MariaDB


@dataclass(frozen=True)
class AlterTable:
    name: TableName
    actions: tuple["Action", ...]
    if_exists: bool = False

    def apply(self, schema: TableSchema) -> TableSchema:
        for action in self.actions:
            schema = action.apply(schema)
        return schema

    @property
    def renamed_to(self) -> TableName | None:
        """ALTER TABLE t RENAME [TO] u: the last such action's name."""
        names = [a.name for a in self.actions if isinstance(a, RenameTo)]
        return names[-1] if names else None


# -- ALTER TABLE actions: each applies itself to a version ---------------------------------------
@dataclass(frozen=True)
class Action:
    def apply(self, schema: TableSchema) -> TableSchema:  # pragma: no cover - every action overrides
        raise NotImplementedError


@dataclass(frozen=True)
class AddColumn(Action):
    definition: str
    position: str | None = None  # FIRST, a column name (AFTER it), None (at the end)
    if_not_exists: bool = False

    def apply(self, schema):
        col_def = column_definition(self.definition)
        if self.if_not_exists and schema.has_column(col_def.name):
            return schema
        return schema.add_column(col_def, self.position)


@dataclass(frozen=True)
class ChangeColumn(Action):
    old: str
    definition: str
    position: str | None = None
    if_exists: bool = False

    def apply(self, schema):
        if self.if_exists and not schema.has_column(self.old):
            return schema
        return schema.change_column(self.old, column_definition(self.definition), self.position)


@dataclass(frozen=True)
class DropColumn(Action):
    column: str
    if_exists: bool = False

    def apply(self, schema):
        if self.if_exists and not schema.has_column(self.column):
            return schema
        return schema.drop_column(self.column)


@dataclass(frozen=True)
class RenameColumn(Action):
    old: str
    new: str

    def apply(self, schema):
        return schema.rename_column(self.old, self.new)


@dataclass(frozen=True)
class SetDefault(Action):
    column: str
    default: str | None  # SQL of the new DEFAULT, None = DROP DEFAULT

    def apply(self, schema):
        value = None if self.default is None else sqlglot.parse_one(self.default, dialect=MariaDB)
        return schema.set_default(self.column, value)


@dataclass(frozen=True)
class AddPrimaryKey(Action):
    columns: tuple[str, ...]

    def apply(self, schema):
        if schema.primary_key:
            raise SchemaChangeError(f"{schema.database}.{schema.table} already has a PRIMARY KEY")
        return schema.with_primary_key(self.columns)


@dataclass(frozen=True)
class DropPrimaryKey(Action):
    def apply(self, schema):
        return schema.without_primary_key()


@dataclass(frozen=True)
class AddUnique(Action):
    key: str | None
    columns: tuple[str, ...]
    if_not_exists: bool = False

    def apply(self, schema):
        if (self.if_not_exists and self.key
                and any(n.lower() == self.key.lower() for n, _ in schema.unique_keys)):
            return schema
        return schema.with_unique(self.key, self.columns)


@dataclass(frozen=True)
class DropKey(Action):
    key: str

    def apply(self, schema):
        return schema.without_key(self.key)


@dataclass(frozen=True)
class RenameKey(Action):
    old: str
    new: str

    def apply(self, schema):
        return schema.renamed_key(self.old, self.new)


@dataclass(frozen=True)
class TableCharset(Action):
    charset: str
    convert: bool = False  # CONVERT TO: every string column too, not only later ones

    def apply(self, schema):
        return schema.converted(self.charset) if self.convert else schema.with_charset(self.charset)


@dataclass(frozen=True)
class RenameTo(Action):
    name: TableName

    def apply(self, schema):
        return schema.renamed(self.name.database, self.name.table)


# -- column definitions -------------------------------------------------------------------------
def column_definitions(inner: str) -> list[str]:
    stmt = _create_probe(inner)
    return [c.sql(dialect=MariaDB) for c in stmt.this.expressions if isinstance(c, exp.ColumnDef)]


def _create_probe(columns_sql: str) -> exp.Create:
    try:
        stmt = sqlglot.parse_one(f"CREATE TABLE _t ({columns_sql})", dialect=MariaDB)
    except SqlglotError as exc:
        raise DdlParseError(f"cannot read the column definition {columns_sql[:80]!r}: "
                            f"{first_line(exc)}") from None
    if not isinstance(stmt, exp.Create) or not isinstance(stmt.this, exp.Schema):
        raise DdlParseError(f"cannot read the column definition {columns_sql[:80]!r}")
    return stmt


def column_definition(definition: str) -> exp.ColumnDef:
    items = _create_probe(definition).this.expressions
    if len(items) != 1 or not isinstance(items[0], exp.ColumnDef) or items[0].args.get("kind") is None:
        raise DdlParseError(f"not one column definition: {definition[:80]!r}")
    return items[0]


def first_line(exc: Exception) -> str:
    return str(exc).splitlines()[0] if str(exc) else type(exc).__name__

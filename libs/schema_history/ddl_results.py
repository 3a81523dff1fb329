"""What one DDL statement does to the source's tables, as libs/schema_history/statements.py
reads it (issue #17 item 1), no Spark. ALTER TABLE and its actions are in alter_actions.py.

  CreateTable, CreateLike, RenameTables, Truncate, DropTables, DropDatabase: applied to the
    schema history (libs/schema_history/history.py);
  NoSchemaChange: DDL that changes no table's columns, keys or rows;
  Unsupported: DDL that would change rows or columns in a way the binlog does not show; the
    job's schema_changes policy decides, never a guess.
"""
from __future__ import annotations

from dataclasses import dataclass

from libs.schema_history.table_schema import TableSchema


class DdlParseError(ValueError):
    """The statement is DDL but cannot be read; the caller names source and position."""


@dataclass(frozen=True)
class TableName:
    database: str
    table: str

    def __str__(self) -> str:
        return f"{self.database}.{self.table}"


@dataclass(frozen=True)
class CreateTable:
    name: TableName
    schema: TableSchema
    or_replace: bool = False
    if_not_exists: bool = False


@dataclass(frozen=True)
class CreateLike:
    name: TableName
    like: TableName
    if_not_exists: bool = False


@dataclass(frozen=True)
class RenameTables:
    pairs: tuple[tuple[TableName, TableName], ...]


@dataclass(frozen=True)
class Truncate:
    name: TableName


@dataclass(frozen=True)
class DropTables:
    names: tuple[TableName, ...]
    if_exists: bool = False


@dataclass(frozen=True)
class DropDatabase:
    database: str


@dataclass(frozen=True)
class NoSchemaChange:
    reason: str


@dataclass(frozen=True)
class Unsupported:
    reason: str

"""Statements the simulated session executes. Each knows the tables it touches (WL#3303 decides
over all of them), whether it is unsafe (non-deterministic: UUID()), and its SQL text.

Values are codec values keyed by column ordinal; `exprs` replaces a value's literal in the SQL
text by the expression that produced it (UUID() -> the model stores the value the master
computed, the text says UUID(): the reason such a statement is unsafe for statement logging).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import libs.simulator.sqltext as sqltext


class _OneTable:
    """A statement over its own `table` only."""

    @property
    def tables(self) -> tuple[str, ...]:
        return (self.table,)


class _OneTableWithExprs(_OneTable):
    """A one-table statement whose SQL text may carry expressions (UUID()) in place of the
    values the master computed: unsafe for statement logging exactly when it does."""

    @property
    def unsafe(self) -> bool:
        return bool(self.exprs)


@dataclass(frozen=True)
class Insert(_OneTableWithExprs):
    table: str
    rows: tuple[dict, ...]  # each: the specified columns (ordinal -> value); same keys per row
    exprs: dict = field(default_factory=dict)

    def sql(self, model) -> str:
        return sqltext.insert_sql(model.table(self.table), list(self.rows), self.exprs)


@dataclass(frozen=True)
class Update(_OneTableWithExprs):
    table: str
    where: dict  # ordinal -> value (equality; None = IS NULL)
    assignments: dict  # ordinal -> new value
    exprs: dict = field(default_factory=dict)

    def sql(self, model) -> str:
        t = model.table(self.table)
        return sqltext.update_sql(t, self.assignments, sqltext.where_clause(t, self.where),
                                  self.exprs)


@dataclass(frozen=True)
class Delete(_OneTable):
    table: str
    where: dict

    unsafe = False

    def sql(self, model) -> str:
        t = model.table(self.table)
        return sqltext.delete_sql(t, sqltext.where_clause(t, self.where))


@dataclass(frozen=True)
class InsertSelect:
    """INSERT INTO dst (cols) SELECT cols FROM src WHERE ...: a statement over two tables (so
    the WL#3303 capabilities of both count). Column lists map by name."""

    table: str  # destination
    source: str
    columns: tuple[str, ...]
    where: dict  # on the source, by ordinal
    limit: int | None = None  # LIMIT without ORDER BY: which rows is not determined -> unsafe

    @property
    def tables(self) -> tuple[str, ...]:
        return (self.table, self.source)

    @property
    def unsafe(self) -> bool:
        return self.limit is not None

    def sql(self, model) -> str:
        src = model.table(self.source)
        names = ", ".join(sqltext.ident(c) for c in self.columns)
        return (f"INSERT INTO {sqltext.ident(self.table)} ({names}) SELECT {names} FROM "
                f"{sqltext.ident(self.source)} WHERE {sqltext.where_clause(src, self.where)}"
                + (f" LIMIT {self.limit}" if self.limit is not None else ""))


@dataclass(frozen=True)
class Ddl(_OneTable):
    """DDL is always logged as a statement in its own group (implicit commit); it is outside
    the WL#3303 decision table. kind: create | add_column | drop_column | truncate."""

    kind: str
    table: str
    column: object = None  # add_column: the schema.Column; drop_column: its name

    unsafe = False

    def sql(self, model) -> str:
        name = sqltext.ident(self.table)
        if self.kind == "create":
            return model.table(self.table).create_sql()
        if self.kind == "add_column":
            return f"ALTER TABLE {name} ADD COLUMN {self.column.ddl()}"
        if self.kind == "drop_column":
            return f"ALTER TABLE {name} DROP COLUMN {sqltext.ident(self.column)}"
        if self.kind == "truncate":
            return f"TRUNCATE TABLE {name}"
        raise ValueError(f"unknown DDL kind {self.kind!r}")

"""How the rows of one table version are logged (issue #17 item 2: "row images mapped through
the schema in force at their position ... a row image whose column count or types do not match
that version goes to the quarantine").

A Table_map written without column names (MariaDB's default binlog_row_metadata=NO_LOG, MySQL's
MINIMAL) says only how many columns a row image has and each one's storage type. The version of
the table in force at the image's position says the rest: each ordinal's name (so a value goes
to its own column even after `ADD COLUMN ... FIRST`), whether an integer is UNSIGNED, a string's
charset, an ENUM's labels, the fsp of an old-format temporal value. A layout whose column count
or storage types differ from the Table_map's is not the image's schema: `mismatch` says so, and
the rows stage quarantines the transaction instead of guessing (libs/stream/assembler/change_records.py).

Every column is in the Table_map, generated ones included (MariaDB and MySQL log the whole
table's column list; the integration test checks it on a real server).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from sqlglot import exp

from libs.binlog.constants import ColumnType as C
from libs.targets.column_hint import ColumnHint, hint_of
from libs.targets.errors import TargetConfigError

from libs.schema_history.history import SchemaHistory
from libs.schema_history.table_schema import TableSchema, column_def

T = exp.DataType.Type
_BLOBS = frozenset({C.TINY_BLOB, C.BLOB, C.MEDIUM_BLOB, C.LONG_BLOB})

# SQL type -> the storage types a server logs a value of it with (field_types.h; a Table_map
# names ENUM/SET as STRING with the real type in its metadata, which the decoder resolves).
# A type missing here is not checked.
LOGGED_TYPES: dict[exp.DataType.Type, frozenset[int]] = {
    **{t: frozenset({C.TINY}) for t in (T.TINYINT, T.UTINYINT, T.BOOLEAN)},
    **{t: frozenset({C.SHORT}) for t in (T.SMALLINT, T.USMALLINT)},
    **{t: frozenset({C.INT24}) for t in (T.MEDIUMINT, T.UMEDIUMINT)},
    **{t: frozenset({C.LONG}) for t in (T.INT, T.UINT)},
    **{t: frozenset({C.LONGLONG}) for t in (T.BIGINT, T.UBIGINT)},
    T.YEAR: frozenset({C.YEAR}),
    T.BIT: frozenset({C.BIT}),
    **{t: frozenset({C.NEWDECIMAL, C.DECIMAL}) for t in (T.DECIMAL, T.UDECIMAL)},
    T.FLOAT: frozenset({C.FLOAT}),
    **{t: frozenset({C.DOUBLE}) for t in (T.DOUBLE, T.UDOUBLE)},
    T.DATE: frozenset({C.DATE, C.NEWDATE}),
    T.DATETIME: frozenset({C.DATETIME, C.DATETIME2}),
    **{t: frozenset({C.TIMESTAMP, C.TIMESTAMP2}) for t in (T.TIMESTAMP, T.TIMESTAMPTZ, T.TIMESTAMPLTZ)},
    T.TIME: frozenset({C.TIME, C.TIME2}),
    **{t: frozenset({C.STRING}) for t in (T.CHAR, T.NCHAR, T.BINARY, T.UUID, T.IPV4, T.IPV6)},
    **{t: frozenset({C.VARCHAR, C.VAR_STRING}) for t in (T.VARCHAR, T.NVARCHAR, T.VARBINARY)},
    **{t: _BLOBS for t in (T.TINYTEXT, T.TEXT, T.MEDIUMTEXT, T.LONGTEXT,
                           T.TINYBLOB, T.BLOB, T.MEDIUMBLOB, T.LONGBLOB)},
    T.ENUM: frozenset({C.STRING, C.ENUM}),
    T.SET: frozenset({C.STRING, C.SET}),
    T.JSON: frozenset({C.JSON}) | _BLOBS,  # MariaDB's JSON is a LONGTEXT
    **{t: frozenset({C.GEOMETRY}) for t in (T.GEOMETRY, T.POINT, T.LINESTRING, T.MULTILINESTRING,
                                             T.POLYGON, T.MULTIPOLYGON)},
}
_OLD_TEMPORAL = frozenset({"time", "datetime", "timestamp"})


@dataclass(frozen=True)
class RowLayout:
    """One table version as its row images are logged. Picklable (shipped to the rows stage)."""

    table: str  # db.table, for messages
    names: tuple[str, ...]
    hints: tuple[ColumnHint, ...]
    logged: tuple[tuple[frozenset[int], str], ...]  # per ordinal: storage types, SQL type text
    unsigned: frozenset[int] = frozenset()
    old_temporal_fsp: tuple[tuple[int, int], ...] = ()
    refusal: str | None = None  # the schema is unknown here: every image is refused with this reason

    @classmethod
    def of(cls, schema: TableSchema) -> "RowLayout":
        ddl = schema.table_ddl(f"schema of {schema.database}.{schema.table}")
        sql_types = [_sql_type(c.definition) for c in schema.columns]
        return cls(
            table=f"{schema.database}.{schema.table}",
            names=tuple(c.name for c in ddl.columns),
            hints=tuple(hint_of(c) for c in ddl.columns),
            logged=tuple((LOGGED_TYPES.get(t, frozenset()), c.mysql_type)
                         for t, c in zip(sql_types, ddl.columns)),
            unsigned=frozenset(i for i, c in enumerate(ddl.columns) if c.unsigned),
            old_temporal_fsp=tuple((i, c.fsp) for i, c in enumerate(ddl.columns)
                                   if c.family in _OLD_TEMPORAL and c.fsp))

    @classmethod
    def refusing(cls, table: str, reason: str) -> "RowLayout":
        """The layout after a DDL the history could not apply: no image can be read safely."""
        return cls(table, (), (), (),
                   refusal=f"the schema of {table} is not known at this position: {reason}")

    def mismatch(self, column_types: Sequence[int]) -> str | None:
        """Why a Table_map's row images are not of this version; None when they fit. Asked per
        rows event: the answer is kept per column-type tuple (MariaDB logs a Table_map per
        transaction, each with the same types)."""
        cache = self.__dict__.setdefault("_checked", {})  # not a field: equality and hashing ignore it
        key = tuple(column_types)
        if key not in cache:
            cache[key] = self._mismatch(key)
        return cache[key]

    def _mismatch(self, column_types: Sequence[int]) -> str | None:
        if self.refusal is not None:
            return self.refusal
        if len(column_types) != len(self.names):
            return (f"the row image has {len(column_types)} columns, the schema of {self.table} in force "
                    f"at its position has {len(self.names)} ({', '.join(self.names)})")
        for ordinal, (code, (types, sql_type)) in enumerate(zip(column_types, self.logged)):
            if types and code not in types:
                return (f"column {ordinal + 1} of the row image is logged as {_type_name(code)}, "
                        f"the schema of {self.table} in force at its position has "
                        f"{self.names[ordinal]} {sql_type}")
        return None


def history_layouts(history: SchemaHistory, cache: dict) -> dict[tuple[str, str, str], list[tuple]]:
    """DecodeHints' layouts: per (source, database, table) of the history, its versions as
    (position key, RowLayout or None). None: the table does not exist there, or its schema has a
    type the targets cannot read (its rows then read by the declaration, as without a history).
    `cache`: TableSchema -> RowLayout, kept by the caller across batches."""
    out = {}
    for source, database, table in history.tables():
        layouts = []
        for version in history.versions(source, database, table):
            if version.error is not None:
                layout = RowLayout.refusing(f"{database}.{table}", version.error)
            elif version.schema is None:
                layout = None
            else:
                layout = cache.get(version.schema, _MISSING)
                if layout is _MISSING:
                    layout = cache[version.schema] = _layout_or_none(version.schema)
            layouts.append((version.position.key(), layout))
        out[(source, database, table)] = layouts
    return out


_MISSING = object()


def _layout_or_none(schema: TableSchema) -> "RowLayout | None":
    try:
        return RowLayout.of(schema)
    except TargetConfigError:
        return None


def _sql_type(definition: str) -> exp.DataType.Type | None:
    kind = column_def(definition).args.get("kind")
    return kind.this if isinstance(kind, exp.DataType) else None


def _type_name(code: int) -> str:
    try:
        return C(code).name
    except ValueError:
        return f"type {code}"

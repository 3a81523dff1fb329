"""One target from its YAML entry (libs/targets/config.py has the file's layout): its columns
from DDL, the source's schema or `columns:`, then key, defaults, leave_out, source_columns and
delta_table, each checked with a TargetConfigError naming the file and the field.

A source table is the pair (database, table) (libs/contracts/table_names.py): `a`.`b.c` and `a.b`.`c`
are two tables with two default Delta tables, never one split at the first dot.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Iterable, Mapping, Sequence

from sqlglot import exp
from sqlglot.errors import ParseError

from libs.binlog.charsets import charset_name
from libs.settings.errors import quoted
import libs.targets.model as model
import libs.targets.types as types
import libs.targets.values as values
from libs.contracts.sql_names import quote_identifier
from libs.tables.system_tables import SYSTEM_TABLE_PREFIX, SYSTEM_TABLES
from libs.contracts.table_names import TableName
from libs.targets.ddl import MariaDB, TableDDL, check_unique_names
from libs.targets.errors import TargetConfigError

_COLUMN_FIELDS = {"name", "type", "nullable", "default", "charset"}


@dataclass(frozen=True)
class TargetOverride:
    """A YAML entry with no columns of its own: fields for the target derived from the source."""

    name: TableName  # the source table
    entry: Mapping[str, Any]
    settings: Mapping[str, Any]
    path: str


def fail(path: str, where: str, message: str) -> TargetConfigError:
    return TargetConfigError(path, where, message)


def check_fields(path: str, where: str, data: Any, allowed: set[str]) -> Mapping[str, Any]:
    if not isinstance(data, Mapping):
        raise fail(path, where, f"must be a mapping, got {type(data).__name__}")
    unknown = sorted(set(map(str, data)) - allowed)
    if unknown:
        raise fail(path, where, f"unknown field(s) {quoted(unknown)}; allowed: {sorted(allowed)}")
    return data


def _names(path: str, where: str, data: Any) -> tuple[str, ...]:
    if not isinstance(data, list) or not data or not all(isinstance(x, str) and x for x in data):
        raise fail(path, where, "must be a non-empty list of column names")
    return tuple(data)


def _means_now(raw: Any) -> bool:
    """A YAML default that is DEFAULT CURRENT_TIMESTAMP: `CURRENT_TIMESTAMP`, `NOW()`, ..."""
    return str(raw).upper().rstrip("()") in ("CURRENT_TIMESTAMP", "NOW")


def _default_for(column: model.Column, raw: Any, path: str, where: str) -> model.Column:
    if raw is None:
        return replace(column, default_kind=model.LITERAL_DEFAULT, default=None)
    text = str(raw)
    if column.family in model.TEMPORAL_FAMILIES and _means_now(raw):
        return replace(column, default_kind=model.CURRENT_TIMESTAMP_DEFAULT, default=None)
    if isinstance(raw, bool):
        text = "1" if raw else "0"
    try:
        return replace(column, default_kind=model.LITERAL_DEFAULT, default=values.from_text(column, text))
    except ValueError as exc:
        raise fail(path, where, str(exc)) from None


def _yaml_column(path: str, where: str, data: Any) -> model.Column:
    data = check_fields(path, where, data, _COLUMN_FIELDS)
    name, type_text = data.get("name"), data.get("type")
    if not isinstance(name, str) or not name:
        raise fail(path, f"{where}.name", "required, a column name")
    if not isinstance(type_text, str) or not type_text:
        raise fail(path, f"{where}.type", "required, a MySQL type such as INT or VARCHAR(10)")
    nullable = data.get("nullable", True)
    if not isinstance(nullable, bool):
        raise fail(path, f"{where}.nullable", "must be true or false")
    charset = data.get("charset")
    if charset is not None and (not isinstance(charset, str) or charset_name(charset) is None):
        raise fail(path, f"{where}.charset", f"unknown charset {quoted(charset)}")
    try:
        dtype = exp.DataType.build(type_text, dialect=MariaDB)
        column = types.column_of(name, dtype, dtype.sql(dialect=MariaDB), nullable=nullable,
                                 charset=charset_name(charset) if charset else None)
    except (ParseError, ValueError, KeyError):
        raise fail(path, f"{where}.type", f"unsupported MySQL type {quoted(type_text)}") from None
    if "default" in data:
        column = _default_for(column, data["default"], path, f"{where}.default")
    return column


def _check_known(path: str, where: str, names: Iterable[str], columns: Sequence[model.Column]) -> None:
    known = {c.name.lower() for c in columns}
    for name in names:
        if name.lower() not in known:
            raise fail(path, where,
                       f"{quoted(name)} is not a column of the target (columns: {[c.name for c in columns]})")


# The job's own Delta tables live under delta_root next to the targets (libs/tables/system_tables.py).
# A target named like one would be mixed into it, so the whole prefix is reserved
# (case-insensitively: a case-insensitive file system or catalog folds it).
def check_delta_table(path: str, where: str, name: Any) -> None:
    """A Delta table name is one directory under delta_root, and not one of the job's own."""
    if not isinstance(name, str) or not name.strip():
        raise fail(path, where, "must be a non-empty string")
    if name in (".", "..") or any(c in name for c in "/\\\0"):
        raise fail(path, where, f"{quoted(name)} must be a single path segment (no '/', not '.' or '..')")
    if name.lower().startswith(SYSTEM_TABLE_PREFIX):
        raise fail(path, where, f"{quoted(name)}: names starting with {SYSTEM_TABLE_PREFIX!r} are reserved "
                                 f"for the job's own tables ({', '.join(SYSTEM_TABLES)}); "
                                 f"set another delta_table")


def _leave_out(path: str, where: str, data: Any, columns: list[model.Column]) -> list[model.Column]:
    """The columns without the left-out ones, which must be the source's last: row images map
    onto the target by position, and WL#5092 drops only a source's extra trailing columns."""
    names = _names(path, where, data)
    _check_known(path, where, names, columns)
    left = {n.lower() for n in names}
    keep = len(columns) - len(left)
    if {c.name.lower() for c in columns[keep:]} != left or keep == 0:
        raise fail(path, where, f"{list(names)} must be the table's last column(s), not all of them "
                                 f"(columns: {[c.name for c in columns]}): WL#5092 replays a source "
                                 f"with extra columns only at the end")
    return columns[:keep]


def build_target(path: str, name: TableName, data: Mapping[str, Any], settings: Mapping[str, Any],
                  ddl: TableDDL | None) -> model.Target:
    where = f"targets.{name.key()}"
    database, table = name
    if ddl is not None and "columns" in data:
        raise fail(path, f"{where}.columns",
                   f"the table is also declared as DDL in {ddl.path}; declare columns once")
    if ddl is None and "columns" not in data:
        raise fail(path, where, "no columns: add `columns:` or declare the table in a DDL file")
    if ddl is None and "leave_out" in data:
        raise fail(path, f"{where}.leave_out", "for a table with DDL or a source schema; with "
                                                 "`columns:` list only the columns to keep")
    if ddl is not None:
        columns, primary, uniques = list(ddl.columns), ddl.primary_key, ddl.unique_keys
        if "leave_out" in data:
            columns = _leave_out(path, f"{where}.leave_out", data["leave_out"], columns)
            kept = {c.name.lower() for c in columns}
            uniques = tuple(u for u in uniques if all(k.lower() in kept for k in u))
            if any(k.lower() not in kept for k in primary):
                raise fail(path, f"{where}.leave_out", f"leaves out a PRIMARY KEY column {list(primary)}")
    else:
        raw = data["columns"]
        if not isinstance(raw, list) or not raw:
            raise fail(path, f"{where}.columns", "must be a non-empty list")
        columns = [_yaml_column(path, f"{where}.columns[{i}]", c) for i, c in enumerate(raw)]
        check_unique_names(columns, path, f"{where}.columns")
        primary, uniques = (), ()
    if "key" in data:
        key = _names(path, f"{where}.key", data["key"])
        _check_known(path, f"{where}.key", key, columns)
        if primary and tuple(k.lower() for k in key) != tuple(k.lower() for k in primary):
            raise fail(path, f"{where}.key",
                       f"the DDL declares PRIMARY KEY {list(primary)}; key would contradict it")
        primary = tuple(next(c.name for c in columns if c.name.lower() == k.lower()) for k in key)
    overrides = data.get("defaults", {})
    check_fields(path, f"{where}.defaults", overrides, {c.name for c in columns})
    columns = [_default_for(c, overrides[c.name], path, f"{where}.defaults.{c.name}")
               if c.name in overrides else c
               for c in columns]
    columns = [replace(c, zero_dates=settings["zero_dates"]) for c in columns]
    source_columns = (_names(path, f"{where}.source_columns", data["source_columns"])
                      if "source_columns" in data else ())
    delta_table = data.get("delta_table", model.default_delta_table_name(database, table))
    check_delta_table(path, f"{where}.delta_table", delta_table)
    return model.Target(
        database=database, table=table, delta_table=delta_table, columns=tuple(columns),
        primary_key=tuple(primary), unique_keys=tuple(uniques), source_column_names=source_columns,
        apply=settings["apply"], on_statement=settings["on_statement"],
        history=settings.get("history") or model.HISTORY_CURRENT, delete=settings.get("delete"),
        declared_in=", ".join(p for p in (path, ddl.path if ddl else "") if p),
    )


def yaml_create_table(name: TableName, columns: Sequence[Mapping[str, Any]]) -> str:
    """YAML `columns:` (validated) as the CREATE TABLE they declare."""
    definitions = []
    for c in columns:
        sql = f"{quote_identifier(c['name'])} {c['type']}"
        if c.get("charset"):
            sql += f" CHARACTER SET {c['charset']}"
        if c.get("nullable", True) is False:
            sql += " NOT NULL"
        if "default" in c:
            raw = c["default"]
            if raw is None:
                sql += " DEFAULT NULL"
            elif _means_now(raw):
                sql += " DEFAULT CURRENT_TIMESTAMP"
            else:
                literal = exp.Literal.string(str(int(raw)) if isinstance(raw, bool) else str(raw))
                sql += f" DEFAULT {literal.sql(dialect=MariaDB)}"
        definitions.append(sql)
    return f"CREATE TABLE {name.quoted()} ({', '.join(definitions)})"


def override_entry(path: str, name: TableName, entry: Mapping[str, Any],
                   settings: Mapping[str, Any]) -> TargetOverride:
    """An entry without columns, checked as far as it can be before the source schema comes."""
    where = f"targets.{name.key()}"  # its fields were checked against _TARGET_FIELDS, `columns` is absent
    if "source_columns" in entry:
        raise fail(path, f"{where}.source_columns", "names the columns of `columns:`; a target derived from "
                                                     "the source takes the source's names")
    for names in ("key", "leave_out"):
        if names in entry:
            _names(path, f"{where}.{names}", entry[names])
    if not isinstance(entry.get("defaults", {}), Mapping):
        raise fail(path, f"{where}.defaults", "must be a mapping of column name to DEFAULT")
    check_delta_table(path, f"{where}.delta_table",
                       entry.get("delta_table", model.default_delta_table_name(*name)))
    return TargetOverride(name, dict(entry), settings, path)

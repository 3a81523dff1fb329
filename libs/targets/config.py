"""Target declarations: a YAML file plus optional CREATE TABLE DDL files, loaded once, validated.

YAML layout (every field optional except what a table needs to have columns; see
conf/targets.example.yaml):

    ddl: [replica_schema.sql]          # DDL files, relative to this YAML file
    defaults:                          # for every target unless the target overrides it
      apply: rows                      # rows | statements | both          (WL#3303)
      on_statement: error              # error | quarantine  (statement DML on a rows-only target)
      zero_dates: to_null              # to_null | fail  (a zero or partial date: NULL, or stop)
    targets:
      shop.orders:                     # source `db.table`
        delta_table: shop__orders      # default <db>__<table>
        key: [id]                      # key columns when the target declares no PRIMARY KEY
        apply: both
        on_statement: quarantine
        source_columns: [id, status]   # source column names by ordinal (no Table_map names)
        columns:                       # the target's columns, when no DDL declares the table
          - {name: id, type: INT, nullable: false}
          - {name: status, type: VARCHAR(10), default: new, charset: latin1}
        defaults: {status: new}        # override a DDL DEFAULT (slave-side default, WL#5092)
      shop.customers:                  # no columns, no DDL: overrides of the target the job
        delta_table: customers         # derives from the source's SHOW CREATE TABLE
        defaults: {tier: basic}        # (JobConfig.tables.from_source; README "Onboarding")
        leave_out: [legacy_flags]      # the source's last column(s), not replicated (WL#5092)

Tables of the DDL files without a YAML entry become targets with the `defaults`. An entry with
neither `columns` nor DDL is an override (TargetOverride): its fields apply, one by one, to the
target derived from the source's schema when a snapshot publishes it, and are checked against
that schema then (a `defaults` or `key` column the source lacks stops the job with one line).
Every error is a TargetConfigError naming the file and the field.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from typing import Any, Iterable, Mapping, Sequence

from sqlglot import exp
from sqlglot.errors import ParseError

from libs.binlog.charsets import charset_name
from libs.config_errors import quoted
from libs.config_yaml import YamlFileError, read_yaml_file
import libs.targets.model as model
import libs.targets.types as types
import libs.targets.values as values
from libs.sql_names import quote_identifier
from libs.system_tables import SYSTEM_TABLE_PREFIX, SYSTEM_TABLES
from libs.targets.ddl import MariaDB, TableDDL, check_unique_names, load_ddl_file
from libs.targets.errors import TargetConfigError

# The job's own Delta tables live under delta_root next to the targets (libs/system_tables.py).
# A target named like one would be mixed into it, so the whole prefix is reserved
# (case-insensitively: a case-insensitive file system or catalog folds it).
_TOP_FIELDS = {"ddl", "defaults", "targets"}
_SETTING_FIELDS = {"apply", "on_statement", "zero_dates"}
_OVERRIDE_FIELDS = _SETTING_FIELDS | {"delta_table", "key", "defaults", "leave_out"}
_TARGET_FIELDS = _OVERRIDE_FIELDS | {"source_columns", "columns"}
_COLUMN_FIELDS = {"name", "type", "nullable", "default", "charset"}
_APPLY = {"rows": frozenset({model.APPLY_ROWS}), "statements": frozenset({model.APPLY_STATEMENTS}),
          "both": frozenset({model.APPLY_ROWS, model.APPLY_STATEMENTS})}
_ON_STATEMENT = {model.ON_STATEMENT_ERROR, model.ON_STATEMENT_QUARANTINE}
_BASE_SETTINGS = {"apply": _APPLY["rows"], "on_statement": model.ON_STATEMENT_ERROR,
                  "zero_dates": model.ZERO_DATES_TO_NULL}


@dataclass(frozen=True)
class TargetOverride:
    """A YAML entry with no columns of its own: fields for the target derived from the source."""

    name: str  # source `db.table`
    entry: Mapping[str, Any]
    settings: Mapping[str, Any]
    path: str


@dataclass(frozen=True)
class Declaration:
    """A target declared by hand, kept with what built it, so that the source's DDL can change
    it as a replica's DDL changes its own table (libs/schema_history/declared_schemas.py)."""

    name: str  # source `db.table`
    entry: Mapping[str, Any]
    settings: Mapping[str, Any]
    path: str
    create_table: str  # the declared table as CREATE TABLE (its DDL, or its YAML `columns:`)


@dataclass(frozen=True)
class TargetCatalog:
    """All declared targets, looked up by source (database, table)."""

    targets: tuple[model.Target, ...]
    """Every target, in declaration order."""
    overrides: tuple[TargetOverride, ...] = ()
    """Entries waiting for their table's source schema (with_source)."""
    path: str = "<no targets file>"
    settings: Mapping[str, Any] = field(default_factory=lambda: _BASE_SETTINGS, compare=False)
    """The YAML's `defaults:` settings, for targets derived from the source."""
    declarations: tuple[Declaration, ...] = field(default=(), compare=False)
    """How each declared target was built (`following`)."""

    def following(self, schemas: Mapping[str, TableDDL | None]) -> "TargetCatalog":
        """The catalog with each declared target named in `schemas` (source `db.table`) following
        the source's DDL: built again from its declaration's fields on the given schema (the
        declaration as the stream's DDL changed it), or as declared where the schema is None
        (nothing changed it). Its `defaults` apply to the columns it still has; `leave_out` and
        `source_columns` were the declaration's, the followed schema has its own."""
        by_name = {d.name: d for d in self.declarations if d.name in schemas}
        targets = []
        for target in self.targets:
            declaration = by_name.get(target.qualified_name)
            ddl = schemas.get(target.qualified_name) if declaration else None
            if ddl is not None:
                entry = {k: v for k, v in declaration.entry.items() if k not in ("columns", "leave_out", "source_columns")}
                kept = {c.name.lower(): c.name for c in ddl.columns}  # names are case-insensitive
                entry["defaults"] = {kept[c.lower()]: v for c, v in dict(entry.get("defaults") or {}).items()
                                     if c.lower() in kept}
                declared_in = f"{target.declared_in} (as the source's DDL changed it)"
                target = replace(_build_target(declaration.path, declaration.name, entry, declaration.settings, ddl),
                                 declared_in=declared_in)
            if declaration is not None:
                target = replace(target, follows_source=True)
            targets.append(target)
        return replace(self, targets=tuple(targets))

    def with_source(self, source_ddl: Sequence[TableDDL]) -> "TargetCatalog":
        """This catalog plus a target per source table schema (SHOW CREATE TABLE), built with
        its override when it has one. The caller passes only tables without a declared target."""
        overrides = {o.name: o for o in self.overrides}
        derived = []
        for ddl in source_ddl:
            name = f"{ddl.database}.{ddl.table}"
            o = overrides.get(name) or TargetOverride(name, {}, self.settings, ddl.path)
            derived.append(replace(_build_target(o.path, name, o.entry, o.settings, ddl), follows_source=True))
        targets = self.targets + tuple(derived)
        _check_delta_names(targets, self.path)
        return replace(self, targets=targets)

    def get(self, database: str, table: str) -> model.Target | None:
        """The target of source `database.table`, or None when it is not declared."""
        for target in self.targets:
            if target.database == database and target.table == table:
                return target
        return None


def _fail(path: str, where: str, message: str) -> TargetConfigError:
    return TargetConfigError(path, where, message)


def _check_fields(path: str, where: str, data: Any, allowed: set[str]) -> Mapping[str, Any]:
    if not isinstance(data, Mapping):
        raise _fail(path, where, f"must be a mapping, got {type(data).__name__}")
    unknown = sorted(set(map(str, data)) - allowed)
    if unknown:
        raise _fail(path, where, f"unknown field(s) {quoted(unknown)}; allowed: {sorted(allowed)}")
    return data


def _names(path: str, where: str, data: Any) -> tuple[str, ...]:
    if not isinstance(data, list) or not data or not all(isinstance(x, str) and x for x in data):
        raise _fail(path, where, "must be a non-empty list of column names")
    return tuple(data)


def _settings(path: str, where: str, data: Mapping[str, Any], base: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(base)
    if "apply" in data:
        if not isinstance(data["apply"], str) or data["apply"] not in _APPLY:
            raise _fail(path, f"{where}.apply", f"must be one of {sorted(_APPLY)}, got {quoted(data['apply'])}")
        out["apply"] = _APPLY[data["apply"]]
    if "on_statement" in data:
        if not isinstance(data["on_statement"], str) or data["on_statement"] not in _ON_STATEMENT:
            raise _fail(path, f"{where}.on_statement", f"must be one of {sorted(_ON_STATEMENT)}, got {quoted(data['on_statement'])}")
        out["on_statement"] = data["on_statement"]
    if "zero_dates" in data:
        if data["zero_dates"] not in model.ZERO_DATES:
            raise _fail(path, f"{where}.zero_dates", f"must be one of {list(model.ZERO_DATES)}, got {quoted(data['zero_dates'])}")
        out["zero_dates"] = data["zero_dates"]
    return out


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
        raise _fail(path, where, str(exc)) from None


def _yaml_column(path: str, where: str, data: Any) -> model.Column:
    data = _check_fields(path, where, data, _COLUMN_FIELDS)
    name, type_text = data.get("name"), data.get("type")
    if not isinstance(name, str) or not name:
        raise _fail(path, f"{where}.name", "required, a column name")
    if not isinstance(type_text, str) or not type_text:
        raise _fail(path, f"{where}.type", "required, a MySQL type such as INT or VARCHAR(10)")
    nullable = data.get("nullable", True)
    if not isinstance(nullable, bool):
        raise _fail(path, f"{where}.nullable", "must be true or false")
    charset = data.get("charset")
    if charset is not None and (not isinstance(charset, str) or charset_name(charset) is None):
        raise _fail(path, f"{where}.charset", f"unknown charset {quoted(charset)}")
    try:
        dtype = exp.DataType.build(type_text, dialect=MariaDB)
        column = types.column_of(name, dtype, dtype.sql(dialect=MariaDB), nullable=nullable,
                                 charset=charset_name(charset) if charset else None)
    except (ParseError, ValueError, KeyError):
        raise _fail(path, f"{where}.type", f"unsupported MySQL type {quoted(type_text)}") from None
    if "default" in data:
        column = _default_for(column, data["default"], path, f"{where}.default")
    return column


def _check_known(path: str, where: str, names: Iterable[str], columns: Sequence[model.Column]) -> None:
    known = {c.name.lower() for c in columns}
    for name in names:
        if name.lower() not in known:
            raise _fail(path, where, f"{quoted(name)} is not a column of the target (columns: {[c.name for c in columns]})")


def _check_delta_table(path: str, where: str, name: Any) -> None:
    """A Delta table name is one directory under delta_root, and not one of the job's own."""
    if not isinstance(name, str) or not name.strip():
        raise _fail(path, where, "must be a non-empty string")
    if name in (".", "..") or any(c in name for c in "/\\\0"):
        raise _fail(path, where, f"{quoted(name)} must be a single path segment (no '/', not '.' or '..')")
    if name.lower().startswith(SYSTEM_TABLE_PREFIX):
        raise _fail(path, where, f"{quoted(name)}: names starting with {SYSTEM_TABLE_PREFIX!r} are reserved "
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
        raise _fail(path, where, f"{list(names)} must be the table's last column(s), not all of them "
                                 f"(columns: {[c.name for c in columns]}): WL#5092 replays a source "
                                 f"with extra columns only at the end")
    return columns[:keep]


def _build_target(path: str, name: str, data: Mapping[str, Any], settings: Mapping[str, Any],
                  ddl: TableDDL | None) -> model.Target:
    where = f"targets.{name}"
    database, table = name.split(".", 1)
    if ddl is not None and "columns" in data:
        raise _fail(path, f"{where}.columns", f"the table is also declared as DDL in {ddl.path}; declare columns once")
    if ddl is None and "columns" not in data:
        raise _fail(path, where, "no columns: add `columns:` or declare the table in a DDL file")
    if ddl is None and "leave_out" in data:
        raise _fail(path, f"{where}.leave_out", "for a table with DDL or a source schema; with "
                                                 "`columns:` list only the columns to keep")
    if ddl is not None:
        columns, primary, uniques = list(ddl.columns), ddl.primary_key, ddl.unique_keys
        if "leave_out" in data:
            columns = _leave_out(path, f"{where}.leave_out", data["leave_out"], columns)
            kept = {c.name.lower() for c in columns}
            uniques = tuple(u for u in uniques if all(k.lower() in kept for k in u))
            if any(k.lower() not in kept for k in primary):
                raise _fail(path, f"{where}.leave_out", f"leaves out a PRIMARY KEY column {list(primary)}")
    else:
        raw = data["columns"]
        if not isinstance(raw, list) or not raw:
            raise _fail(path, f"{where}.columns", "must be a non-empty list")
        columns = [_yaml_column(path, f"{where}.columns[{i}]", c) for i, c in enumerate(raw)]
        check_unique_names(columns, path, f"{where}.columns")
        primary, uniques = (), ()
    if "key" in data:
        key = _names(path, f"{where}.key", data["key"])
        _check_known(path, f"{where}.key", key, columns)
        if primary and tuple(k.lower() for k in key) != tuple(k.lower() for k in primary):
            raise _fail(path, f"{where}.key", f"the DDL declares PRIMARY KEY {list(primary)}; key would contradict it")
        primary = tuple(next(c.name for c in columns if c.name.lower() == k.lower()) for k in key)
    overrides = data.get("defaults", {})
    _check_fields(path, f"{where}.defaults", overrides, {c.name for c in columns})
    columns = [_default_for(c, overrides[c.name], path, f"{where}.defaults.{c.name}") if c.name in overrides else c
               for c in columns]
    columns = [replace(c, zero_dates=settings["zero_dates"]) for c in columns]
    source_columns = _names(path, f"{where}.source_columns", data["source_columns"]) if "source_columns" in data else ()
    delta_table = data.get("delta_table", model.default_delta_table_name(database, table))
    _check_delta_table(path, f"{where}.delta_table", delta_table)
    return model.Target(
        database=database, table=table, delta_table=delta_table, columns=tuple(columns),
        primary_key=tuple(primary), unique_keys=tuple(uniques), source_column_names=source_columns,
        apply=settings["apply"], on_statement=settings["on_statement"],
        declared_in=", ".join(p for p in (path, ddl.path if ddl else "") if p),
    )


def build_catalog(data: Mapping[str, Any] | None, path: str, ddl_tables: Sequence[TableDDL] = ()) -> TargetCatalog:
    """Validate a parsed YAML document (None = no YAML) together with parsed DDL tables."""
    data = _check_fields(path, "", data or {}, _TOP_FIELDS)
    settings = _settings(path, "defaults", _check_fields(path, "defaults", data.get("defaults", {}), _SETTING_FIELDS),
                         _BASE_SETTINGS)
    by_name: dict[str, TableDDL] = {}
    for table in ddl_tables:
        qualified = f"{table.database}.{table.table}"
        if qualified in by_name:
            raise _fail(table.path, qualified, f"declared twice (also in {by_name[qualified].path})")
        by_name[qualified] = table
    declared = data.get("targets", {}) or {}
    if not isinstance(declared, Mapping):
        raise _fail(path, "targets", "must be a mapping of `db.table` to its declaration")
    targets, overrides, declarations = [], [], []
    for name, entry in declared.items():
        if not isinstance(name, str) or name.count(".") != 1 or not all(name.split(".")):
            raise _fail(path, f"targets.{name}", "the key must be a source `db.table`")
        where = f"targets.{name}"
        entry = _check_fields(path, where, entry or {}, _TARGET_FIELDS)
        entry_settings = _settings(path, where, entry, settings)
        ddl = by_name.pop(name, None)
        if ddl is None and "columns" not in entry:
            overrides.append(_override(path, name, entry, entry_settings))
        else:
            targets.append(_build_target(path, name, entry, entry_settings, ddl))
            declarations.append(Declaration(name, entry, entry_settings, path,
                                            ddl.create_table if ddl else _yaml_create_table(name, entry["columns"])))
    for name, table in by_name.items():
        targets.append(_build_target(table.path, name, {}, settings, table))
        declarations.append(Declaration(name, {}, settings, table.path, table.create_table))
    _check_delta_names(targets, path, overrides)
    return TargetCatalog(tuple(targets), tuple(overrides), path, settings, tuple(declarations))


def _yaml_create_table(name: str, columns: Sequence[Mapping[str, Any]]) -> str:
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
                sql += f" DEFAULT {exp.Literal.string(str(int(raw)) if isinstance(raw, bool) else str(raw)).sql(dialect=MariaDB)}"
        definitions.append(sql)
    database, table = name.split(".", 1)
    return f"CREATE TABLE {quote_identifier(database)}.{quote_identifier(table)} ({', '.join(definitions)})"


def _override(path: str, name: str, entry: Mapping[str, Any], settings: Mapping[str, Any]) -> TargetOverride:
    """An entry without columns, checked as far as it can be before the source schema comes."""
    where = f"targets.{name}"  # its fields were checked against _TARGET_FIELDS, `columns` is absent
    if "source_columns" in entry:
        raise _fail(path, f"{where}.source_columns", "names the columns of `columns:`; a target derived from "
                                                     "the source takes the source's names")
    for names in ("key", "leave_out"):
        if names in entry:
            _names(path, f"{where}.{names}", entry[names])
    if not isinstance(entry.get("defaults", {}), Mapping):
        raise _fail(path, f"{where}.defaults", "must be a mapping of column name to DEFAULT")
    _check_delta_table(path, f"{where}.delta_table",
                       entry.get("delta_table", model.default_delta_table_name(*name.split(".", 1))))
    return TargetOverride(name, dict(entry), settings, path)


def _check_delta_names(targets: Sequence[model.Target], path: str,
                       overrides: Sequence[TargetOverride] = ()) -> None:
    """Two sources never share a Delta table (overrides count with the name they will have)."""
    delta_names: dict[str, str] = {}
    named = [(t.qualified_name, t.delta_table) for t in targets] + [
        (o.name, o.entry["delta_table"]) for o in overrides if "delta_table" in o.entry]
    for source, delta_table in named:
        other = delta_names.setdefault(delta_table, source)
        if other != source:
            raise _fail(path, f"targets.{source}.delta_table", f"{quoted(delta_table)} is also the Delta table of {other}")


def load_targets(config_path: str | None = None, ddl_paths: Sequence[str] = ()) -> TargetCatalog:
    """Load the YAML declaration (optional) and DDL files (`ddl:` entries plus `ddl_paths`,
    e.g. the `--target-ddl FILE.sql` arguments) into a validated TargetCatalog."""
    data: Any = None
    files = list(ddl_paths)
    if config_path is not None:
        try:
            data = read_yaml_file(config_path)
        except OSError as exc:
            raise _fail(config_path, "", f"cannot read: {exc.strerror}") from None
        except YamlFileError as exc:
            raise _fail(config_path, "", str(exc)) from None
        listed = (data or {}).get("ddl", []) if isinstance(data, Mapping) else []
        if isinstance(listed, str):
            listed = [listed]
        if not isinstance(listed, list) or not all(isinstance(p, str) for p in listed):
            raise _fail(config_path, "ddl", "must be a file name or a list of file names")
        base = os.path.dirname(config_path)
        files = [os.path.join(base, p) for p in listed] + files
    tables = [table for file in files for table in load_ddl_file(file)]
    return build_catalog(data, config_path or "<no targets file>", tables)

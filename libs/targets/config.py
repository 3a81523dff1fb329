"""Target declarations: a YAML file plus optional CREATE TABLE DDL files, loaded once, validated.

YAML layout (every field optional except what a table needs to have columns; see
conf/targets.example.yaml):

    ddl: [replica_schema.sql]          # DDL files, relative to this YAML file
    defaults:                          # for every target unless the target overrides it
      apply: rows                      # rows | statements | both          (WL#3303)
      on_statement: error              # error | quarantine  (statement DML on a rows-only target)
      zero_dates: to_null              # to_null | fail  (a zero or partial date: NULL, or stop)
      history: current                 # current | scd2  (one row per version; unset: tables.history)
      delete: hard                     # hard | soft  (a deleted row stays flagged; unset: tables.delete)
    targets:
      shop.orders:                     # source `db.table` (`db`.`table` quoted if a name has a ".")
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
from typing import Any, Mapping, Sequence


from libs.settings.errors import quoted
from libs.settings.yaml_files import YamlFileError, read_yaml_file
import libs.targets.model as model
from libs.contracts.table_names import TableName, parse_table_key
from libs.targets.ddl import TableDDL, load_ddl_file
from libs.targets.target_entry import TargetOverride, yaml_create_table
from libs.targets.target_entry import build_target as _build_target, check_fields as _check_fields
from libs.targets.target_entry import fail as _fail, override_entry as _override

_TOP_FIELDS = {"ddl", "defaults", "targets"}
_SETTING_FIELDS = {"apply", "on_statement", "zero_dates", "history", "delete"}
_OVERRIDE_FIELDS = _SETTING_FIELDS | {"delta_table", "key", "defaults", "leave_out"}
_TARGET_FIELDS = _OVERRIDE_FIELDS | {"source_columns", "columns"}
_APPLY = {"rows": frozenset({model.APPLY_ROWS}), "statements": frozenset({model.APPLY_STATEMENTS}),
          "both": frozenset({model.APPLY_ROWS, model.APPLY_STATEMENTS})}
_ON_STATEMENT = {model.ON_STATEMENT_ERROR, model.ON_STATEMENT_QUARANTINE}
_BASE_SETTINGS = {"apply": _APPLY["rows"], "on_statement": model.ON_STATEMENT_ERROR,
                  "zero_dates": model.ZERO_DATES_TO_NULL, "history": None,
                  "delete": None}  # None: the job's tables.history


@dataclass(frozen=True)
class Declaration:
    """A target declared by hand, kept with what built it, so that the source's DDL can change
    it as a replica's DDL changes its own table (libs/schema_history/declared_schemas.py)."""

    name: TableName  # the source table
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

    def following(self, schemas: Mapping[TableName, TableDDL | None]) -> "TargetCatalog":
        """The catalog with each declared target named in `schemas` (source table) following
        the source's DDL: built again from its declaration's fields on the given schema (the
        declaration as the stream's DDL changed it), or as declared where the schema is None
        (nothing changed it). Its `defaults` apply to the columns it still has; `leave_out` and
        `source_columns` were the declaration's, the followed schema has its own."""
        by_name = {d.name: d for d in self.declarations if d.name in schemas}
        targets = []
        for target in self.targets:
            source = TableName(target.database, target.table)
            declaration = by_name.get(source)
            ddl = schemas.get(source) if declaration else None
            if ddl is not None:
                entry = {k: v for k, v in declaration.entry.items()
                         if k not in ("columns", "leave_out", "source_columns")}
                kept = {c.name.lower(): c.name for c in ddl.columns}  # names are case-insensitive
                entry["defaults"] = {kept[c.lower()]: v for c, v in dict(entry.get("defaults") or {}).items()
                                     if c.lower() in kept}
                declared_in = f"{target.declared_in} (as the source's DDL changed it)"
                target = replace(
                    _build_target(declaration.path, declaration.name, entry, declaration.settings, ddl),
                    declared_in=declared_in)
            if declaration is not None:
                target = replace(target, follows_source=True)
            targets.append(target)
        return replace(self, targets=tuple(targets))

    def with_source(self, source_ddl: Sequence[TableDDL], history: str | None = None) -> "TargetCatalog":
        """This catalog plus a target per source table schema (SHOW CREATE TABLE), built with
        its override when it has one. The caller passes only tables without a declared target.
        `history`: theirs where the YAML sets none (the job's tables.history)."""
        overrides = {o.name: o for o in self.overrides}
        derived = []
        for ddl in source_ddl:
            name = TableName(ddl.database, ddl.table)
            o = overrides.get(name) or TargetOverride(name, {}, self.settings, ddl.path)
            settings = {**o.settings, "history": o.settings.get("history") or history}
            derived.append(replace(_build_target(o.path, name, o.entry, settings, ddl), follows_source=True))
        targets = self.targets + tuple(derived)
        _check_delta_names(targets, self.path)
        return replace(self, targets=targets)

    def get(self, database: str, table: str) -> model.Target | None:
        """The target of source `database.table`, or None when it is not declared."""
        for target in self.targets:
            if target.database == database and target.table == table:
                return target
        return None


_CHOICES = {"zero_dates": model.ZERO_DATES, "history": model.HISTORIES, "delete": model.DELETE_MODES}


def _settings(path: str, where: str, data: Mapping[str, Any], base: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(base)
    if "apply" in data:
        if not isinstance(data["apply"], str) or data["apply"] not in _APPLY:
            raise _fail(path, f"{where}.apply",
                        f"must be one of {sorted(_APPLY)}, got {quoted(data['apply'])}")
        out["apply"] = _APPLY[data["apply"]]
    if "on_statement" in data:
        if not isinstance(data["on_statement"], str) or data["on_statement"] not in _ON_STATEMENT:
            raise _fail(path, f"{where}.on_statement",
                        f"must be one of {sorted(_ON_STATEMENT)}, got {quoted(data['on_statement'])}")
        out["on_statement"] = data["on_statement"]
    for name, choices in _CHOICES.items():
        if name in data:
            if data[name] not in choices:
                raise _fail(path, f"{where}.{name}",
                            f"must be one of {list(choices)}, got {quoted(data[name])}")
            out[name] = data[name]
    if out.get("history") == model.HISTORY_SCD2 and out.get("delete") == model.DELETE_SOFT:
        own = {name for name in ("history", "delete") if name in data}
        if len(own) != 1:
            raise _fail(path, where, "`history: scd2` and `delete: soft` together: "
                                     "an SCD2 target keeps a deleted row as its closed version (`_deleted`) "
                                     "already; set one of them")
        # the entry's own setting wins over the other one it inherits from `defaults:`
        out.update(delete=None) if "history" in own else out.update(history=model.HISTORY_CURRENT)
    return out


def build_catalog(data: Mapping[str, Any] | None, path: str,
                  ddl_tables: Sequence[TableDDL] = ()) -> TargetCatalog:
    """Validate a parsed YAML document (None = no YAML) together with parsed DDL tables."""
    data = _check_fields(path, "", data or {}, _TOP_FIELDS)
    settings = _settings(path, "defaults",
                         _check_fields(path, "defaults", data.get("defaults", {}), _SETTING_FIELDS),
                         _BASE_SETTINGS)
    by_name: dict[TableName, TableDDL] = {}
    for table in ddl_tables:
        name = TableName(table.database, table.table)
        if name in by_name:
            raise _fail(table.path, name.key(), f"declared twice (also in {by_name[name].path})")
        by_name[name] = table
    declared = data.get("targets", {}) or {}
    if not isinstance(declared, Mapping):
        raise _fail(path, "targets", "must be a mapping of `db.table` to its declaration")
    targets, overrides, declarations = [], [], []
    for key, entry in declared.items():
        name = _source_table(path, key)
        where = f"targets.{key}"
        entry = _check_fields(path, where, entry or {}, _TARGET_FIELDS)
        entry_settings = _settings(path, where, entry, settings)
        ddl = by_name.pop(name, None)
        if ddl is None and "columns" not in entry:
            overrides.append(_override(path, name, entry, entry_settings))
        else:
            targets.append(_build_target(path, name, entry, entry_settings, ddl))
            declarations.append(Declaration(name, entry, entry_settings, path,
                                            ddl.create_table if ddl
                                            else yaml_create_table(name, entry["columns"])))
    for name, table in by_name.items():
        targets.append(_build_target(table.path, name, {}, settings, table))
        declarations.append(Declaration(name, {}, settings, table.path, table.create_table))
    _check_delta_names(targets, path, overrides)
    return TargetCatalog(tuple(targets), tuple(overrides), path, settings, tuple(declarations))


def _source_table(path: str, key: Any) -> TableName:
    """A `targets:` key: 'db.table', or `db`.`table` quoted when a name has a '.' in it."""
    if isinstance(key, str) and key.startswith("`"):
        try:
            return parse_table_key(key)
        except ValueError:
            pass
    elif isinstance(key, str) and key.count(".") == 1 and all(key.split(".")):
        return TableName(*key.split("."))
    raise _fail(path, f"targets.{key}", "the key must be a source `db.table` (quoted as `db`.`table` "
                                        "when a name has a '.')")


def _check_delta_names(targets: Sequence[model.Target], path: str,
                       overrides: Sequence[TargetOverride] = ()) -> None:
    """Two source tables never share a Delta table (overrides count with the name they will
    have): by their (database, table) pair, so `a`.`b.c` and `a.b`.`c` are two sources."""
    delta_names: dict[str, TableName] = {}
    named = [(TableName(t.database, t.table), t.delta_table) for t in targets] + [
        (o.name, o.entry["delta_table"]) for o in overrides if "delta_table" in o.entry]
    for source, delta_table in named:
        other = delta_names.setdefault(delta_table, source)
        if other != source:
            raise _fail(path, f"targets.{source.key()}.delta_table",
                        f"{quoted(delta_table)} is also the Delta table of {other.key()}: source tables "
                        f"{other.quoted()} and {source.quoted()} would share it; give one its own "
                        f"`delta_table:` in the targets YAML")


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

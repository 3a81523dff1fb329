"""The expected-tables files: what every table holds on the master after the run.

Layout of the --expected DIR:
  <db>.<table>.jsonl   one JSON object per row, {"column": value}, rows sorted by the PKE (the
                       PK / NOT NULL UK) or, for keyless tables, by the whole row (compare as a
                       multiset); values: NULL -> null, integers -> numbers, DOUBLE -> number,
                       DECIMAL -> string with its scale ("1.50"), DATETIME -> string,
                       CHAR/VARCHAR/TEXT/JSON -> string (latin-1 / UTF-8 text),
                       binary BLOB -> {"hex": "DEADBEEF"}
  manifest.json        the run's settings, and per table: engine, columns (name, SQL type,
                       nullable, default), primary key, unique keys, PKE, row count
  targets.sql          the final tables as a replica declares them (CREATE TABLE, the master's
                       DEFAULTs): what `cdc-replicate --target-ddl` takes
  statements.jsonl     every statement the session executed, in order: transaction number,
                       SQL text, logging decision ("row" / "statement" / "error"), the seed's
                       message ("not loggable" / "unsafe" / null), whether it was committed
"""
from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path

from libs.simulator.schema import NO_DEFAULT, replica_ddl


def json_value(column, value):
    if value is None or isinstance(value, (bool, int, float)):
        return value
    if isinstance(value, Decimal):
        return str(value)
    if isinstance(value, bytes):
        if column.text:
            try:
                return value.decode("utf-8")
            except UnicodeDecodeError:
                return value.decode("latin-1")
        return {"hex": value.hex().upper()}
    return str(value)


def _sort_key(row_json: dict, key_names) -> str:
    pick = {k: row_json[k] for k in key_names} if key_names else row_json
    return json.dumps(pick, sort_keys=True, default=str)


def table_rows_json(table, rows) -> list[dict]:
    out = [{c.name: json_value(c, row[i]) for i, c in enumerate(table.columns)} for row in rows]
    pke = table.pke()
    names = [table.columns[i].name for i in pke] if pke else None
    if names and all(isinstance(r[n], (int, float)) for r in out for n in names):
        return sorted(out, key=lambda r: tuple(r[n] for n in names))
    return sorted(out, key=lambda r: _sort_key(r, names))


def write_expected(directory, model, settings: dict, statements: list[dict]) -> Path:
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    manifest = {"settings": settings, "tables": {}}
    for name, state in sorted(model.tables.items()):
        t = state.table
        rows = table_rows_json(t, state.rows.values())
        path = directory / f"{t.database}.{t.name}.jsonl"
        path.write_text("".join(json.dumps(r, sort_keys=False) + "\n" for r in rows))
        pke = t.pke()
        manifest["tables"][f"{t.database}.{t.name}"] = {
            "engine": t.engine,
            "columns": [{"name": c.name, "type": c.sql_type, "nullable": c.nullable,
                         "auto_increment": c.auto_increment,
                         "default": (None if c.default is NO_DEFAULT else json_value(c, c.default)),
                         "has_default": c.default is not NO_DEFAULT} for c in t.columns],
            "primary_key": list(t.primary_key),
            "unique_keys": [list(k) for k in t.unique_keys],
            "pke": [t.columns[i].name for i in pke] if pke else None,
            "rows": len(rows),
            "file": path.name,
        }
    (directory / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")
    tables = [state.table for _, state in sorted(model.tables.items())]
    if tables:
        (directory / "targets.sql").write_text(replica_ddl(tables, tables[0].database))
    with open(directory / "statements.jsonl", "w") as fh:
        for s in statements:
            fh.write(json.dumps(s) + "\n")
    return directory

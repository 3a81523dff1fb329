"""Builders of targets and current rows for replay tests; change records come from
tests/change_builders.py (shared with the Spark apply tests)."""

from __future__ import annotations

from typing import Any

import json
from pathlib import Path

from libs.runtime.paths import CORPUS_DIR
from libs.replay import ROW_ID_COLUMN
from libs.targets import parse_ddl
from libs.targets.model import Target
from libs.targets.config import build_catalog
from tests.change_builders import Source  # noqa: F401 (the replay tests' Source)


def target_from_ddl(ddl: str, **settings: Any) -> Target:
    tables = parse_ddl(ddl, "test.sql")
    (table,) = tables
    name = f"{table.database}.{table.table}"
    return build_catalog({"targets": {name: settings}} if settings else None, "test.yaml", tables).get(
        table.database, table.table)


def rows(target: Target, *tuples) -> list[dict[str, Any]]:
    """Current rows from value tuples in target column order, ids r0, r1, ..."""
    return [{**dict(zip(target.column_names, t)), ROW_ID_COLUMN: f"r{i}"} for i, t in enumerate(tuples)]


def table_of(result, current, target: Target) -> list[tuple]:
    """Final table content as sorted tuples (row identity dropped)."""
    return sorted((tuple(r[c] for c in target.column_names) for r in result.final_table(current)), key=repr)


def mariadb_corpus(scenario: str):
    """(catalog of the scenario's tables from the server's SHOW CREATE TABLE, its binlog file,
    its database) of a corpus/mariadb scenario."""
    base = CORPUS_DIR / "mariadb" / scenario
    manifest = json.loads((base / "manifest.json").read_text())
    database = manifest["tables"][0]["table"].split(".")[0]
    ddl = f"USE `{database}`;\n" + ";\n".join(t["create_table"] for t in manifest["tables"])
    catalog = build_catalog(None, "manifest.json", parse_ddl(ddl, "manifest.json"))
    binlog: Path = next(p for p in base.iterdir() if p.name.startswith("mdb-bin.") and p.suffix[1:].isdigit())
    return catalog, binlog, database

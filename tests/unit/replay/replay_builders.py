"""Builders of change records (schemas/change_record.avsc dicts) and targets for replay tests."""

from __future__ import annotations

import datetime as dt
from typing import Any, Mapping

from libs.replay import ROW_ID_COLUMN
from libs.targets import parse_ddl
from libs.targets.model import Target
from libs.targets.config import build_catalog

COMMIT_TS = dt.datetime(2024, 5, 6, 7, 8, 9, tzinfo=dt.timezone.utc)


def target_from_ddl(ddl: str, **settings: Any) -> Target:
    tables = parse_ddl(ddl, "test.sql")
    (table,) = tables
    name = f"{table.database}.{table.table}"
    return build_catalog({"targets": {name: settings}} if settings else None, "test.yaml", tables).get(
        table.database, table.table)


def column_value(ordinal: int, name: str | None, value: Any, type_code: int = 3) -> dict[str, Any]:
    text = binary = None
    if isinstance(value, (bytes, bytearray)):
        binary = bytes(value)
    elif value is not None:
        text = str(value)
    return {"ordinal": ordinal, "name": name, "type_code": type_code, "text": text, "binary": binary}


class Source:
    """A source table: column order (ordinals) and a counter for change identities."""

    def __init__(self, database: str, table: str, columns: list[str], *, names: bool = True):
        self.database, self.table, self.columns, self.names = database, table, columns, names
        self.trx = 0

    def image(self, values: Mapping[str, Any] | None):
        if values is None:
            return None
        return [column_value(self.columns.index(n), n if self.names else None, v) for n, v in values.items()]

    def change(self, op: str, before=None, after=None, *, seq: int = 0, trx: int | None = None,
               statement: str | None = None) -> dict[str, Any]:
        if trx is None:
            self.trx += 1
            trx = self.trx
        return {
            "source": "src1", "trx_id": f"0-1-{trx}", "gtid": f"0-1-{trx}", "xid": trx, "server_id": 1,
            "commit_ts": COMMIT_TS, "trx_file": "mdb-bin.000002", "trx_end_pos": 1000 + trx * 10,
            "change_seq": seq, "database": self.database, "table": self.table, "op": op,
            "before": self.image(before), "after": self.image(after),
            "statement": statement, "binlog_file": "mdb-bin.000002", "binlog_pos": 900 + trx * 10 + seq,
        }

    def insert(self, after, **kw):
        return self.change("insert", None, after, **kw)

    def update(self, before, after, **kw):
        return self.change("update", before, after, **kw)

    def delete(self, before, **kw):
        return self.change("delete", before, None, **kw)


def rows(target: Target, *tuples) -> list[dict[str, Any]]:
    """Current rows from value tuples in target column order, ids r0, r1, ..."""
    return [{**dict(zip(target.column_names, t)), ROW_ID_COLUMN: f"r{i}"} for i, t in enumerate(tuples)]


def table_of(result, current, target: Target) -> list[tuple]:
    """Final table content as sorted tuples (row identity dropped)."""
    return sorted((tuple(r[c] for c in target.column_names) for r in result.final_table(current)), key=repr)

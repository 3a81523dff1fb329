"""Hand-built change records (schemas/change_record.avsc dicts), targets and Delta readers."""

from __future__ import annotations

import datetime as dt
from typing import Any, Mapping

from libs.config import JobConfig
from libs.lineage_sql import quote_identifier
from libs.targets import build_catalog, parse_ddl
from pipelines.apply import tables as D
from pipelines.schemas import spark_schema

COMMIT_TS = dt.datetime(2024, 5, 6, 7, 8, 9, tzinfo=dt.timezone.utc)


def catalog_from_ddl(ddl: str, targets: Mapping[str, Any] | None = None):
    """TargetCatalog of the CREATE TABLE statements in `ddl` (YAML-like `targets` overrides)."""
    declared = {"targets": dict(targets)} if targets else None
    return build_catalog(declared, "test.yaml", parse_ddl(ddl, "test.sql"))


def config(tmp_path, **kw) -> JobConfig:
    return JobConfig(delta_root=str(tmp_path / "delta"), **kw)


def column_value(ordinal: int, name: str | None, value: Any) -> dict[str, Any]:
    text = binary = None
    if isinstance(value, (bytes, bytearray)):
        binary = bytes(value)
    elif value is not None:
        text = str(value)
    return {"ordinal": ordinal, "name": name, "type_code": 3, "text": text, "binary": binary}


class Source:
    """A master table (column order = ordinals); every change gets a new transaction unless
    `trx` is given. Positions grow with each transaction, so commit order = creation order."""

    def __init__(self, database: str, table: str, columns: list[str], *, source: str = "src1"):
        self.database, self.table, self.columns, self.source = database, table, columns, source
        self.trx = 0

    def image(self, values: Mapping[str, Any] | None):
        if values is None:
            return None
        return [column_value(self.columns.index(n), n, v) for n, v in values.items()]

    def change(self, op: str, before=None, after=None, *, seq: int = 0, trx: int | None = None,
               statement: str | None = None, table: str | None = None) -> dict[str, Any]:
        if trx is None:
            self.trx += 1
            trx = self.trx
        return {
            "source": self.source, "trx_id": f"0-1-{trx}", "gtid": f"0-1-{trx}", "xid": trx, "server_id": 1,
            "commit_ts": COMMIT_TS + dt.timedelta(seconds=trx), "trx_file": "mdb-bin.000002",
            "trx_end_pos": 1000 + trx * 100, "change_seq": seq, "database": self.database,
            "table": self.table if table is None else table, "op": op,
            "before": self.image(before), "after": self.image(after), "statement": statement,
            "binlog_file": "mdb-bin.000002", "binlog_pos": 950 + trx * 100 + seq,
        }

    def insert(self, after, **kw):
        return self.change("insert", None, after, **kw)

    def update(self, before, after, **kw):
        return self.change("update", before, after, **kw)

    def delete(self, before, **kw):
        return self.change("delete", before, None, **kw)


def changes_df(spark, changes):
    return spark.createDataFrame(changes, spark_schema("change_record"))


def delta(spark, cfg: JobConfig, name: str):
    return spark.read.format("delta").load(D.table_path(cfg.delta_root, name))


def rows_of(spark, cfg: JobConfig, name: str, *columns: str) -> list[tuple]:
    """Sorted tuples of the given columns of a Delta table (all target columns by default)."""
    df = delta(spark, cfg, name)
    cols = columns or [c for c in df.columns if not c.startswith("_")]
    return sorted((tuple(r) for r in df.select(*[quote_identifier(c) for c in cols]).collect()), key=repr)


def version(spark, cfg: JobConfig, name: str) -> int:
    from delta.tables import DeltaTable

    return DeltaTable.forPath(spark, D.table_path(cfg.delta_root, name)).history(1).collect()[0]["version"]

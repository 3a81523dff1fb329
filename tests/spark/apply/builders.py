"""Targets, configs and Delta readers for the apply tests; the hand-built change records come
from tests/change_builders.py (shared with the Spark-free replay unit tests)."""

from __future__ import annotations

from typing import Any, Mapping

from libs.contracts.change import Change
from libs.config.job import JobConfig
from libs.reads.lineage_sql import quote_identifier
from libs.targets import build_catalog, parse_ddl
from pipelines.apply import tables as D
from pipelines.job.schemas import spark_schema
from tests.change_builders import COMMIT_TS, Source  # noqa: F401 (the apply tests' builders)


def catalog_from_ddl(ddl: str, targets: Mapping[str, Any] | None = None):
    """TargetCatalog of the CREATE TABLE statements in `ddl` (YAML-like `targets` overrides)."""
    declared = {"targets": dict(targets)} if targets else None
    return build_catalog(declared, "test.yaml", parse_ddl(ddl, "test.sql"))


def config(tmp_path, **kw) -> JobConfig:
    return JobConfig(delta_root=str(tmp_path / "delta"), **kw)


def changes_df(spark, changes):
    """Change records on the wire (Changes as their records, records as they are)."""
    records = [c.to_record() if isinstance(c, Change) else c for c in changes]
    return spark.createDataFrame(records, spark_schema("change_record"))


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

"""Targets and `_cdc_*` tables as catalog tables (JobConfig.catalog_schema, issue #20 item 5) on
the local metastore (spark_catalog with Delta's DeltaCatalog): the same apply as with paths,
every write by name, exactly once per batch."""

import dataclasses
import uuid

import pytest

from libs.config.job import JobConfig
from libs.reads.lineage_sql import table_ref
from libs.tables.system_tables import CHANGE_LOG, LINEAGE_VIEWS, PROGRESS, QUARANTINE
from pipelines.apply import DeltaApplier
from libs.apply.stops import TargetNameStopped
from pipelines.delta.delta_tables import CatalogSchemaStopped
from pipelines.replicate import prepare_tables

from .builders import Source, catalog_from_ddl, changes_df

pytestmark = pytest.mark.spark

DDL = ("CREATE TABLE shop.a (id int NOT NULL, v varchar(10), PRIMARY KEY (id));\n"
       "CREATE TABLE shop.b (k varchar(5) NOT NULL, n int DEFAULT 0, UNIQUE KEY uk (k))")


def catalog_config(tmp_path, **kw) -> JobConfig:
    """A fresh schema of the session's catalog per test (the catalog lives as long as the session)."""
    return JobConfig(delta_root=str(tmp_path / "delta"),
                     catalog_schema=f"spark_catalog.cdc_{uuid.uuid4().hex[:10]}", **kw)


def ref(cfg: JobConfig, name: str) -> str:
    return table_ref(*cfg.catalog_schema.split("."), name)


def rows(spark, cfg: JobConfig, name: str, *columns: str) -> list[tuple]:
    df = spark.table(ref(cfg, name))
    cols = columns or [c for c in df.columns if not c.startswith("_")]
    return sorted((tuple(r) for r in df.select(*cols).collect()), key=repr)


def versions(spark, cfg: JobConfig, *names: str) -> dict[str, int]:
    return {n: spark.sql(f"DESCRIBE HISTORY {ref(cfg, n)}").agg({"version": "max"}).first()[0] for n in names}


def operations(spark, cfg: JobConfig, name: str) -> list[str]:
    return [r.operation for r in spark.sql(f"DESCRIBE HISTORY {ref(cfg, name)}").orderBy("version").collect()]


def test_a_batch_applies_by_name_and_its_replay_writes_nothing_twice(spark, tmp_path):
    cfg = catalog_config(tmp_path, exec_mode="idempotent")
    prepare_tables(spark, cfg)  # the job's start: schema and lineage views
    a, b = Source("shop", "a", ["id", "v"]), Source("shop", "b", ["k", "n"])
    b.trx = 100
    DeltaApplier(catalog_from_ddl(DDL), cfg)(changes_df(spark, [
        a.insert({"id": 1, "v": "x"}), a.insert({"id": 2, "v": "y"}), b.insert({"k": "k1"})]), 0)
    # Batch 1 by MERGE (no mirror) with a missing row, which idempotent mode quarantines.
    batch = [a.update({"id": 1}, {"v": "z"}), a.delete({"id": 2}), a.update({"id": 42}, {"v": "no"}),
             b.update({"k": "k1"}, {"n": 5})]
    merging = dataclasses.replace(cfg, target_mirror_max_rows=0)
    counts = DeltaApplier(catalog_from_ddl(DDL), merging)(changes_df(spark, batch), 1)
    assert counts["shop.a"]["quarantined"] == 1

    assert rows(spark, cfg, "shop__a") == [(1, "z")]
    assert rows(spark, cfg, "shop__b") == [("k1", 5)]
    assert operations(spark, cfg, "shop__a") == ["CREATE TABLE", "WRITE", "MERGE"]  # overwrite, then MERGE
    assert rows(spark, cfg, QUARANTINE, "kind") == [("row_not_found",)]
    assert rows(spark, cfg, PROGRESS, "batch_id", "trx_id") == [(0, "0-1-101"), (1, "0-1-102")]
    assert spark.table(ref(cfg, CHANGE_LOG)).count() == 3 + 4
    # Catalog tables, managed: nothing under delta_root.
    assert all(spark.catalog.tableExists(ref(cfg, n)) for n in ("shop__a", "shop__b", CHANGE_LOG, PROGRESS))
    assert not (tmp_path / "delta").exists()

    before = versions(spark, cfg, "shop__a", "shop__b", CHANGE_LOG, PROGRESS, QUARANTINE)
    for applier_cfg in (merging, cfg):  # a restarted job replays batch 1: by MERGE, or from its mirror
        again = DeltaApplier(catalog_from_ddl(DDL), applier_cfg)(changes_df(spark, batch), 1)
        assert again["shop.a"]["already_applied"] == 1 and again["shop.b"]["already_applied"] == 1
    assert versions(spark, cfg, *before) == before
    assert (rows(spark, cfg, "shop__a") == [(1, "z")]
            and rows(spark, cfg, QUARANTINE, "kind") == [("row_not_found",)])
    assert spark.table(ref(cfg, CHANGE_LOG)).count() == 7


def test_the_job_start_makes_the_schema_and_the_lineage_views(spark, tmp_path):
    cfg = catalog_config(tmp_path)
    prepare_tables(spark, cfg)
    prepare_tables(spark, cfg)  # idempotent: a restart
    schema = cfg.catalog_schema.split(".")[1]
    views = {r.viewName for r in spark.sql(f"SHOW VIEWS IN {table_ref('spark_catalog', schema)}").collect()
             if not r.isTemporary}
    assert set(LINEAGE_VIEWS) <= views
    assert spark.table(ref(cfg, CHANGE_LOG)).count() == 0  # made empty so the views have a table


def test_a_schema_the_catalog_refuses_stops_with_one_line_naming_it(spark, tmp_path):
    cfg = JobConfig(delta_root=str(tmp_path), catalog_schema="main.cdc")  # no catalog `main` here
    with pytest.raises(CatalogSchemaStopped) as stop:
        prepare_tables(spark, cfg)
    message = str(stop.value)
    assert message.startswith("catalog_schema main.cdc: cannot create or use the schema `main`.`cdc`: ")
    assert "\n" not in message


def test_a_target_name_a_catalog_cannot_hold_stops_the_batch_naming_it(spark, tmp_path):
    cfg = catalog_config(tmp_path)
    prepare_tables(spark, cfg)
    catalog = catalog_from_ddl("CREATE TABLE shop.a (id int PRIMARY KEY)",
                               {"shop.a": {"delta_table": "shop a"}})
    with pytest.raises(TargetNameStopped) as stop:
        DeltaApplier(catalog, cfg)(changes_df(spark, [Source("shop", "a", ["id"]).insert({"id": 1})]), 0)
    assert str(stop.value).startswith("batch 0: shop.a: Delta table name 'shop a' cannot be a table of ")
    assert spark.table(ref(cfg, CHANGE_LOG)).count() == 0  # stopped before any write

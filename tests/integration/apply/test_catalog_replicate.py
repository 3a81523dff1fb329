"""End to end with catalog tables (JobConfig.catalog_schema, issue #20 item 5): a MariaDB snapshot
and binlog through Kafka into spark_catalog.<schema>.<name> tables, the schema following an ALTER
and a RENAME by name, lineage answered by the views, a restart writing nothing twice."""
from __future__ import annotations

import uuid

import pytest

from libs.reads.lineage_sql import table_ref
from libs.tables.system_tables import CHANGE_LOG, PROGRESS, QUARANTINE
from pipelines.replicate import prepare_tables

from ..schema_history.helpers import job_config, replicate, server_table, ship_snapshot

pytestmark = pytest.mark.integration

UPDATE = "UPDATE r SET a = 'ONE' WHERE id = 1"
DELETE = "DELETE FROM r2 WHERE id = 2"


def catalog_table(spark, ref: str) -> tuple[list[str], list[tuple]]:
    df = spark.table(ref).drop("_row_id", "_lineage")
    return df.columns, sorted(tuple(r) for r in df.collect())


def last_version(spark, ref: str) -> int:
    return spark.sql(f"DESCRIBE HISTORY {ref}").agg({"version": "max"}).first()[0]


def test_a_source_replicates_into_catalog_tables_exactly_once(mariadb, kafka_broker, topic, spark, tmp_path):
    name = "cat_e2e"
    mariadb.sql(f"DROP DATABASE IF EXISTS {name}; CREATE DATABASE {name}; "
                f"CREATE TABLE {name}.r (id INT PRIMARY KEY, a VARCHAR(8)); "
                f"INSERT INTO {name}.r VALUES (1, 'one'), (2, 'two')")
    schema = f"cdc_{uuid.uuid4().hex[:10]}"
    cfg = job_config(kafka_broker, topic, tmp_path, name, catalog_schema=f"spark_catalog.{schema}")
    ref = lambda table: table_ref("spark_catalog", schema, table)  # noqa: E731
    ship_snapshot(mariadb, kafka_broker, topic, name)
    mariadb.sql(f"INSERT INTO r VALUES (3, 'three'); ALTER TABLE r ADD c INT DEFAULT 9; {UPDATE}; "
                f"RENAME TABLE r TO r2; {DELETE}", database=name)
    ship_snapshot(mariadb, kafka_broker, topic, name)  # the binlog to its end
    prepare_tables(spark, cfg)
    replicate(spark, cfg)

    server = server_table(mariadb, f"{name}.r2")
    assert server == (["id", "a", "c"], [(1, "ONE", 9), (3, "three", 9)])
    assert catalog_table(spark, ref(f"{name}__r2")) == server
    assert catalog_table(spark, ref(f"{name}__r")) == (["id", "a", "c"],
                                                       [(1, "ONE", 9), (2, "two", 9), (3, "three", 9)])
    assert spark.table(ref(QUARANTINE)).count() == 0
    assert not (tmp_path / "delta").exists()  # managed tables: nothing at delta_root
    # Lineage: the row's own, carried through the rename, and the views'.
    own = spark.sql(f"SELECT _lineage.statement FROM {ref(f'{name}__r2')} WHERE id = 1").collect()
    assert [tuple(r) for r in own] == [(UPDATE,)]
    last = spark.sql(f"SELECT key['id'], op, statement FROM {ref('_cdc_last_change')} "
                     f"WHERE `database` = '{name}' AND `table` = 'r2'").collect()
    assert [tuple(r) for r in last] == [("2", "delete", DELETE)]

    tables = [ref(t) for t in (f"{name}__r", f"{name}__r2", CHANGE_LOG, PROGRESS)]
    before = {t: last_version(spark, t) for t in tables}
    replicate(spark, cfg)  # a restart from the same checkpoint: nothing new in the topic
    assert {t: last_version(spark, t) for t in tables} == before

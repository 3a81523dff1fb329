"""A `delete: soft` target (README "Soft deletes") on a real MariaDB through the whole product:
snapshot, then deletes around an `ADD COLUMN` (the table carried to its new schema with the
batch's rows in one commit: pipelines/apply/modes/carried.py), a deleted key inserted again,
a TRUNCATE TABLE. The live rows equal the server's table (columns and rows); every deleted row
stays, flagged with the GTID and position of the change-log entry that deleted it."""
from __future__ import annotations

import dataclasses

import pytest
from pyspark.sql import functions as F

from libs.config.job import TablesSettings
from libs.reads.lineage_sql import delta_path_ref
from libs.tables.system_tables import CHANGE_LOG
from pipelines.apply.modes import current as current_writes

from .helpers import job_config, replicate, server_table, ship_snapshot

pytestmark = pytest.mark.integration
SOFT = ["_deleted", "_deleted_at", "_deleted_gtid", "_deleted_file", "_deleted_pos"]


def test_deleted_rows_stay_across_a_schema_change_and_a_truncate(mariadb, kafka_broker, topic, spark,
                                                                 tmp_path, monkeypatch):
    carried = []  # the tables written carried to a new schema (with their rows, one commit)
    real = current_writes.carried_write  # (a soft-delete target's writes are the current mode's, flagged)
    monkeypatch.setattr(current_writes, "carried_write",
                        lambda s, plan, *a: carried.append(plan.target.table) or real(s, plan, *a))
    name = "sh_soft_deletes"
    mariadb.sql(f"DROP DATABASE IF EXISTS {name}; CREATE DATABASE {name}; "
                f"CREATE TABLE {name}.t (id INT PRIMARY KEY, a INT, b VARCHAR(10)); "
                f"INSERT INTO {name}.t VALUES (1, 10, 'one'), (2, 20, 'two'), (3, 30, 'three'), "
                f"(4, 40, 'four')")
    cfg = job_config(kafka_broker, topic, tmp_path, name)
    cfg = dataclasses.replace(cfg, tables=TablesSettings(include=cfg.tables.include, delete="soft"))
    ship_snapshot(mariadb, kafka_broker, topic, name)
    replicate(spark, cfg)  # the snapshot's rows in Delta: the ALTER below carries them
    mariadb.sql("SET SESSION binlog_row_image = MINIMAL;"
                "DELETE FROM t WHERE id = 1;"
                "ALTER TABLE t ADD COLUMN c INT DEFAULT 7 AFTER id;"
                "DELETE FROM t WHERE id = 2;"
                "UPDATE t SET a = 31 WHERE id = 3;"
                "INSERT INTO t (id, a, b) VALUES (1, 11, 'again');", database=name)
    ship_snapshot(mariadb, kafka_broker, topic, name)  # the binlog to its end
    replicate(spark, cfg)
    assert carried == ["t"]
    path = f"{cfg.delta_root}/{name}__t"
    soft = spark.read.format("delta").load(path)
    assert [f for f in soft.columns if f.startswith("_deleted")] == SOFT
    live = soft.where(~F.col("_deleted")).drop(*SOFT)
    assert _rows(live) == server_table(mariadb, f"{name}.t")
    assert _deleted(soft) == [(1, 7, 10, "one"), (2, 7, 20, "two")]
    _assert_flags_are_the_change_logs(spark, cfg, path)

    mariadb.sql("TRUNCATE TABLE t; INSERT INTO t (id, a, b) VALUES (9, 90, 'nine');", database=name)
    ship_snapshot(mariadb, kafka_broker, topic, name)
    replicate(spark, cfg)
    soft = spark.read.format("delta").load(path)
    assert _rows(soft.where(~F.col("_deleted")).drop(*SOFT)) == server_table(mariadb, f"{name}.t")
    assert _deleted(soft) == [(1, 7, 10, "one"), (1, 7, 11, "again"), (2, 7, 20, "two"), (3, 7, 31, "three"),
                              (4, 7, 40, "four")]
    _assert_flags_are_the_change_logs(spark, cfg, path)


def _rows(df):
    """As helpers.delta_table: the data columns and the rows, sorted."""
    df = df.drop("_row_id", "_lineage")
    return df.columns, sorted((tuple(r) for r in df.collect()),
                              key=lambda row: [(v is not None, v) for v in row])


def _deleted(df):
    """(id, c, a, b) of the deleted rows, as they were when deleted (a row deleted before the
    ADD COLUMN was carried with the others: c as the server filled it, 7)."""
    return sorted(tuple(r) for r in df.where(F.col("_deleted")).select("id", "c", "a", "b").collect())


def _assert_flags_are_the_change_logs(spark, cfg, path):
    """Each deleted row's flags: the commit time, GTID and position of the change-log entry that
    deleted it (its row_id; a TRUNCATE names no row: the truncate entry of the table)."""
    table = spark.read.format("delta").load(path).where(F.col("_deleted"))
    log = spark.sql(f"SELECT row_id, op, lineage.commit_ts AS ts, lineage.gtid AS gtid, "
                    f"lineage.binlog_file AS f, lineage.binlog_pos AS pos, lineage.statement AS statement "
                    f"FROM {delta_path_ref(cfg.delta_root + '/' + CHANGE_LOG)} "
                    f"WHERE delta_table = '{path.rsplit('/', 1)[1]}'").collect()
    deletes = {r["row_id"]: (r["ts"], r["gtid"], r["f"], r["pos"]) for r in log if r["op"] == "delete"}
    truncates = [(r["ts"], r["gtid"], r["f"], r["pos"]) for r in log
                 if (r["statement"] or "").upper().startswith("TRUNCATE")]
    for row in table.collect():
        flags = (row["_deleted_at"], row["_deleted_gtid"], row["_deleted_file"], row["_deleted_pos"])
        assert flags == deletes.get(row["_row_id"]) or flags in truncates, (row, deletes, truncates)

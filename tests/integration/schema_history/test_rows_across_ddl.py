"""Rows logged before and after an ALTER land in their own columns (issue #17: "no value ever
lands in another column"), through the whole product on a real MariaDB: snapshot, then DML,
`ADD COLUMN ... AFTER`, `ADD ... FIRST`, `DROP COLUMN`, DML again, then `cdc-replicate` (run twice: the second
run resumes with the history the first one kept) with no target DDL (targets from the snapshot's SHOW CREATE TABLE). The Delta table must equal the
server's SELECT of the columns the target has, with binlog_row_metadata NO_LOG (no column names:
each image is read through the schema version at its position) and FULL (names), MINIMAL and
FULL row images. Until DDL is applied to Delta (issue #17 item 3) the target keeps the
snapshot's columns: new source columns are extra master columns (WL#5092), a dropped one keeps
its last value.

Before the schema history, a NO_LOG image after `ADD c INT AFTER id` was read by the target's
ordinals: c's value went to `a`, a's to `b`."""
from __future__ import annotations

import pytest

from libs.config import JobConfig
from libs.system_tables import QUARANTINE, SCHEMA_HISTORY
from pipelines.replicate import build_query, make_applier
from pipelines.ship import main as ship_main

from ..shipper.helpers import password_file

pytestmark = pytest.mark.integration

COLUMNS = ("id", "a", "b", "d")  # the snapshot's columns: the target's


def _ship(db, kafka_broker, topic, name):
    assert ship_main(["--server", f"{db.host}:{db.port}", "--user", db.user, "--password-file", password_file(db),
                      "--bootstrap", kafka_broker.bootstrap, "--topic", topic, "--source", name, "--snapshot",
                      "--include", rf"{name}\..*", "--non-block"]) == 0


def _replicate(spark, cfg):
    """One run of the job to the topic's end, with a new applier (what a restarted job has)."""
    query = build_query(spark, cfg, make_applier(cfg))
    query.awaitTermination()
    assert query.exception() is None


@pytest.mark.parametrize("metadata, image", [("NO_LOG", "MINIMAL"), ("NO_LOG", "FULL"), ("FULL", "MINIMAL")])
def test_rows_before_and_after_ddl_land_in_their_own_columns(mariadb, kafka_broker, topic, spark, tmp_path,
                                                            metadata, image):
    name = f"sh_rows_{metadata}_{image}".lower()
    mariadb.sql(f"DROP DATABASE IF EXISTS {name}; CREATE DATABASE {name}; "
                f"CREATE TABLE {name}.t (id INT PRIMARY KEY, a INT, b VARCHAR(10), d INT UNSIGNED DEFAULT 1); "
                f"INSERT INTO {name}.t VALUES (1, 10, 'one', 100), (2, 20, 'two', 200), (3, 30, 'three', 300)")
    (old_metadata,) = mariadb.query("SELECT @@global.binlog_row_metadata")[0]
    mariadb.sql(f"SET GLOBAL binlog_row_metadata = {metadata}")
    root = tmp_path / "delta"
    cfg = JobConfig(bootstrap=kafka_broker.bootstrap, topic=topic, delta_root=str(root),
                    checkpoint=str(tmp_path / "ckpt"), available_now=True, tables={"include": [rf"{name}\..*"]})
    try:
        _ship(mariadb, kafka_broker, topic, name)  # the snapshot
        mariadb.sql(f"SET SESSION binlog_row_image = {image};"
                    "INSERT INTO t VALUES (4, 40, 'four', 4000000000);"
                    "UPDATE t SET a = 11 WHERE id = 1;"
                    "ALTER TABLE t ADD COLUMN c INT DEFAULT 7 AFTER id;"
                    "INSERT INTO t (id, c, a, b, d) VALUES (5, 55, 50, 'five', 500);", database=name)
        _ship(mariadb, kafka_broker, topic, name)
        _replicate(spark, cfg)  # a first run; the second one starts from the kept history
        mariadb.sql(f"SET SESSION binlog_row_image = {image};"
                    "UPDATE t SET a = 21, c = 22 WHERE id = 2;"
                    "ALTER TABLE t ADD z VARCHAR(4) FIRST;"
                    "INSERT INTO t (z, id, c, a, b, d) VALUES ('zz', 6, 66, 60, 'six', 4000000001);"
                    "UPDATE t SET b = 'THREE', d = 3000000000 WHERE id = 3;"
                    "ALTER TABLE t DROP COLUMN c;"
                    "UPDATE t SET a = 41 WHERE id = 4;"
                    "DELETE FROM t WHERE id = 5;", database=name)
        _ship(mariadb, kafka_broker, topic, name)  # the binlog to its end
    finally:
        mariadb.sql(f"SET GLOBAL binlog_row_metadata = {old_metadata}")
    _replicate(spark, cfg)

    server = sorted(mariadb.query(f"SELECT {', '.join(COLUMNS)} FROM {name}.t"))
    delta = sorted(tuple(r) for r in spark.read.format("delta").load(f"{root}/{name}__t").select(*COLUMNS).collect())
    assert delta == server
    assert server[3] == (4, 41, "four", 4000000000) and len(server) == 5  # the workload ran as written
    assert spark.read.format("delta").load(f"{root}/{QUARANTINE}").count() == 0
    kept = spark.read.format("delta").load(f"{root}/{SCHEMA_HISTORY}").orderBy("binlog_pos").collect()
    assert [r["statement"] for r in kept] == [
        "ALTER TABLE t ADD COLUMN c INT DEFAULT 7 AFTER id", "ALTER TABLE t ADD z VARCHAR(4) FIRST",
        "ALTER TABLE t DROP COLUMN c"]
    assert "z VARCHAR(4),\n  `id`" in kept[1]["create_table"] and kept[1]["table"] == "t"


def test_truncate_then_the_same_keys_again(mariadb, kafka_broker, topic, spark, tmp_path):
    """TRUNCATE in the stream empties the Delta table at its place in commit order: the rows
    written before it in the same batch go with it, the same keys inserted after it are new
    rows (before #17 the old rows stayed and the re-insert failed with 1062)."""
    name = "sh_truncate"
    mariadb.sql(f"DROP DATABASE IF EXISTS {name}; CREATE DATABASE {name}; "
                f"CREATE TABLE {name}.t (id INT PRIMARY KEY, a INT, UNIQUE KEY ua (a)); "
                f"CREATE TABLE {name}.other (id INT PRIMARY KEY); "
                f"INSERT INTO {name}.t VALUES (1, 10), (2, 20); INSERT INTO {name}.other VALUES (1)")
    root = tmp_path / "delta"
    cfg = JobConfig(bootstrap=kafka_broker.bootstrap, topic=topic, delta_root=str(root),
                    checkpoint=str(tmp_path / "ckpt"), available_now=True, tables={"include": [rf"{name}\..*"]})
    _ship(mariadb, kafka_broker, topic, name)
    mariadb.sql("INSERT INTO t VALUES (3, 30); UPDATE t SET a = 11 WHERE id = 1;"
                "TRUNCATE TABLE t;"
                "INSERT INTO t VALUES (1, 20), (3, 10); INSERT INTO other VALUES (2);"
                "TRUNCATE t; INSERT INTO t VALUES (2, 2);", database=name)
    _ship(mariadb, kafka_broker, topic, name)
    _replicate(spark, cfg)
    mariadb.sql("TRUNCATE TABLE t; INSERT INTO t VALUES (2, 3), (5, 5)", database=name)  # a later batch
    _ship(mariadb, kafka_broker, topic, name)
    _replicate(spark, cfg)
    for table, columns in (("t", "id, a"), ("other", "id")):
        server = sorted(mariadb.query(f"SELECT {columns} FROM {name}.{table}"))
        delta = sorted(tuple(r) for r in spark.read.format("delta").load(f"{root}/{name}__{table}")
                       .select(*columns.split(", ")).collect())
        assert delta == server, table
    assert sorted(mariadb.query(f"SELECT id, a FROM {name}.t")) == [(2, 3), (5, 5)]
    assert spark.read.format("delta").load(f"{root}/{QUARANTINE}").count() == 0

"""Rows logged before and after an ALTER land in their own columns, and the Delta table follows
the source's columns (issue #17: "no value ever lands in another column"; "every Delta table's
rows AND column list equal to the server's"), through the whole product on a real MariaDB:
snapshot, then DML mixed with `ADD COLUMN ... AFTER`, `ADD ... FIRST`, `DROP COLUMN`, `RENAME
COLUMN`, `CHANGE` (rename + widen), `MODIFY` widening, then `cdc-replicate` (run twice: the second
run resumes with the history and the Delta schema the first one left) with no target DDL
(targets follow the source's schema). With binlog_row_metadata NO_LOG (no column names: each
image is read through the schema version at its position) and FULL (names), MINIMAL and FULL
row images, the Delta table's columns and rows must equal the server's `SELECT *`.

Before the schema history, a NO_LOG image after `ADD c INT AFTER id` was read by the target's
ordinals: c's value went to `a`, a's to `b`."""
from __future__ import annotations

import pytest

from libs.reads.lineage_sql import delta_path_ref, schema_changes_of_table
from libs.tables.system_tables import QUARANTINE, SCHEMA_HISTORY

from tests.drawn import drawn_modes

from .helpers import delta_table, job_config, replicate, row_metadata, server_table, ship_snapshot

pytestmark = pytest.mark.integration


@pytest.mark.parametrize("metadata, image",
                         drawn_modes([("NO_LOG", "MINIMAL"), ("NO_LOG", "FULL"), ("FULL", "MINIMAL")]))
def test_rows_before_and_after_ddl_land_in_their_own_columns(mariadb, kafka_broker, topic, spark, tmp_path,
                                                            metadata, image):
    name = f"sh_rows_{metadata}_{image}".lower()
    mariadb.sql(f"DROP DATABASE IF EXISTS {name}; CREATE DATABASE {name}; "
                f"CREATE TABLE {name}.t (id INT PRIMARY KEY, a INT, b VARCHAR(10), "
                f"d INT UNSIGNED DEFAULT 1); "
                f"INSERT INTO {name}.t VALUES (1, 10, 'one', 100), (2, 20, 'two', 200), "
                f"(3, 30, 'three', 300)")
    cfg = job_config(kafka_broker, topic, tmp_path, name)
    root = cfg.delta_root
    with row_metadata(mariadb, metadata):
        ship_snapshot(mariadb, kafka_broker, topic, name)  # the snapshot
        mariadb.sql(f"SET SESSION binlog_row_image = {image};"
                    "INSERT INTO t VALUES (4, 40, 'four', 4000000000);"
                    "UPDATE t SET a = 11 WHERE id = 1;"
                    "ALTER TABLE t ADD COLUMN c INT DEFAULT 7 AFTER id;"
                    "INSERT INTO t (id, c, a, b, d) VALUES (5, 55, 50, 'five', 500);", database=name)
        ship_snapshot(mariadb, kafka_broker, topic, name)
        replicate(spark, cfg)  # a first run; the second one starts from the kept history
        mariadb.sql(f"SET SESSION binlog_row_image = {image};"
                    "UPDATE t SET a = 21, c = 22 WHERE id = 2;"
                    "ALTER TABLE t ADD z VARCHAR(4) FIRST;"
                    "INSERT INTO t (z, id, c, a, b, d) VALUES ('zz', 6, 66, 60, 'six', 4000000001);"
                    "UPDATE t SET b = 'THREE', d = 3000000000 WHERE id = 3;"
                    "ALTER TABLE t DROP COLUMN c;"
                    "UPDATE t SET a = 41 WHERE id = 4;"
                    # executed by the server
                    "ALTER TABLE t /*!40000 RENAME COLUMN b TO bee, */ MODIFY a BIGINT;"
                    "INSERT INTO t (z, id, a, bee, d) VALUES ('sv', 7, 9000000000, 'seven', 7);"
                    "UPDATE t SET bee = 'SIX' WHERE id = 6;"
                    "DELETE FROM t WHERE id = 5;"
                    "ALTER TABLE t CHANGE d dd BIGINT UNSIGNED DEFAULT 2, ADD e DATE DEFAULT '2024-02-29';"
                    "INSERT INTO t (id, a, bee) VALUES (8, 8, 'eight');", database=name)
        ship_snapshot(mariadb, kafka_broker, topic, name)  # the binlog to its end
    replicate(spark, cfg)

    server = server_table(mariadb, f"{name}.t")
    # the workload ran as written
    assert server[0] == ["z", "id", "a", "bee", "dd", "e"] and len(server[1]) == 7
    assert delta_table(spark, f"{root}/{name}__t") == server
    assert spark.read.format("delta").load(f"{root}/{QUARANTINE}").count() == 0
    # Which DDL changed the table's schema, and when: the lineage query over _cdc_schema_history.
    sql, args = schema_changes_of_table(delta_path_ref(f"{root}/{SCHEMA_HISTORY}"), name, "t")
    kept = spark.sql(sql, args=args).collect()
    assert [r["statement"] for r in kept] == [
        "ALTER TABLE t ADD COLUMN c INT DEFAULT 7 AFTER id", "ALTER TABLE t ADD z VARCHAR(4) FIRST",
        "ALTER TABLE t DROP COLUMN c", "ALTER TABLE t /*!40000 RENAME COLUMN b TO bee, */ MODIFY a BIGINT",
        "ALTER TABLE t CHANGE d dd BIGINT UNSIGNED DEFAULT 2, ADD e DATE DEFAULT '2024-02-29'"]
    assert ("z VARCHAR(4),\n  `id`" in kept[1]["create_table"]
            and all(r["commit_ts"] is not None for r in kept))
    assert [r["binlog_pos"] for r in kept] == sorted(r["binlog_pos"] for r in kept)


def test_truncate_then_the_same_keys_again(mariadb, kafka_broker, topic, spark, tmp_path):
    """TRUNCATE in the stream empties the Delta table at its place in commit order: the rows
    written before it in the same batch go with it, the same keys inserted after it are new
    rows (before #17 the old rows stayed and the re-insert failed with 1062)."""
    name = "sh_truncate"
    mariadb.sql(f"DROP DATABASE IF EXISTS {name}; CREATE DATABASE {name}; "
                f"CREATE TABLE {name}.t (id INT PRIMARY KEY, a INT, UNIQUE KEY ua (a)); "
                f"CREATE TABLE {name}.other (id INT PRIMARY KEY); "
                f"INSERT INTO {name}.t VALUES (1, 10), (2, 20); INSERT INTO {name}.other VALUES (1)")
    cfg = job_config(kafka_broker, topic, tmp_path, name)
    root = cfg.delta_root
    ship_snapshot(mariadb, kafka_broker, topic, name)
    mariadb.sql("INSERT INTO t VALUES (3, 30); UPDATE t SET a = 11 WHERE id = 1;"
                "TRUNCATE TABLE t;"
                "INSERT INTO t VALUES (1, 20), (3, 10); INSERT INTO other VALUES (2);"
                "TRUNCATE t; INSERT INTO t VALUES (2, 2);", database=name)
    ship_snapshot(mariadb, kafka_broker, topic, name)
    replicate(spark, cfg)
    mariadb.sql("TRUNCATE TABLE t; INSERT INTO t VALUES (2, 3), (5, 5)", database=name)  # a later batch
    ship_snapshot(mariadb, kafka_broker, topic, name)
    replicate(spark, cfg)
    for table in ("t", "other"):
        assert (delta_table(spark, f"{root}/{name}__{table}")
                == server_table(mariadb, f"{name}.{table}")), table
    assert sorted(mariadb.query(f"SELECT id, a FROM {name}.t")) == [(2, 3), (5, 5)]
    assert spark.read.format("delta").load(f"{root}/{QUARANTINE}").count() == 0


def test_an_added_column_is_filled_as_its_alter_defined_it(mariadb, kafka_broker, topic, spark, tmp_path):
    """The rows that existed at ADD COLUMN hold what that ALTER gave them, though a later DDL of
    the same batch changes the column's DEFAULT (SET DEFAULT) or the batch's last DDL comes a
    second later (DEFAULT CURRENT_TIMESTAMP takes the ADD's time). Before, both were filled with
    the definition and the time of the batch's end: f = 2 and ts a second late, silently."""
    name = "sh_added_fill"
    mariadb.sql(f"DROP DATABASE IF EXISTS {name}; CREATE DATABASE {name}; "
                f"CREATE TABLE {name}.t (id INT PRIMARY KEY, a INT); "
                f"INSERT INTO {name}.t VALUES (1, 10), (2, 20)")
    cfg = job_config(kafka_broker, topic, tmp_path, name)
    ship_snapshot(mariadb, kafka_broker, topic, name)
    replicate(spark, cfg)  # rows 1 and 2 in Delta; row 3 is inserted in the DDL's batch, before them
    mariadb.sql("INSERT INTO t VALUES (3, 30);"
                "ALTER TABLE t ADD COLUMN f INT DEFAULT 1;"
                "ALTER TABLE t ALTER COLUMN f SET DEFAULT 2;"
                "INSERT INTO t (id, a) VALUES (4, 40);"
                "ALTER TABLE t ADD COLUMN ts DATETIME DEFAULT CURRENT_TIMESTAMP;"
                "DO SLEEP(1.2);"
                "ALTER TABLE t ADD COLUMN g INT DEFAULT 5;", database=name)
    ship_snapshot(mariadb, kafka_broker, topic, name)
    replicate(spark, cfg)

    server = server_table(mariadb, f"{name}.t")
    assert [r[2] for r in server[1]] == [1, 1, 1, 2]  # the workload ran as written
    assert delta_table(spark, f"{cfg.delta_root}/{name}__t") == server

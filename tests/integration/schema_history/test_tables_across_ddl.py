"""Tables made, dropped and made again in the stream reach Delta as the server has them (issue #17
item 3: CREATE TABLE of an included new table, CREATE TABLE LIKE, DROP TABLE "keep", a table
created again under a dropped one's name), and the `schema_changes` policy (item 4) on a real
MariaDB: the job stops at the DDL under `fail`, keeps the snapshot's columns under `ignore`."""
from __future__ import annotations


import pytest

from libs.tables.system_tables import QUARANTINE

from tests.drawn import drawn_modes

from .helpers import (accepted_through, delta_table, job_config, replicate, row_metadata, server_table,
                      ship_snapshot, stop_message)

pytestmark = pytest.mark.integration


@pytest.mark.parametrize("metadata, image", drawn_modes([("NO_LOG", "MINIMAL"), ("FULL", "FULL")]))
def test_tables_created_dropped_and_created_again(mariadb, kafka_broker, topic, spark, tmp_path, metadata,
                                                  image):
    name = f"sh_tables_{metadata}_{image}".lower()
    mariadb.sql(f"DROP DATABASE IF EXISTS {name}; CREATE DATABASE {name}; "
                f"CREATE TABLE {name}.t (id INT PRIMARY KEY, a VARCHAR(8)); "
                f"CREATE TABLE {name}.gone (id INT PRIMARY KEY, a INT); "
                f"INSERT INTO {name}.t VALUES (1, 'one'), (2, 'two'); INSERT INTO {name}.gone VALUES (1, 10)")
    cfg = job_config(kafka_broker, topic, tmp_path, name)
    root = cfg.delta_root
    with row_metadata(mariadb, metadata):
        ship_snapshot(mariadb, kafka_broker, topic, name)  # the snapshot of t and gone
        mariadb.sql(f"SET SESSION binlog_row_image = {image};"
                    "CREATE TABLE n (id INT PRIMARY KEY, v VARCHAR(5) DEFAULT 'x', w DECIMAL(6,2));"
                    "INSERT INTO n VALUES (1, 'a', 1.50), (2, DEFAULT, NULL);"
                    "CREATE TABLE l LIKE t;"
                    "INSERT INTO l VALUES (7, 'seven');"
                    "INSERT INTO gone VALUES (2, 20); UPDATE gone SET a = 11 WHERE id = 1;"
                    "DROP TABLE gone;"
                    "INSERT INTO t VALUES (3, 'three');"
                    "DROP TABLE t;"
                    "CREATE TABLE t (k BIGINT PRIMARY KEY, w TEXT, id INT);"
                    "INSERT INTO t VALUES (1, 'new', 1);"
                    "CREATE TABLE IF NOT EXISTS n (other INT);"
                    "UPDATE n SET v = 'b' WHERE id = 2;", database=name)
        ship_snapshot(mariadb, kafka_broker, topic, name)
    replicate(spark, cfg)

    for table in ("t", "n", "l"):
        assert (delta_table(spark, f"{root}/{name}__{table}")
                == server_table(mariadb, f"{name}.{table}")), table
    assert server_table(mariadb, f"{name}.t") == (["k", "w", "id"], [(1, "new", 1)])  # ran as written
    # A dropped table's Delta table stays, with the rows it had when the server dropped it.
    assert delta_table(spark, f"{root}/{name}__gone") == (["id", "a"], [(1, 11), (2, 20)])
    assert spark.read.format("delta").load(f"{root}/{QUARANTINE}").count() == 0


def test_fail_stops_at_each_ddl_until_accepted(mariadb, kafka_broker, topic, spark, tmp_path):
    name = "sh_policy_fail"
    mariadb.sql(f"DROP DATABASE IF EXISTS {name}; CREATE DATABASE {name}; "
                f"CREATE TABLE {name}.t (id INT PRIMARY KEY, a INT); INSERT INTO {name}.t VALUES (1, 10)")
    ship_snapshot(mariadb, kafka_broker, topic, name)
    fail = job_config(kafka_broker, topic, tmp_path, name, schema_changes="fail")
    replicate(spark, fail)  # the snapshot: no DDL
    mariadb.sql("INSERT INTO t VALUES (2, 20); ALTER TABLE t ADD COLUMN c INT DEFAULT 3;"
                "INSERT INTO t VALUES (3, 30, 33)", database=name)
    (file, pos) = mariadb.query("SHOW MASTER STATUS")[0][:2]
    ship_snapshot(mariadb, kafka_broker, topic, name)

    error = stop_message(spark, fail)
    assert "schema_changes is 'fail'" in error and "ALTER TABLE t ADD COLUMN c INT DEFAULT 3" in error, error
    assert file in error
    # Nothing of the batch holding the DDL was written: not even the row logged before it.
    assert delta_table(spark, f"{fail.delta_root}/{name}__t") == (["id", "a"], [(1, 10)])

    # The way past this DDL: the position the message names, accepted; `fail` still guards the next.
    accept = job_config(kafka_broker, topic, tmp_path, name, schema_changes="fail",
                        accept_schema_changes_through=accepted_through(error, name))
    replicate(spark, accept)
    assert delta_table(spark, f"{accept.delta_root}/{name}__t") == server_table(mariadb, f"{name}.t")
    assert server_table(mariadb, f"{name}.t")[1] == [(1, 10, 3), (2, 20, 3), (3, 30, 33)]
    mariadb.sql("ALTER TABLE t DROP COLUMN a; INSERT INTO t VALUES (4, 44)", database=name)
    ship_snapshot(mariadb, kafka_broker, topic, name)
    assert "ALTER TABLE t DROP COLUMN a" in stop_message(spark, accept)

    # the other way past: the same checkpoint, evolve
    evolve = job_config(kafka_broker, topic, tmp_path, name)
    replicate(spark, evolve)
    assert delta_table(spark, f"{evolve.delta_root}/{name}__t") == server_table(mariadb, f"{name}.t")
    assert server_table(mariadb, f"{name}.t")[0] == ["id", "c"]


def test_ignore_keeps_the_snapshot_columns(mariadb, kafka_broker, topic, spark, tmp_path):
    name = "sh_policy_ignore"
    mariadb.sql(f"DROP DATABASE IF EXISTS {name}; CREATE DATABASE {name}; "
                f"CREATE TABLE {name}.t (id INT PRIMARY KEY, a INT, b INT); "
                f"INSERT INTO {name}.t VALUES (1, 10, 100)")
    ship_snapshot(mariadb, kafka_broker, topic, name)
    mariadb.sql("ALTER TABLE t ADD COLUMN c INT FIRST; INSERT INTO t VALUES (5, 2, 20, 200);"
                "ALTER TABLE t DROP COLUMN b; UPDATE t SET a = 11 WHERE id = 1", database=name)
    ship_snapshot(mariadb, kafka_broker, topic, name)
    cfg = job_config(kafka_broker, topic, tmp_path, name, schema_changes="ignore")
    replicate(spark, cfg)
    # The snapshot's columns; every value read through the schema at its position (c never lands in id).
    assert delta_table(spark, f"{cfg.delta_root}/{name}__t") == (["id", "a", "b"],
                                                                 [(1, 11, 100), (2, 20, 200)])


@pytest.mark.parametrize("metadata, image", drawn_modes([("NO_LOG", "MINIMAL"), ("FULL", "FULL")]))
def test_a_renamed_table_takes_its_rows_along(mariadb, kafka_broker, topic, spark, tmp_path, metadata, image):
    """RENAME TABLE and ALTER TABLE ... RENAME TO: the new name's Delta table holds the old one's
    rows, those logged before the rename in the same batch included (a TRUNCATE of the old name
    too); the old name's Delta table stays as it was at the rename (as after a DROP)."""
    name = f"sh_rename_{metadata}_{image}".lower()
    mariadb.sql(f"DROP DATABASE IF EXISTS {name}; CREATE DATABASE {name}; "
                f"CREATE TABLE {name}.r (id INT PRIMARY KEY, a VARCHAR(8)); "
                f"INSERT INTO {name}.r VALUES (1, 'one'), (2, 'two')")
    cfg = job_config(kafka_broker, topic, tmp_path, name)
    root = cfg.delta_root
    with row_metadata(mariadb, metadata):
        ship_snapshot(mariadb, kafka_broker, topic, name)  # the snapshot of r
        mariadb.sql(f"SET SESSION binlog_row_image = {image};"
                    "INSERT INTO r VALUES (3, 'three'); ALTER TABLE r CHANGE a b VARCHAR(12);"
                    "UPDATE r SET b = 'ONE' WHERE id = 1;"
                    "RENAME TABLE r TO r2;"
                    "INSERT INTO r2 VALUES (4, 'four'); DELETE FROM r2 WHERE id = 2;", database=name)
        ship_snapshot(mariadb, kafka_broker, topic, name)
        replicate(spark, cfg)
        at_rename = (["id", "b"], [(1, "ONE"), (2, "two"), (3, "three")])
        assert delta_table(spark, f"{root}/{name}__r") == at_rename
        assert delta_table(spark, f"{root}/{name}__r2") == server_table(mariadb, f"{name}.r2")
        mariadb.sql(f"SET SESSION binlog_row_image = {image};"
                    "UPDATE r2 SET b = 'FOUR' WHERE id = 4;"
                    "TRUNCATE r2; INSERT INTO r2 VALUES (1, 'uno'), (4, 'FOUR');"
                    "ALTER TABLE r2 RENAME TO r3, ADD c INT DEFAULT 9;"
                    "INSERT INTO r3 VALUES (5, 'five', 5)", database=name)
        ship_snapshot(mariadb, kafka_broker, topic, name)
    replicate(spark, cfg)
    server = server_table(mariadb, f"{name}.r3")
    assert server == (["id", "b", "c"], [(1, "uno", 9), (4, "FOUR", 9), (5, "five", 5)])
    assert delta_table(spark, f"{root}/{name}__r3") == server
    assert delta_table(spark, f"{root}/{name}__r") == at_rename
    assert spark.read.format("delta").load(f"{root}/{QUARANTINE}").count() == 0
    # The changes r2 logged before its rename reach r3 but are logged once, under r2.
    log = spark.read.format("delta").load(f"{root}/_cdc_change_log")
    twice = log.groupBy("lineage.source", "lineage.trx_id", "lineage.change_seq").count().where("count > 1")
    assert twice.collect() == []
    assert sorted(r["table"] for r in log.where("op = 'ddl'").collect()) == ["r", "r", "r2", "r2"]


def test_an_online_schema_change_swap_is_followed(mariadb, kafka_broker, topic, spark, tmp_path):
    """The end of gh-ost and pt-online-schema-change: a ghost copy of t is made and altered, fed
    the rows, then `RENAME TABLE t TO _t_old, _t_new TO t` swaps it in and the old table is
    dropped. t's Delta table must end as the server's t, its columns the ghost's. Once with
    the whole cycle in one batch, once with the copy and the swap in two job runs (binlog
    NO_LOG, MINIMAL images: each image read through the schema at its position), and once
    with the swap alone in a batch."""
    name = "sh_swap"
    mariadb.sql(f"DROP DATABASE IF EXISTS {name}; CREATE DATABASE {name}; "
                f"CREATE TABLE {name}.t (id INT PRIMARY KEY, a INT); "
                f"INSERT INTO {name}.t VALUES (1, 10), (2, 20)")
    cfg = job_config(kafka_broker, topic, tmp_path, name)
    root = cfg.delta_root
    minimal = "SET SESSION binlog_row_image = MINIMAL;"
    with row_metadata(mariadb, "NO_LOG"):
        ship_snapshot(mariadb, kafka_broker, topic, name)
        mariadb.sql(minimal + "CREATE TABLE _t_gho LIKE t; "
                    "ALTER TABLE _t_gho ADD COLUMN b VARCHAR(5) DEFAULT 'x';"
                    "INSERT INTO _t_gho (id, a) SELECT id, a FROM t;"
                    "INSERT INTO t VALUES (3, 30); INSERT INTO _t_gho (id, a) VALUES (3, 30);"
                    "UPDATE t SET a = 11 WHERE id = 1; UPDATE _t_gho SET a = 11 WHERE id = 1;"
                    "RENAME TABLE t TO _t_del, _t_gho TO t;"
                    "INSERT INTO t VALUES (4, 40, 'four'); DROP TABLE _t_del", database=name)
        ship_snapshot(mariadb, kafka_broker, topic, name)
        replicate(spark, cfg)
        assert delta_table(spark, f"{root}/{name}__t") == server_table(mariadb, f"{name}.t")
        mariadb.sql(minimal + "CREATE TABLE _t_new LIKE t; ALTER TABLE _t_new MODIFY a BIGINT;"
                    "INSERT INTO _t_new SELECT * FROM t;"
                    "UPDATE t SET b = 'y' WHERE id = 2; UPDATE _t_new SET b = 'y' WHERE id = 2",
                    database=name)
        ship_snapshot(mariadb, kafka_broker, topic, name)
        replicate(spark, cfg)
        # The swap alone in its batch: neither name has a change before or after it there.
        mariadb.sql("RENAME TABLE t TO _t_old, _t_new TO t", database=name)
        ship_snapshot(mariadb, kafka_broker, topic, name)
        replicate(spark, cfg)
        assert delta_table(spark, f"{root}/{name}__t") == server_table(mariadb, f"{name}.t")
        assert delta_table(spark, f"{root}/{name}___t_old") == server_table(mariadb, f"{name}._t_old")
        mariadb.sql(minimal + "UPDATE t SET a = 12 WHERE id = 1; DROP TABLE IF EXISTS _t_old;"
                    "INSERT INTO t VALUES (5, 5000000000, 'five')", database=name)
        ship_snapshot(mariadb, kafka_broker, topic, name)
    replicate(spark, cfg)
    server = server_table(mariadb, f"{name}.t")
    assert server == (["id", "a", "b"], [(1, 12, "x"), (2, 20, "y"), (3, 30, "x"), (4, 40, "four"),
                                         (5, 5000000000, "five")])  # the workload ran as written
    assert delta_table(spark, f"{root}/{name}__t") == server
    assert spark.read.format("delta").load(f"{root}/{QUARANTINE}").count() == 0
    log = spark.read.format("delta").load(f"{root}/_cdc_change_log")
    assert (log.groupBy("lineage.source", "lineage.trx_id", "lineage.change_seq").count()
            .where("count > 1").collect()) == []


def test_a_swap_from_a_table_not_replicated_is_quarantined_until_a_new_snapshot(mariadb, kafka_broker, topic,
                                                                                 spark, tmp_path):
    """gh-ost with tables.include naming t alone: the ghost's rows are in no Delta table, so t
    cannot follow the swap. Its Delta table stays as the server's t was before the swap, its
    images from the swap on are quarantined naming the fix, and a new snapshot of t
    (`cdc-ship --resnapshot`) brings it level with the server."""
    name = "sh_swap_unselected"
    mariadb.sql(f"DROP DATABASE IF EXISTS {name}; CREATE DATABASE {name}; "
                f"CREATE TABLE {name}.t (id INT PRIMARY KEY, a INT); "
                f"INSERT INTO {name}.t VALUES (1, 10), (2, 20)")
    cfg = job_config(kafka_broker, topic, tmp_path, name, include=rf"{name}\.t")
    root = cfg.delta_root
    with row_metadata(mariadb, "NO_LOG"):
        ship_snapshot(mariadb, kafka_broker, topic, name)
        mariadb.sql("CREATE TABLE _t_gho LIKE t; ALTER TABLE _t_gho ADD COLUMN b VARCHAR(5) DEFAULT 'x';"
                    "INSERT INTO _t_gho (id, a) SELECT id, a FROM t;"
                    "INSERT INTO t VALUES (3, 30); INSERT INTO _t_gho (id, a) VALUES (3, 30);", database=name)
        before_swap = server_table(mariadb, f"{name}.t")
        mariadb.sql("RENAME TABLE t TO _t_del, _t_gho TO t; INSERT INTO t VALUES (4, 40, 'four');"
                    "UPDATE t SET a = 11 WHERE id = 1", database=name)
        ship_snapshot(mariadb, kafka_broker, topic, name)
        replicate(spark, cfg)
        assert delta_table(spark, f"{root}/{name}__t") == before_swap
        quarantined = spark.read.format("delta").load(f"{root}/{QUARANTINE}").collect()
        # the insert's and the update's frames after the swap (each names its transaction's end)
        assert len({r["reason"] for r in quarantined}) == 2 and len(quarantined) >= 2
        assert all(f"renamed from {name}._t_gho, which tables.include does not select" in r["reason"]
                   and "cdc-ship --resnapshot" in r["reason"] for r in quarantined), quarantined[0]["reason"]
        ship_snapshot(mariadb, kafka_broker, topic, name, resnapshot=rf"{name}\.t")
        mariadb.sql("INSERT INTO t VALUES (5, 50, 'five')", database=name)
        ship_snapshot(mariadb, kafka_broker, topic, name)
    replicate(spark, cfg)
    assert delta_table(spark, f"{root}/{name}__t") == server_table(mariadb, f"{name}.t")
    assert spark.read.format("delta").load(f"{root}/{QUARANTINE}").count() == len(quarantined)  # nothing new


def test_an_added_generated_column_stops_until_a_new_snapshot(mariadb, kafka_broker, topic, spark, tmp_path):
    """ALTER TABLE ... ADD a GENERATED or AUTO_INCREMENT column, or MODIFY INT -> YEAR: the
    server computed or converted the value of every row there was, and no binlog event carries
    those values, so the job stops naming the columns instead of writing DEFAULTs or the old
    values (before: g NULL, n NULL, y 5 where the server shows 2005, silently). The way past the
    message names: a new snapshot of the table, then the DDL's position accepted (its batch
    writes the DEFAULTs, the snapshot the server's values); the table then equals the server's."""
    name = "sh_computed"
    mariadb.sql(f"DROP DATABASE IF EXISTS {name}; CREATE DATABASE {name}; "
                f"CREATE TABLE {name}.t (id INT PRIMARY KEY, a INT, y INT); "
                f"INSERT INTO {name}.t VALUES (1, 10, 5), (2, 20, 70)")
    ship_snapshot(mariadb, kafka_broker, topic, name)
    evolve = job_config(kafka_broker, topic, tmp_path, name)
    replicate(spark, evolve)
    mariadb.sql("ALTER TABLE t ADD COLUMN g INT AS (a * 2) STORED,"
                " ADD COLUMN n INT NOT NULL AUTO_INCREMENT UNIQUE,"
                " MODIFY y YEAR; INSERT INTO t (id, a) VALUES (3, 30)", database=name)
    ship_snapshot(mariadb, kafka_broker, topic, name)
    error = stop_message(spark, evolve)
    assert "'g' (GENERATED), 'n' (AUTO_INCREMENT), 'y' (INT(11) -> YEAR)" in error, error
    assert "cdc-ship --resnapshot" in error, error
    assert delta_table(spark, f"{evolve.delta_root}/{name}__t") == (["id", "a", "y"],
                                                                    [(1, 10, 5), (2, 20, 70)])

    ship_snapshot(mariadb, kafka_broker, topic, name, resnapshot=rf"{name}\.t")
    replicate(spark, job_config(kafka_broker, topic, tmp_path, name,
                                accept_schema_changes_through=accepted_through(error, name)))
    assert server_table(mariadb, f"{name}.t")[1] == [(1, 10, 2005, 20, 1), (2, 20, 1970, 40, 2),
                                                     (3, 30, None, 60, 3)]
    assert delta_table(spark, f"{evolve.delta_root}/{name}__t") == server_table(mariadb, f"{name}.t")

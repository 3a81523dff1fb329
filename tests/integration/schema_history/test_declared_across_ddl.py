"""A target declared by hand follows the source's DDL as a replica's own table does, keeping its
replica-side DEFAULTs and its own columns (issue #17 item 3: "ADD COLUMN (with the replica-side
DEFAULT of the declaration if one exists, else the source's)"; WL#5092 DEFAULT VALUES R1;
libs/schema_history/declared_schemas.py), through the whole product on a real MariaDB.

The declaration differs from the source: b's DEFAULT is 'rep' (the source's 'src'), it declares
c (DEFAULT 7) before the source adds it, and it has a column of its own, x. Then the source adds
c, adds d, drops e, renames b and widens a, with DML around each DDL, over two job runs. The
Delta table must hold the server's rows in the declaration's columns as the DDL changed them:
where the binlog carries a value, the server's; where it does not (a MINIMAL image, a row that
existed when c was added), the declaration's DEFAULT. Before this, the declared target kept its
declaration: d never reached Delta, b's values stayed under b and a BIGINT value stopped the job."""
from __future__ import annotations

import datetime as dt

import pytest

from libs.tables.system_tables import QUARANTINE

from tests.drawn import drawn_modes

from .helpers import delta_table, job_config, replicate, row_metadata, server_table, ship_snapshot

pytestmark = pytest.mark.integration

_DECLARED = ("CREATE TABLE {name}.t (id INT PRIMARY KEY, a INT, b VARCHAR(10) DEFAULT 'rep', e INT, "
             "c INT DEFAULT 7, x VARCHAR(8) DEFAULT 'replica')")


@pytest.mark.parametrize("metadata, image", drawn_modes([("NO_LOG", "MINIMAL"), ("FULL", "FULL")]))
def test_a_declared_table_follows_ddl_with_its_replica_side_defaults(mariadb, kafka_broker, topic, spark,
                                                                     tmp_path, metadata, image):
    name = f"sh_declared_{metadata}_{image}".lower()
    mariadb.sql(f"DROP DATABASE IF EXISTS {name}; CREATE DATABASE {name}; "
                f"CREATE TABLE {name}.t (id INT PRIMARY KEY, a INT, b VARCHAR(10) DEFAULT 'src', e INT); "
                f"INSERT INTO {name}.t VALUES (1, 10, 'one', 1), (2, 20, 'two', 2), (3, 30, 'three', 3)")
    ddl = tmp_path / "replica.sql"
    ddl.write_text(_DECLARED.format(name=name))
    cfg = job_config(kafka_broker, topic, tmp_path, name, target_ddl=str(ddl))
    with row_metadata(mariadb, metadata):
        ship_snapshot(mariadb, kafka_broker, topic, name)
        mariadb.sql(f"SET SESSION binlog_row_image = {image};"
                    "INSERT INTO t VALUES (4, 40, 'four', 4);"
                    "ALTER TABLE t ADD COLUMN c INT DEFAULT 1 AFTER a;"
                    "INSERT INTO t (id, a, c, b, e) VALUES (5, 50, 55, 'five', 5);", database=name)
        ship_snapshot(mariadb, kafka_broker, topic, name)
        replicate(spark, cfg)
        mariadb.sql(f"SET SESSION binlog_row_image = {image};"
                    "ALTER TABLE t ADD COLUMN d DATE DEFAULT '2024-02-29';"
                    "ALTER TABLE t DROP COLUMN e;"
                    "INSERT INTO t (id, a, c, b) VALUES (6, 60, 66, 'six');"
                    "ALTER TABLE t RENAME COLUMN b TO bee, MODIFY a BIGINT;"
                    "UPDATE t SET a = 9000000000 WHERE id = 6;"
                    "UPDATE t SET bee = 'ONE' WHERE id = 1;"
                    "INSERT INTO t (id, a) VALUES (7, 70);", database=name)
        ship_snapshot(mariadb, kafka_broker, topic, name)
    replicate(spark, cfg)

    columns, rows = server_table(mariadb, f"{name}.t")
    assert columns == ["id", "a", "c", "bee", "d"] and len(rows) == 7  # the workload ran as written
    assert {r[4] for r in rows} == {dt.date(2024, 2, 29)}
    minimal = image == "MINIMAL"
    expected = []
    for id_, a, c, bee, d in rows:
        # c: the declaration's DEFAULT where no image carried the source's value (the rows that
        # existed at the ADD, updated later only by a MINIMAL image, or inserted without c)
        if id_ in (2, 3, 4) or (id_ in (1, 7) and minimal):
            c = 7
        if id_ == 7 and minimal:  # inserted without b: a MINIMAL image does not carry it
            bee = "rep"
        expected.append((id_, a, bee, c, "replica", d))
    assert delta_table(spark, f"{cfg.delta_root}/{name}__t") == (["id", "a", "bee", "c", "x", "d"], expected)
    assert spark.read.format("delta").load(f"{cfg.delta_root}/{QUARANTINE}").count() == 0

"""Issue #38 items 1 and 4 on a real MariaDB, broker and job.

1. `h38`.`b.c` and `h38.b`.`c` both read 'h38.b.c' when joined. Both are snapshotted, their
   binlog changes followed, and each lands in its own Delta table (targets from the source)
   equal to the server's SELECT. Two source tables whose default Delta names meet
   (`h39__b`.`c`, `h39`.`b__c`: both h39__b__c) stop the job with one line naming both.
4. A system-versioned table named by --include is refused with one line naming it, before the
   run publishes anything (its binlog rows carry hidden row_start/row_end columns and every old
   version: libs/snapshot/source.py refuse_versioned).
"""
from __future__ import annotations

import re

import pytest
from pyspark.errors import StreamingQueryException

from libs.config.job import JobConfig
from libs.shipper.rebuild import read_records
from libs.targets import default_delta_table_name
from pipelines.replicate import build_query, make_applier
from pipelines.ship import main as ship_main
from pipelines.delta.table_equality import delta_rows, server_rows

from ..shipper.helpers import password_file

pytestmark = pytest.mark.integration


def _ship(db, kafka_broker, topic, include: str) -> int:
    return ship_main(["--server", f"{db.host}:{db.port}", "--user", db.user,
                      "--password-file", password_file(db), "--bootstrap", kafka_broker.bootstrap,
                      "--topic", topic, "--source", "ids", "--snapshot",
                      "--include", include, "--non-block", "--progress", "1"])


def _job(spark, kafka_broker, topic, tmp_path, include: str) -> tuple[JobConfig, object]:
    cfg = JobConfig(bootstrap=kafka_broker.bootstrap, topic=topic, delta_root=str(tmp_path / "delta"),
                    checkpoint=str(tmp_path / "ckpt"), available_now=True, tables={"include": [include]})
    return cfg, build_query(spark, cfg, make_applier(cfg))  # no target DDL: targets from the source


def test_tables_whose_names_join_alike_land_in_their_own_delta_tables(mariadb, kafka_broker, topic, spark,
                                                                     tmp_path, capsys):
    tables = (("h38", "b.c"), ("h38.b", "c"))
    mariadb.sql("DROP DATABASE IF EXISTS `h38`; DROP DATABASE IF EXISTS `h38.b`;"
                "CREATE DATABASE `h38`; CREATE DATABASE `h38.b`;"
                "CREATE TABLE `h38`.`b.c` (id INT PRIMARY KEY, v VARCHAR(20));"
                "CREATE TABLE `h38.b`.`c` (id INT PRIMARY KEY, v VARCHAR(20), n INT DEFAULT 7);"
                "INSERT INTO `h38`.`b.c` VALUES (1, 'in h38'), (2, 'in h38, two');"
                "INSERT INTO `h38.b`.`c` VALUES (1, 'in h38.b', 1), (3, 'in h38.b, three', 3);")
    assert _ship(mariadb, kafka_broker, topic, r"h38\.b\.c") == 0
    assert re.search(r"snapshot \w+ done: 2 table\(s\), 4 rows", capsys.readouterr().err)
    mariadb.sql("INSERT INTO `h38`.`b.c` VALUES (4, 'after');"
                "UPDATE `h38.b`.`c` SET v = 'changed' WHERE id = 1;"
                "DELETE FROM `h38`.`b.c` WHERE id = 2;"
                "INSERT INTO `h38.b`.`c` (id, v) VALUES (5, 'after, in h38.b');")
    assert _ship(mariadb, kafka_broker, topic, r"h38\.b\.c") == 0  # the binlog to its end
    snapshot = [r for r in read_records(kafka_broker.bootstrap, topic, "ids") if r.is_snapshot]
    assert len(snapshot) == 2 + 2 * 3  # begin, per table: table, rows, table_end; end

    cfg, query = _job(spark, kafka_broker, topic, tmp_path, r"h38\.b\.c")
    query.awaitTermination()
    assert query.exception() is None
    for database, table in tables:
        columns, expected = server_rows(mariadb, database, table)
        assert len(expected) >= 2
        path = f"{cfg.delta_root}/{default_delta_table_name(database, table)}"
        assert delta_rows(spark, path, columns) == expected, (database, table)


def test_two_source_tables_that_would_share_a_delta_table_stop_the_job_with_one_line(
        mariadb, kafka_broker, topic, spark, tmp_path):
    mariadb.sql("DROP DATABASE IF EXISTS `h39__b`; DROP DATABASE IF EXISTS `h39`;"
                "CREATE DATABASE `h39__b`; CREATE DATABASE `h39`;"
                "CREATE TABLE `h39__b`.`c` (id INT PRIMARY KEY); "
                "CREATE TABLE `h39`.`b__c` (id INT PRIMARY KEY);"
                "INSERT INTO `h39__b`.`c` VALUES (1); INSERT INTO `h39`.`b__c` VALUES (2);")
    assert _ship(mariadb, kafka_broker, topic, r"h39.*") == 0
    _cfg, query = _job(spark, kafka_broker, topic, tmp_path, r"h39.*")
    with pytest.raises(StreamingQueryException) as stopped:
        query.awaitTermination()
    line = next(ln for ln in str(stopped.value).splitlines() if "h39__b__c" in ln)
    assert "source tables `h39__b`.`c` and `h39`.`b__c` would share it" in line \
        or "source tables `h39`.`b__c` and `h39__b`.`c` would share it" in line, line


def test_a_system_versioned_table_is_refused_with_one_line_naming_it(mariadb, kafka_broker, topic, capsys):
    mariadb.sql("DROP DATABASE IF EXISTS `h40`; CREATE DATABASE `h40`;"
                "CREATE TABLE `h40`.`hist` (id INT PRIMARY KEY, v INT) WITH SYSTEM VERSIONING;"
                "INSERT INTO `h40`.`hist` VALUES (1, 1), (2, 2); UPDATE `h40`.`hist` SET v = 3 WHERE id = 1;")
    assert mariadb.query("SELECT TABLE_TYPE FROM information_schema.TABLES "
                         "WHERE TABLE_SCHEMA = 'h40' AND TABLE_NAME = 'hist'") == [("SYSTEM VERSIONED",)]
    capsys.readouterr()
    assert _ship(mariadb, kafka_broker, topic, r"h40\.hist") == 1
    errors = [ln for ln in capsys.readouterr().err.splitlines() if "system-versioned" in ln]
    assert len(errors) == 1 and "`h40`.`hist` is system-versioned" in errors[0], errors
    assert not [r for r in read_records(kafka_broker.bootstrap, topic, "ids") if r.is_snapshot]

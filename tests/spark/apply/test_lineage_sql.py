"""libs/reads/lineage_sql.py templates run on Delta tables written by DeltaApplier; identifiers quoted,
binlog values bound as parameters (a statement text full of quotes is just data)."""

import datetime as dt

import pytest

from libs.reads import lineage_sql as L
from libs.tables.system_tables import CHANGE_LOG, PROGRESS
from pipelines.apply import DeltaApplier
from pipelines.delta import delta_txn
from pipelines.apply import tables as D

from .builders import COMMIT_TS, Source, catalog_from_ddl, changes_df, config

pytestmark = pytest.mark.spark

EVIL = "UPDATE t SET v = 'x'' OR 1=1 --' WHERE `id` = 2 /* \\' */"


@pytest.fixture(scope="module")
def lineage_env(spark, tmp_path_factory):
    cfg = config(tmp_path_factory.mktemp("lineage"))
    # a table name with a backtick and a space: quoted identifiers must survive it
    catalog = catalog_from_ddl("CREATE TABLE shop.t (id int NOT NULL, v varchar(40), PRIMARY KEY (id))",
                               {"shop.t": {"delta_table": "shop t`s"}})
    src = Source("shop", "t", ["id", "v"])
    batch0 = [src.insert({"id": 1, "v": "a"}, statement="INSERT INTO t VALUES (1,'a'),(2,'b')"),
              src.insert({"id": 2, "v": "b"}, seq=1, trx=1, statement="INSERT INTO t VALUES (1,'a'),(2,'b')")]
    batch1 = [src.update({"id": 2}, {"v": "x' OR 1=1 --"}, statement=EVIL),
              src.update({"id": 2}, {"id": 3}, statement="UPDATE t SET id = 3 WHERE id = 2")]
    applier = DeltaApplier(catalog, cfg, app_id="lineage-job")
    applier(changes_df(spark, batch0), 0)
    applier(changes_df(spark, batch1), 1)
    return cfg, L.delta_path_ref(D.table_path(cfg.delta_root, "shop t`s")), \
        L.delta_path_ref(D.table_path(cfg.delta_root, CHANGE_LOG))


def _run(spark, query):
    sql, args = query
    return spark.sql(sql, args=args).collect()


def test_applier_leaves_no_txn_confs_behind(spark, lineage_env):
    for conf in (delta_txn.TXN_APP_ID_CONF, delta_txn.TXN_VERSION_CONF, delta_txn.MATERIALIZE_SOURCE_CONF):
        assert spark.conf.get(conf, None) is None


def test_quote_identifier_doubles_backticks():
    assert L.quote_identifier("a`b") == "`a``b`"
    assert L.delta_path_ref("/d/x`y") == "delta.`/d/x``y`"
    assert L.table_ref("main", "cdc", "t") == "`main`.`cdc`.`t`"


def test_which_statement_last_changed_this_row(spark, lineage_env):
    _, table, _ = lineage_env
    (row,) = _run(spark, L.last_change_of_row(table, {"id": 3}))
    assert (row["statement"], row["gtid"], row["operation"]) == \
        ("UPDATE t SET id = 3 WHERE id = 2", "0-1-3", "update")
    (row,) = _run(spark, L.last_change_of_row(table, {"id": 1}))
    assert row["statement"] == "INSERT INTO t VALUES (1,'a'),(2,'b')"


def test_every_row_this_statement_changed(spark, lineage_env):
    _, _, log = lineage_env
    rows = _run(spark, L.rows_changed_by_statement(log, "src1", "0-1-1"))
    assert [(r["op"], r["key"]) for r in rows] == [("insert", {"id": "1"}), ("insert", {"id": "2"})]
    rows = _run(spark, L.rows_changed_by_statement(log, "src1", "0-1-2", statement=EVIL))
    assert [(r["op"], r["statement"]) for r in rows] == [("update", EVIL)]


def test_all_changes_to_a_key_in_time_order_follow_the_row_through_a_key_change(spark, lineage_env):
    _, _, log = lineage_env
    rows = _run(spark, L.changes_of_key(log, "shop", "t", {"id": "2"}))
    assert [(r["op"], r["key"], r["gtid"]) for r in rows] == [
        ("insert", {"id": "2"}, "0-1-1"), ("update", {"id": "2"}, "0-1-2"), ("update", {"id": "3"}, "0-1-3")]


def test_statements_that_touched_a_table_between_two_commit_times(spark, lineage_env):
    _, _, log = lineage_env
    start, end = (COMMIT_TS + dt.timedelta(seconds=2)), (COMMIT_TS + dt.timedelta(seconds=3))
    rows = _run(spark, L.statements_touching_table(log, "shop", "t", start, end))
    assert [(r["trx_id"], r["statement"], r["changes"]) for r in rows] == [("0-1-2", EVIL, 1)]
    day = COMMIT_TS + dt.timedelta(days=1)
    rows = _run(spark, L.statements_touching_table(log, "shop", "t", COMMIT_TS, day))
    assert [(r["trx_id"], r["changes"]) for r in rows] == [("0-1-1", 2), ("0-1-2", 1), ("0-1-3", 1)]


def test_latest_progress_per_source(spark, lineage_env):
    cfg, _, _ = lineage_env
    progress = L.delta_path_ref(D.table_path(cfg.delta_root, PROGRESS))
    (row,) = _run(spark, L.latest_progress(progress, "lineage-job"))
    assert (row["source"], row["trx_id"], row["batch_id"], row["trx_end_pos"]) == ("src1", "0-1-3", 1, 1300)
    assert _run(spark, L.latest_progress(progress, "other-job")) == []

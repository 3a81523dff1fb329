"""DeltaApplier on hand-built change records: row images replayed onto Delta (WL#5092), lineage,
change log, progress. Expected tables are asserted exactly with chispa."""

import datetime as dt

import pytest
from chispa import assert_df_equality

from libs.tables.system_tables import CHANGE_LOG, PROGRESS
from pipelines.apply import DeltaApplier
from pipelines.apply import tables as D

from .builders import COMMIT_TS, Source, catalog_from_ddl, changes_df, config, delta, rows_of

pytestmark = pytest.mark.spark

T1 = "CREATE TABLE test.t1 (a int DEFAULT 900, b int)"
PK = "CREATE TABLE test.t (id int NOT NULL, name varchar(10), qty int DEFAULT 7, PRIMARY KEY (id))"
SAME = {"ignore_nullable": True, "ignore_metadata": True}  # Delta: NOT NULL + DEFAULT metadata
NOKEY = "CREATE TABLE test.nk (a int, `b, x`` y` varchar(5))"  # MySQL allows any column name


def _target_df(spark, cfg, name):
    return delta(spark, cfg, name).drop("_row_id", "_lineage")


def test_seed_insert_with_absent_column_takes_the_target_default_900(spark, tmp_path):
    # WL#5092: MASTER t1 (a int DEFAULT 100, b int), SLAVE t1 (a int DEFAULT 900, b int);
    # INSERT INTO t1(b) VALUES (1) logged with a minimal after image {b} -> the slave has (900, 1).
    cfg = config(tmp_path)
    applier = DeltaApplier(catalog_from_ddl(T1), cfg)
    master = Source("test", "t1", ["a", "b"])
    counts = applier(changes_df(spark, [master.insert({"b": 1})]), 0)
    expected = spark.createDataFrame([(900, 1)], "a int, b int")
    assert_df_equality(_target_df(spark, cfg, "test__t1"), expected, **SAME)
    assert counts["test.t1"]["insert"] == 1 and counts["test.t1"]["rows_upserted"] == 1
    # The Delta column DEFAULT is declared too: another writer omitting `a` also gets 900.
    path = D.table_path(cfg.delta_root, "test__t1")
    spark.sql(f"INSERT INTO delta.`{path}` (b, _row_id) VALUES (2, 'other-writer')")
    assert rows_of(spark, cfg, "test__t1") == [(900, 1), (900, 2)]


def test_minimal_update_keeps_other_columns_and_key_change_moves_the_row(spark, tmp_path):
    cfg = config(tmp_path)
    applier = DeltaApplier(catalog_from_ddl(PK), cfg)
    src = Source("test", "t", ["id", "name", "qty"])
    applier(changes_df(spark, [src.insert({"id": 1, "name": "a", "qty": 1}),
                               src.insert({"id": 2, "name": "b", "qty": 2})]), 0)
    applier(changes_df(spark, [src.update({"id": 1}, {"qty": 10}),          # minimal AI: qty only
                               src.update({"id": 2}, {"id": 20})]), 1)       # key change
    expected = spark.createDataFrame([(1, "a", 10), (20, "b", 2)], "id int, name string, qty int")
    assert_df_equality(_target_df(spark, cfg, "test__t"), expected, ignore_row_order=True, **SAME)


def test_keyless_identical_rows_exactly_one_changes_then_one_is_deleted(spark, tmp_path):
    cfg = config(tmp_path)
    applier = DeltaApplier(catalog_from_ddl(NOKEY), cfg)
    b = "b, x` y"
    src = Source("test", "nk", ["a", b])
    applier(changes_df(spark, [src.insert({"a": 1, b: "x"}), src.insert({"a": 1, b: "x"}),
                               src.insert({"a": 2, b: "y"})]), 0)
    applier(changes_df(spark, [src.update({"a": 1, b: "x"}, {"a": 1, b: "z"})]), 1)
    assert rows_of(spark, cfg, "test__nk") == [(1, "x"), (1, "z"), (2, "y")]
    applier(changes_df(spark, [src.delete({"a": 1, b: "x"})]), 2)
    expected = spark.createDataFrame([(1, "z"), (2, "y")], "a int, b string")
    actual = _target_df(spark, cfg, "test__nk")
    assert actual.columns == ["a", b]
    # chispa sorts rows by unquoted column names: compare under plain names
    assert_df_equality(actual.toDF("a", "b"), expected, ignore_row_order=True, **SAME)


def test_delete_then_reinsert_and_several_changes_to_one_row_in_one_batch(spark, tmp_path):
    cfg = config(tmp_path)
    applier = DeltaApplier(catalog_from_ddl(PK), cfg)
    src = Source("test", "t", ["id", "name", "qty"])
    applier(changes_df(spark, [src.insert({"id": 1, "name": "old", "qty": 1}),
                               src.insert({"id": 2, "name": "two", "qty": 2})]), 0)
    batch = [src.delete({"id": 1}), src.insert({"id": 1, "name": "new"}),          # qty: target default 7
             src.update({"id": 2}, {"qty": 3}), src.update({"id": 2}, {"name": "deux"}),
             src.update({"id": 2}, {"qty": 4})]
    applier(changes_df(spark, list(reversed(batch))), 1)  # any order in: commit order is restored
    expected = spark.createDataFrame([(1, "new", 7), (2, "deux", 4)], "id int, name string, qty int")
    assert_df_equality(_target_df(spark, cfg, "test__t"), expected, ignore_row_order=True, **SAME)


def test_lineage_column_change_log_and_progress(spark, tmp_path):
    cfg = config(tmp_path)
    applier = DeltaApplier(catalog_from_ddl(PK), cfg, app_id="job-a")
    src = Source("test", "t", ["id", "name", "qty"])
    batch = [src.insert({"id": 1, "name": "a"}, statement="INSERT INTO t (id, name) VALUES (1, 'a')"),
             src.insert({"id": 2, "name": "b"}, statement="INSERT INTO t (id, name) VALUES (2, 'b')"),
             src.update({"id": 1}, {"name": "A"}, statement="UPDATE t SET name = 'A' WHERE id = 1"),
             src.change("ddl", statement="ALTER TABLE t ADD COLUMN z int")]
    applier(changes_df(spark, batch), 5)
    lineage = sorted((r["id"], r["_lineage"]["statement"], r["_lineage"]["gtid"], r["_lineage"]["operation"],
                      r["_lineage"]["binlog_pos"], r["_lineage"]["commit_ts"])
                     for r in delta(spark, cfg, "test__t").collect())
    assert lineage == [(1, "UPDATE t SET name = 'A' WHERE id = 1", "0-1-3", "update", 1250,
                        (COMMIT_TS + dt.timedelta(seconds=3)).replace(tzinfo=None)),
                       (2, "INSERT INTO t (id, name) VALUES (2, 'b')", "0-1-2", "insert", 1150,
                        (COMMIT_TS + dt.timedelta(seconds=2)).replace(tzinfo=None))]
    log = delta(spark, cfg, CHANGE_LOG)
    assert log.count() == 4
    assert rows_of(spark, cfg, CHANGE_LOG, "op", "outcome", "key", "batch_id") == sorted([
        ("insert", "applied", {"id": "1"}, 5), ("insert", "applied", {"id": "2"}, 5),
        ("update", "applied", {"id": "1"}, 5), ("ddl", "ddl_recorded", None, 5)], key=repr)
    update = log.where("op = 'update'").first()
    assert [(c["name"], c["text"]) for c in update["before"]] == [("id", "1")]   # present columns only
    assert [(c["name"], c["text"]) for c in update["after"]] == [("name", "A")]
    assert rows_of(spark, cfg, PROGRESS, "app_id", "source", "trx_id", "gtid", "trx_file", "trx_end_pos",
                   "batch_id", "changes") == [
        ("job-a", "src1", "0-1-4", "0-1-4", "mdb-bin.000002", 1400, 5, 4)]


def test_composite_unique_key_collision_found_beyond_the_images(spark, tmp_path):
    # UPDATE of one column of UNIQUE (a, b): the colliding row is named by no image; the
    # closure read finds it and strict mode stops with 1062 instead of writing a duplicate.
    from pipelines.apply import ApplyStopped

    cfg = config(tmp_path)
    catalog = catalog_from_ddl("CREATE TABLE test.u (id int NOT NULL, a int NOT NULL, b int NOT NULL,"
                               " PRIMARY KEY (id), UNIQUE KEY uk (a, b))")
    src = Source("test", "u", ["id", "a", "b"])
    DeltaApplier(catalog, cfg)(changes_df(spark, [src.insert({"id": 1, "a": 1, "b": 1}),
                                                  src.insert({"id": 2, "a": 2, "b": 1})]), 0)
    with pytest.raises(ApplyStopped, match="1062"):
        DeltaApplier(catalog, cfg)(changes_df(spark, [src.update({"id": 2}, {"a": 1})]), 1)
    assert rows_of(spark, cfg, "test__u") == [(1, 1, 1), (2, 2, 1)]

"""Small mirrored targets are written by replacing the whole table (BatchWrites._target_write):
the same table, lineage and schema (column DEFAULTs, column mapping) as the MERGE path; as
idempotent per batch; and never over another writer's commit or a Change Data Feed table."""

import json

import pytest

from libs.tables.table_location import TableLocation
from pipelines.apply import DeltaApplier
from pipelines.apply import tables as D
from pipelines.apply.batch_writes import BatchWrites
from pipelines.apply.known_targets import KnownTargets

from .builders import Source, catalog_from_ddl, changes_df, config, delta, version

pytestmark = pytest.mark.spark

DDL = ("CREATE TABLE shop.a (id int NOT NULL, v varchar(10) DEFAULT 'dflt', n int DEFAULT 900,"
       " PRIMARY KEY (id));\n"
       "CREATE TABLE shop.k (x int, y varchar(5))")  # keyless: identical rows are distinct rows


def _batches():
    a, k = Source("shop", "a", ["id", "v", "n"]), Source("shop", "k", ["x", "y"])
    k.trx = 100  # one source stream: transaction numbers must not repeat
    return [
        [a.insert({"id": 1, "v": "x"}), a.insert({"id": 2}), a.insert({"id": 3, "n": 3}),
         k.insert({"x": 1, "y": "p"}), k.insert({"x": 1, "y": "p"})],
        # minimal images: absent after-image columns keep their values; a key change; one of two
        # identical keyless rows changes; delete then re-insert of a key
        [a.update({"id": 1}, {"v": "y"}), a.update({"id": 2}, {"id": 20}), a.delete({"id": 3}),
         a.insert({"id": 3, "v": "again"}), k.update({"x": 1, "y": "p"}, {"y": "q"})],
        [a.update({"id": 20}, {"n": 7}), k.delete({"x": 1, "y": "q"}), k.insert({"x": 2})],
        [k.delete({"x": 1, "y": "p"}), k.delete({"x": 2})],  # the keyless table left empty
    ]


def _table(spark, cfg, name):
    """Every column, `_row_id` and `_lineage` included, as sorted JSON rows."""
    return sorted(delta(spark, cfg, name).toJSON().collect())


def _operations(spark, cfg, name):
    from delta.tables import DeltaTable

    history = DeltaTable.forPath(spark, D.table_path(cfg.delta_root, name)).history().orderBy("version")
    return [r["operation"] for r in history.select("operation").collect()]


def _schema(spark, cfg, name):
    return json.loads(delta(spark, cfg, name).schema.json())


def test_replacing_small_tables_gives_the_merge_paths_tables_lineage_and_schema(spark, tmp_path):
    replaced = config(tmp_path / "r")
    merged = config(tmp_path / "m", target_overwrite_max_rows=0, writes={"deletion_vector_commits": False})
    for cfg in (replaced, merged):
        applier = DeltaApplier(catalog_from_ddl(DDL), cfg)
        for batch_id, batch in enumerate(_batches()):
            applier(changes_df(spark, batch), batch_id)
    for name in ("shop__a", "shop__k"):
        assert _table(spark, replaced, name) == _table(spark, merged, name)
        assert _schema(spark, replaced, name) == _schema(spark, merged, name)
        # Every write replaces the table, the first one too (our CREATE: empty at version 0).
        writes = 3 if name == "shop__a" else 4
        assert _operations(spark, replaced, name) == ["CREATE TABLE"] + ["WRITE"] * writes
        # The first batch only inserts (the replay read no stored row): an append, then MERGEs.
        assert _operations(spark, merged, name) == ["CREATE TABLE", "WRITE"] + ["MERGE"] * (writes - 1)
    assert delta(spark, replaced, "shop__k").count() == 0
    fields = {f["name"]: f["metadata"] for f in _schema(spark, replaced, "shop__a")["fields"]}
    assert fields["n"]["CURRENT_DEFAULT"] == "CAST('900' AS INT)"  # the replica-side DEFAULT kept
    detail = spark.sql(f"DESCRIBE DETAIL delta.`{D.table_path(replaced.delta_root, 'shop__a')}`")
    props = detail.first()["properties"]
    assert props["delta.columnMapping.mode"] == "name"
    rows = sorted((r["id"], r["v"], r["n"]) for r in delta(spark, replaced, "shop__a").collect())
    assert rows == [(1, "y", 900), (3, "again", 900), (20, "dflt", 7)]


def test_a_replaced_batch_applied_again_is_skipped_by_delta(spark, tmp_path, monkeypatch):
    cfg = config(tmp_path)
    a, k = Source("shop", "a", ["id", "v", "n"]), Source("shop", "k", ["x", "y"])
    DeltaApplier(catalog_from_ddl(DDL), cfg)(changes_df(spark, [a.insert({"id": 1}), k.insert({"x": 1})]), 0)
    # Replays again without error, but a second write would add a second keyless row.
    again = changes_df(spark, [a.update({"id": 1}, {"v": "y"}), k.insert({"x": 1})])
    DeltaApplier(catalog_from_ddl(DDL), cfg)(again, 1)
    assert [_operations(spark, cfg, t)[-1] for t in ("shop__a", "shop__k")] == ["WRITE", "WRITE"]
    before = {t: (version(spark, cfg, t), _table(spark, cfg, t)) for t in ("shop__a", "shop__k")}
    # Not even the applier's own "already committed" check: Delta's txnAppId/txnVersion must skip it.
    monkeypatch.setattr(KnownTargets, "already_committed", lambda *args: False)
    DeltaApplier(catalog_from_ddl(DDL), cfg)(again, 1)
    assert {t: (version(spark, cfg, t), _table(spark, cfg, t)) for t in before} == before
    assert len(before["shop__k"][1]) == 2


def test_another_writers_commit_during_the_batch_makes_it_a_merge(spark, tmp_path, monkeypatch):
    cfg = config(tmp_path, writes={"deletion_vector_commits": False})  # (with them: test_dv_commits.py)
    first, second, third, _ = _batches()
    applier = DeltaApplier(catalog_from_ddl(DDL), cfg)
    applier(changes_df(spark, first), 0)
    a_path = D.table_path(cfg.delta_root, "shop__a")
    real_write = BatchWrites._commit

    # commits after the replay read the mirror, before the target's write is made
    def other_writer_first(self, spark_, batch_id, target, path, make):
        if target.table == "a":
            spark_.sql(f"INSERT INTO delta.`{a_path}` (id, v, n, _row_id) "
                       "VALUES (99, 'other', 1, 'other-writer')")
        real_write(self, spark_, batch_id, target, path, make)

    monkeypatch.setattr(BatchWrites, "_commit", other_writer_first)
    applier(changes_df(spark, second), 1)
    monkeypatch.setattr(BatchWrites, "_commit", real_write)
    assert _operations(spark, cfg, "shop__a")[-2:] == ["WRITE", "MERGE"]  # the INSERT, then ours
    # it does not equal the MERGE's version: reloaded next batch
    assert TableLocation(path=a_path) not in applier.known.mirrors
    applier(changes_df(spark, third), 2)
    rows = sorted((r["id"], r["v"], r["n"]) for r in delta(spark, cfg, "shop__a").collect())
    assert rows == [(1, "y", 900), (3, "again", 900), (20, "dflt", 7), (99, "other", 1)]
    assert _operations(spark, cfg, "shop__a")[-1] == "WRITE"  # the reloaded mirror is replaceable again


def test_a_table_with_change_data_feed_is_always_merged(spark, tmp_path):
    cfg = config(tmp_path)
    first, second, third, _ = _batches()
    applier = DeltaApplier(catalog_from_ddl(DDL), cfg)
    applier(changes_df(spark, first), 0)
    path = D.table_path(cfg.delta_root, "shop__a")
    spark.sql(f"ALTER TABLE delta.`{path}` SET TBLPROPERTIES ('delta.enableChangeDataFeed' = 'true')")
    applier(changes_df(spark, second), 1)
    applier(changes_df(spark, third), 2)
    assert _operations(spark, cfg, "shop__a")[-2:] == ["MERGE", "MERGE"]
    assert _operations(spark, cfg, "shop__k")[-2:] == ["WRITE", "WRITE"]

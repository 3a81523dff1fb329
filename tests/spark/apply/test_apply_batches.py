"""Exactly once and errors: the same batch_id twice, a batch that failed half-way and is
retried, strict 1032 (writes nothing), idempotent mode and policies that quarantine."""

import os

import pytest

from libs.tables.system_tables import CHANGE_LOG, PROGRESS, QUARANTINE
from pipelines.apply import ApplyStopped, DeltaApplier
from pipelines.apply import tables as D
from pipelines.apply.batch_writes import BatchWrites
from libs.apply.plan import UndeclaredTableError

from .builders import Source, catalog_from_ddl, changes_df, config, delta, rows_of, version

pytestmark = pytest.mark.spark

DDL = ("CREATE TABLE shop.a (id int NOT NULL, v varchar(10), PRIMARY KEY (id));\n"
       "CREATE TABLE shop.b (k varchar(5) NOT NULL, n int DEFAULT 0, UNIQUE KEY uk (k))")


def _sources():
    b = Source("shop", "b", ["k", "n"])
    b.trx = 100  # one source stream: transaction numbers (GTIDs, positions) must not repeat
    return Source("shop", "a", ["id", "v"]), b


def test_same_batch_id_twice_changes_nothing_and_a_half_written_batch_is_completed_once(
        spark, tmp_path, monkeypatch):
    cfg = config(tmp_path)
    a, b = _sources()
    first = [a.insert({"id": 1, "v": "x"}), b.insert({"k": "k1"})]
    DeltaApplier(catalog_from_ddl(DDL), cfg)(changes_df(spark, first), 0)
    batch = [a.update({"id": 1}, {"v": "y"}), a.insert({"id": 2, "v": "z"}), b.update({"k": "k1"}, {"n": 5}),
             b.delete({"k": "k1"}), b.insert({"k": "k2", "n": 2})]

    # Attempt 1 dies after writing shop__a, before shop__b (the change log is already in).
    real_write = BatchWrites._commit

    def dying_write(self, spark_, batch_id, target, path, make):
        if target.table == "b":
            raise OSError("executor lost")
        real_write(self, spark_, batch_id, target, path, make)

    monkeypatch.setattr(BatchWrites, "_commit", dying_write)
    with pytest.raises(OSError):
        DeltaApplier(catalog_from_ddl(DDL), cfg)(changes_df(spark, batch), 1)
    monkeypatch.setattr(BatchWrites, "_commit", real_write)

    # Attempt 2 (Spark retries the batch): shop__a is skipped (already written), shop__b applied.
    counts = DeltaApplier(catalog_from_ddl(DDL), cfg)(changes_df(spark, batch), 1)
    assert counts["shop.a"]["already_applied"] == 1 and counts["shop.b"]["rows_upserted"] == 1
    expected = {"shop__a": [(1, "y"), (2, "z")], "shop__b": [("k2", 2)]}
    assert {t: rows_of(spark, cfg, t) for t in expected} == expected
    assert delta(spark, cfg, CHANGE_LOG).count() == 2 + 5
    versions = {t: version(spark, cfg, t) for t in ("shop__a", "shop__b", CHANGE_LOG, PROGRESS)}

    # Attempt 3 with the same batch_id: nothing changes, no new Delta version anywhere.
    DeltaApplier(catalog_from_ddl(DDL), cfg)(changes_df(spark, batch), 1)
    assert {t: rows_of(spark, cfg, t) for t in expected} == expected
    assert delta(spark, cfg, CHANGE_LOG).count() == 7
    assert {t: version(spark, cfg, t) for t in versions} == versions
    assert rows_of(spark, cfg, PROGRESS, "batch_id", "trx_id") == [(0, "0-1-101"), (1, "0-1-104")]


def test_strict_row_not_found_names_table_key_and_position_and_writes_nothing(spark, tmp_path):
    cfg = config(tmp_path)
    a, b = _sources()
    batch = [b.insert({"k": "k1"}),
             a.update({"id": 42}, {"v": "nope"}, statement="UPDATE a SET v='nope' WHERE id=42")]
    with pytest.raises(ApplyStopped) as stopped:
        DeltaApplier(catalog_from_ddl(DDL), cfg)(changes_df(spark, batch), 0)
    message = str(stopped.value)
    for part in ("1032", "shop.a", "'id': '42'", "GTID 0-1-1", "mdb-bin.000002:1050", "shop__a", "batch 0"):
        assert part in message
    assert not os.path.exists(cfg.delta_root)  # not even the table of the good change


def test_idempotent_mode_quarantines_the_missing_row_and_applies_the_rest(spark, tmp_path):
    cfg = config(tmp_path, exec_mode="idempotent")
    a, _ = _sources()
    batch = [a.insert({"id": 1, "v": "x"}), a.delete({"id": 7}), a.update({"id": 1}, {"v": "w"})]
    counts = DeltaApplier(catalog_from_ddl(DDL), cfg)(changes_df(spark, batch), 0)
    assert rows_of(spark, cfg, "shop__a") == [(1, "w")]
    assert counts["shop.a"]["quarantined"] == 1
    (q,) = delta(spark, cfg, QUARANTINE).collect()
    assert (q["kind"], q["source"], q["binlog_file"], q["binlog_pos"], q["type_code"]) == \
        ("row_not_found", "src1", "mdb-bin.000002", 1150, 1032)
    assert "shop.a" in q["reason"] and "'id': '7'" in q["reason"]
    assert rows_of(spark, cfg, CHANGE_LOG, "op", "outcome") == [
        ("delete", "skipped_row_not_found"), ("insert", "applied"), ("update", "applied")]
    # batch 0 again (the first batch id is 0: "already committed" must not mean "> 0")
    again = DeltaApplier(catalog_from_ddl(DDL), cfg)(changes_df(spark, batch), 0)
    assert again["shop.a"]["already_applied"] == 1
    assert (delta(spark, cfg, QUARANTINE).count(), delta(spark, cfg, CHANGE_LOG).count()) == (1, 3)
    assert rows_of(spark, cfg, "shop__a") == [(1, "w")]


def test_statement_dml_quarantined_by_policy_and_undeclared_tables(spark, tmp_path):
    a, _ = _sources()
    ghost = Source("shop", "ghost", ["x"])
    stmt = a.change("statement", statement="UPDATE a SET v = 'q'")
    ddl = ghost.change("ddl", statement="CREATE TABLE ghost (x int)")
    row = ghost.insert({"x": 1})

    with pytest.raises(UndeclaredTableError, match="shop.ghost"):  # default: a configuration error
        DeltaApplier(catalog_from_ddl(DDL), config(tmp_path / "1"))(changes_df(spark, [row]), 0)
    with pytest.raises(ApplyStopped, match="WL#3303"):  # statement_format_policy=fail, on_statement=error
        DeltaApplier(catalog_from_ddl(DDL), config(tmp_path / "2"))(changes_df(spark, [stmt]), 0)

    cfg = config(tmp_path / "3", statement_format_policy="quarantine", undeclared_tables="quarantine")
    counts = DeltaApplier(catalog_from_ddl(DDL), cfg)(
        changes_df(spark, [stmt, ddl, row, a.insert({"id": 1})]), 0)
    assert counts["shop.ghost"] == {"ddl": 1, "insert": 1, "quarantined": 1}
    assert rows_of(spark, cfg, "shop__a") == [(1, None)]
    assert rows_of(spark, cfg, QUARANTINE, "kind") == [("statement_format",), ("undeclared_table",)]
    assert rows_of(spark, cfg, CHANGE_LOG, "table", "op", "outcome") == sorted([
        ("a", "statement", "quarantined_statement"), ("ghost", "ddl", "ddl_recorded"),
        ("ghost", "insert", "undeclared_table"), ("a", "insert", "applied")], key=repr)
    assert not os.path.exists(D.table_path(cfg.delta_root, "shop__ghost"))

"""libs/apply/plan.py (pure, no Spark): which rows a batch may touch, closure, progress, policies."""

import datetime as dt

import pytest

from libs.apply.plan import (
    Lookups, UndeclaredTableError, group_changes, lookups_for, missing_lookups, progress_rows, undeclared,
)
from libs.replay import replay

from .builders import Source, catalog_from_ddl

KEYED = ("CREATE TABLE d.t (id int NOT NULL, a int, b int, c varchar(3), PRIMARY KEY (id),"
         " UNIQUE KEY u (a, b))")


def test_lookups_use_keys_of_both_images_and_whole_before_images_only_without_a_key():
    target = catalog_from_ddl(KEYED).get("d", "t")
    src = Source("d", "t", ["id", "a", "b", "c"])
    lookups = lookups_for(target, [src.insert({"id": 1, "a": 1, "b": 2}), src.update({"id": 2}, {"id": 3}),
                                   src.insert({"id": 4, "a": None, "b": 2}),       # NULL never collides
                                   src.delete({"c": "x", "a": 5}),                  # no key: whole image
                                   src.change("ddl", statement="ALTER TABLE t")])
    assert lookups.by_key == {("id",): {(1,), (2,), (3,), (4,)}, ("a", "b"): {(1, 2)}}
    assert lookups.by_image == {("a", "c"): {(5, "x")}}


def test_missing_lookups_names_key_values_the_replay_produced_but_nobody_read():
    target = catalog_from_ddl(KEYED).get("d", "t")
    src = Source("d", "t", ["id", "a", "b", "c"])
    current = [{"id": 2, "a": 2, "b": 1, "c": None, "_row_id": "r2"}]
    changes = [src.update({"id": 2}, {"a": 1})]  # UNIQUE (a, b) moves to (1, 1): not in any image
    read = lookups_for(target, changes)
    more = missing_lookups(target, replay(target, current, changes), read)
    assert more.by_key == {("a", "b"): {(1, 1)}}
    read.merge(more)
    assert not missing_lookups(target, replay(target, current, changes), read)
    assert not Lookups()


def test_group_changes_restores_commit_order_per_table_and_progress_takes_the_last_transaction():
    src, other = Source("d", "t", ["id"]), Source("d", "u", ["id"])
    other.trx = 10
    changes = [src.insert({"id": 1}), other.insert({"id": 1}), src.insert({"id": 2}),
               src.insert({"id": 3}, seq=1, trx=3)]
    groups = group_changes(list(reversed(changes)))
    assert list(groups) == [("d", "t"), ("d", "u")]
    assert [(c.trx_id, c.change_seq) for c in groups[("d", "t")]] == \
        [("0-1-1", 0), ("0-1-2", 0), ("0-1-3", 1)]
    (row,) = progress_rows(changes, "job", 7)
    assert (row["trx_id"], row["trx_end_pos"], row["batch_id"], row["changes"]) == ("0-1-11", 2100, 7, 4)
    assert row["commit_ts"] == dt.datetime(2024, 5, 6, 7, 8, 20)


def test_undeclared_table_policy():
    src = Source("d", "ghost", ["id"])
    with pytest.raises(UndeclaredTableError, match=r"d\.ghost.*GTID 0-1-1"):
        undeclared(src.insert({"id": 1}), "fail")
    entry, error = undeclared(src.insert({"id": 1}), "quarantine")
    assert (entry.outcome, entry.delta_table, error.kind) == \
        ("undeclared_table", "d__ghost", "undeclared_table")
    entry, error = undeclared(Source("d", "", []).change("ddl", statement="DROP DATABASE d"), "fail")
    assert (entry.outcome, entry.delta_table, error) == ("ddl_recorded", "", None)


def test_progress_rows_carry_the_batch_heartbeat_and_an_idle_source_repeats_its_last_row():
    src = Source("d", "t", ["id"])
    changes = [src.insert({"id": 1})]
    previous = {"idle": {"app_id": "job", "source": "idle", "trx_id": "0-1-5", "gtid": "0-1-5",
                         "trx_file": "mdb-bin.000001", "trx_end_pos": 900,
                         "commit_ts": dt.datetime(2024, 5, 6), "batch_id": 3, "changes": 2,
                         "caught_up_as_of": dt.datetime(2024, 5, 6, 1)}}
    at = 1_714_957_200_000_000  # 2024-05-06 01:00:00 UTC in epoch micros
    rows = {r["source"]: r for r in progress_rows(changes, "job", 8, {changes[0].source: at, "idle": at + 1},
                                                  previous)}
    busy, idle = rows[changes[0].source], rows["idle"]
    assert (busy["trx_id"], busy["changes"], busy["caught_up_as_of"]) == (
        changes[0].trx_id, 1, dt.datetime(2024, 5, 6, 1))
    assert {k: idle[k] for k in ("trx_id", "trx_end_pos", "batch_id", "changes", "caught_up_as_of")} == {
        "trx_id": "0-1-5", "trx_end_pos": 900, "batch_id": 8, "changes": 0,
        "caught_up_as_of": dt.datetime(2024, 5, 6, 1, 0, 0, 1)}
    (plain,) = progress_rows(changes, "job", 9)
    assert plain["caught_up_as_of"] is None
    # a heartbeat of a source that never applied a transaction has nothing to name: no row
    assert progress_rows([], "job", 10, {"new": at}, previous) == []

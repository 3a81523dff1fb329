"""libs/apply/keyed_copy.py: the columnar copy of a big keyed target answers lookups as a Delta
read would (the brute-force filter of test_target_mirror.py), through the applier's own loop
(libs.apply.plan.replay_touched) with the copy as its only source of current rows, batch after
batch, reloaded from "Delta" whenever it gives up (MirrorOverflow), as KnownTargets does."""
from __future__ import annotations

import dataclasses

import pyarrow as pa
import pytest
from hypothesis import given, settings, strategies as st

from libs.apply.keyed_copy import KeyedCopy, NotAnswered, copy_key
from libs.apply.plan import Lookups, lookups_for, replay_touched
from libs.apply.target_mirror import MirrorOverflow
from libs.replay import LINEAGE_COLUMN, ROW_ID_COLUMN
from libs.targets.model import DELETE_SOFT, HISTORY_SCD2
from replay_builders import target_from_ddl
from test_target_mirror import brute_force, row
import test_replay_property as workload

SCHEMA = pa.schema([("id", pa.int32()), ("a", pa.int32()), ("b", pa.string()), ("c", pa.binary()),
                    (ROW_ID_COLUMN, pa.string())])


def copy_of(rows, version=1, max_overlay=1000, stored_at=None) -> KeyedCopy:
    """`stored_at`: row id -> (file, row index) of each row: a positioned copy."""
    full = [{"a": None, "b": None, "c": None, **r} for r in rows]
    table = pa.Table.from_pylist(full, schema=SCHEMA)
    positions = None
    if stored_at is not None:
        at = [stored_at[r[ROW_ID_COLUMN]] for r in full]
        positions = (pa.chunked_array([[f for f, _ in at]], pa.string()),
                     pa.chunked_array([[i for _, i in at]], pa.int64()))
    return KeyedCopy(table, "id", version, pa.Table.to_pylist, max_overlay, positions)


def ids(rows):
    return [r[ROW_ID_COLUMN] for r in rows]


def by_id(*keys) -> Lookups:
    return Lookups(by_key={("id",): {(k,) for k in keys}})


@pytest.mark.parametrize("ddl, key", [
    (workload.KEYED, "id"),                                                      # INT primary key
    ("CREATE TABLE d.t (id bigint NOT NULL PRIMARY KEY, a int)", "id"),
    ("CREATE TABLE d.t (id bigint unsigned NOT NULL PRIMARY KEY, a int)", None),  # a decimal(20,0) in Delta
    ("CREATE TABLE d.t (id varchar(8) NOT NULL PRIMARY KEY, a int)", None),      # not an integer
    ("CREATE TABLE d.t (id int NOT NULL, b int NOT NULL, PRIMARY KEY (id, b))", None),  # two columns
    ("CREATE TABLE d.t (id int NOT NULL PRIMARY KEY, u int, UNIQUE KEY (u))", None),   # a second enforced key
    (workload.KEYLESS, None),
])
def test_which_tables_get_a_copy(ddl, key):
    assert copy_key(target_from_ddl(ddl)) == key


@pytest.mark.parametrize("changed", [{"history": HISTORY_SCD2}, {"delete": DELETE_SOFT}])
def test_history_and_soft_delete_targets_get_no_copy(changed):
    assert copy_key(dataclasses.replace(target_from_ddl(workload.KEYED), **changed)) is None


def test_lookups_by_key_from_the_base_and_the_overlay_in_row_id_order():
    copy = copy_of([row("r3", id=30), row("r1", id=10), row("r2", id=20)])
    assert ids(copy.select(by_id(20, 10, 99))) == ["r1", "r2"]
    copy.apply([row("r4", id=40, a=1, b=None, c=None)], [], None)  # a new row
    assert copy.version is None and len(copy) == 4
    assert copy.select(by_id(40, 30)) == [{**row("r3", id=30), "a": None, "b": None, "c": None},
                                          row("r4", id=40, a=1, b=None, c=None)]


def test_a_changed_key_masks_the_base_row_and_a_delete_forgets_it():
    copy = copy_of([row("r1", id=1), row("r2", id=2)])
    copy.select(by_id(1, 2))  # the batch reads both before changing them
    copy.apply([{**row("r1", id=5, a=0, b=None, c=None), LINEAGE_COLUMN: {"gtid": "0-1-9"}}], ["r2"], 8)
    assert copy.select(by_id(1, 2)) == [] and len(copy) == 1
    assert copy.select(by_id(5)) == [row("r1", id=5, a=0, b=None, c=None)]  # no lineage kept
    copy.apply([row("r2b", id=2, a=1, b=None, c=None)], ["r1"], 9)  # the key again, a new row
    assert ids(copy.select(by_id(1, 2, 5))) == ["r2b"] and len(copy) == 1


@pytest.mark.parametrize("write", [
    lambda copy: copy.apply([row("r1", id=1, a=3, b=None, c=None)], [], 2),  # a stored row never read here
    lambda copy: copy.apply([], ["r1"], 2),
    lambda copy: copy.apply([row("x", id=1, a=3, b=None, c=None)], [], 2),  # a new row id over a stored key
    lambda copy: copy.apply([], [], 2, soft={"r1": {"_deleted": True}}),  # (r1 never read here)
    lambda copy: copy.apply([row(f"n{k}", id=100 + k, a=0, b=None, c=None) for k in range(3)], [], 2),
])
def test_what_the_copy_cannot_follow_raises_mirror_overflow(write):
    copy = copy_of([row("r1", id=1)], max_overlay=2)
    with pytest.raises(MirrorOverflow):
        write(copy)


@pytest.mark.parametrize("rows, message", [
    ([row("r1", id=1), row("r2", id=1)], "held twice"),
    ([row("r1", id=None)], "null keys"),
])
def test_a_table_the_key_does_not_identify_gets_no_copy(rows, message):
    with pytest.raises(MirrorOverflow, match=message):
        copy_of(rows)


def test_a_lookup_by_whole_image_is_not_answered():
    with pytest.raises(NotAnswered):
        copy_of([row("r1", id=1)]).select(Lookups(by_image={("a",): {(None,)}}))


@pytest.mark.parametrize("image", ["full", "minimal"])
@settings(max_examples=150, deadline=None)
@given(data=st.data())
def test_the_copy_answers_every_batch_as_the_whole_table_does(image, data):
    ops = data.draw(workload.operations(True), label="ops")
    cuts = data.draw(st.lists(st.integers(0, 60), max_size=4), label="batch cuts")
    max_overlay = data.draw(st.integers(1, 8), label="max overlay")
    target = target_from_ddl(workload.KEYED)
    master = workload.Master(True, image)
    for op in ops:
        master.apply(op)
    table: list[dict] = []  # what Delta holds after each batch's write
    copy = copy_of([], 0, max_overlay)
    bounds = sorted({0, len(master.log), *[c % (len(master.log) + 1) for c in cuts]})
    for version, (start, end) in enumerate(zip(bounds, bounds[1:]), start=1):
        batch = [change for trx in master.log[start:end] for change in trx]
        lookups = lookups_for(target, batch)
        assert not any(lookups.by_image.values())  # a keyed table's images name their key
        assert copy.select(lookups) == brute_force(table, lookups)
        result = replay_touched(target, batch, copy.select, mode="strict")
        table = result.final_table(table)
        try:
            copy.apply([{**w.values, ROW_ID_COLUMN: w.row_id} for w in result.upserts],
                       [d.row_id for d in result.deletes], version)
        except MirrorOverflow:  # given up: loaded again from the table at its new version
            copy = copy_of(table, version, max_overlay)
        assert copy.select(by_id(*range(-1, 7))) == brute_force(table, by_id(*range(-1, 7)))
        assert len(copy) == len(table)
    assert workload._content(table, master.columns) == workload._content(master.rows, master.columns)


def test_a_row_flagged_soft_deleted_leaves_every_lookup():
    copy = copy_of([row("r1", id=1), row("r2", id=2)])
    copy.select(by_id(1))
    copy.apply([], [], 3, soft={"r1": {"_deleted": True}})
    assert ids(copy.select(by_id(1, 2))) == ["r2"] and len(copy) == 1


def test_a_lookup_on_other_columns_than_the_key_is_not_answered():
    with pytest.raises(NotAnswered):
        copy_of([row("r1", id=1)]).select(Lookups(by_key={("id",): {(1,)}, ("a",): {(5,)}}))


def test_a_positioned_copy_says_where_each_row_it_handed_out_is_stored():
    stored_at = {"r3": ("f1", 0), "r1": ("f2", 4), "r2": ("f1", 1)}  # not in key order
    copy = copy_of([row("r3", id=30), row("r1", id=10), row("r2", id=20)], stored_at=stored_at)
    assert copy.positioned and not copy.positions_behind
    assert copy.position_of("r1") is None  # not handed out yet
    copy.select(by_id(10, 30))
    assert [copy.position_of(r) for r in ("r1", "r2", "r3")] == [("f2", 4), None, ("f1", 0)]
    plain = copy_of([row("r1", id=10)])
    plain.select(by_id(10))
    assert not plain.positioned and plain.position_of("r1") is None
    plain.apply([row("r1", id=10, a=1, b=None, c=None)], [], 2)
    assert not plain.positions_behind  # (no positions to fall behind)


def test_written_rows_are_behind_until_the_commit_places_exactly_them():
    copy = copy_of([row("r1", id=1), row("r2", id=2), row("r3", id=3)],
                   stored_at={"r1": ("f", 0), "r2": ("f", 1), "r3": ("f", 2)})
    copy.select(by_id(1, 2, 3))
    copy.apply([row("r1", id=1, a=5, b=None, c=None), row("r4", id=4, a=0, b=None, c=None)], ["r2"], None)
    assert copy.positions_behind and copy.position_of("r1") is None
    for wrong in (["r1"], ["r1", "r4", "r3"]):  # a row missing; a row the write did not write
        with pytest.raises(ValueError):
            copy.place(wrong, ["g"] * len(wrong), range(len(wrong)))
        assert copy.positions_behind
    copy.place(["r4", "r1"], ["g", "g"], [0, 1])
    assert not copy.positions_behind
    assert [copy.position_of(r) for r in ("r1", "r3", "r4")] == [("g", 1), ("f", 2), ("g", 0)]
    copy.apply([], ["r4"], None)  # deletes only: behind too (a MERGE would move every row of its files)
    assert copy.positions_behind and copy.position_of("r4") is None
    copy.place([], [], [])
    assert not copy.positions_behind and ids(copy.select(by_id(1, 3, 4))) == ["r1", "r3"]


@settings(max_examples=100, deadline=None)
@given(data=st.data())
def test_positions_follow_every_batch_as_the_commits_stored_the_rows(data):
    """Each batch's new images stored at fresh positions (as a DV commit appends them), the
    other rows where they were: every row the copy hands out is where the model says."""
    ops = data.draw(workload.operations(True), label="ops")
    cuts = data.draw(st.lists(st.integers(0, 60), max_size=4), label="batch cuts")
    max_overlay = data.draw(st.integers(1, 8), label="max overlay")
    target = target_from_ddl(workload.KEYED)
    master = workload.Master(True, "full")
    for op in ops:
        master.apply(op)
    table: list[dict] = []
    stored_at: dict[str, tuple[str, int]] = {}  # the model: row id -> where Delta holds it
    copy = copy_of([], 0, max_overlay, stored_at)
    bounds = sorted({0, len(master.log), *[c % (len(master.log) + 1) for c in cuts]})
    for version, (start, end) in enumerate(zip(bounds, bounds[1:]), start=1):
        batch = [change for trx in master.log[start:end] for change in trx]
        result = replay_touched(target, batch, copy.select, mode="strict")
        for handed_out in copy.select(by_id(*range(-1, 7))):
            assert copy.position_of(handed_out[ROW_ID_COLUMN]) == stored_at[handed_out[ROW_ID_COLUMN]]
        table = result.final_table(table)
        new = [w.row_id for w in result.upserts]
        for d in result.deletes:
            stored_at.pop(d.row_id)
        stored_at.update((row_id, (f"v{version}", i)) for i, row_id in enumerate(new))
        try:
            copy.apply([{**w.values, ROW_ID_COLUMN: w.row_id} for w in result.upserts],
                       [d.row_id for d in result.deletes], None)
            copy.place(new, [f"v{version}"] * len(new), range(len(new)))
            copy.version = version
        except MirrorOverflow:
            copy = copy_of(table, version, max_overlay, stored_at)

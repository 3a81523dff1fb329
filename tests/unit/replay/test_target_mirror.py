"""libs/apply/target_mirror.py: the driver-side copy of a target answers lookups as a Delta read would.

The reference for "as a Delta read would" is a brute-force filter of the whole table with the
read's semantics (a row matches when its values on a lookup's columns equal one of the tuples,
NULL equal to NULL for whole-image lookups); the property runs random workloads of the replay
property test (key-changing shifts included) batch by batch through the applier's own loop
(libs.apply.plan.replay_touched) with the mirror as its only source of current rows.
"""

from __future__ import annotations

from hypothesis import given, settings, strategies as st
import pytest

from libs.apply.plan import Lookups, lookups_for, replay_touched
from libs.replay import LINEAGE_COLUMN, ROW_ID_COLUMN
from libs.apply.target_mirror import MirrorOverflow, TargetMirror
from replay_builders import Source, target_from_ddl
import test_replay_property as workload


def brute_force(rows, lookups: Lookups):
    hits = {}
    for columns, tuples in (*lookups.by_key.items(), *lookups.by_image.items()):
        for row in rows:
            if tuple(row[c] for c in columns) in tuples:
                hits[row[ROW_ID_COLUMN]] = row
    return [hits[k] for k in sorted(hits)]


def row(row_id, **values):
    return {ROW_ID_COLUMN: row_id, **values}


def test_select_by_key_and_by_null_safe_image():
    mirror = TargetMirror([row("r1", id=1, a=None), row("r2", id=2, a=5), row("r3", id=3, a=None)], 7, 10)
    by_key = Lookups(by_key={("id",): {(2,), (9,)}})
    assert mirror.select(by_key) == [row("r2", id=2, a=5)]
    by_image = Lookups(by_image={("a",): {(None,)}})
    assert [r[ROW_ID_COLUMN] for r in mirror.select(by_image)] == ["r1", "r3"]
    both = Lookups(by_key={("id",): {(1,)}}, by_image={("a",): {(None,)}})
    assert [r[ROW_ID_COLUMN] for r in mirror.select(both)] == ["r1", "r3"]  # each row once


def test_apply_moves_index_entries_with_a_changed_key_and_forgets_deleted_rows():
    mirror = TargetMirror([row("r1", id=1, a=0), row("r2", id=2, a=0)], 3, 10)
    assert mirror.select(Lookups(by_key={("id",): {(1,)}}))  # builds the id index before the change
    mirror.apply([row("r1", id=5, a=0)], ["r2"], 4)
    assert mirror.version == 4 and len(mirror) == 1
    assert mirror.select(Lookups(by_key={("id",): {(1,), (2,)}})) == []
    assert mirror.select(Lookups(by_key={("id",): {(5,)}})) == [row("r1", id=5, a=0)]
    assert mirror.select(Lookups(by_image={("a",): {(0,)}})) == [row("r1", id=5, a=0)]


def test_lineage_is_kept_beside_the_row_for_whole_table_writes_not_returned_by_lookups():
    lineage = {"statement": "INSERT ...", "gtid": "0-1-1"}
    mirror = TargetMirror([{**row("r1", id=1), LINEAGE_COLUMN: lineage}, row("r2", id=2)], 3, 10)
    assert mirror.select(Lookups(by_key={("id",): {(1,)}})) == [row("r1", id=1)]
    changed = {"statement": "UPDATE ...", "gtid": "0-1-2"}
    mirror.apply([{**row("r2", id=2), LINEAGE_COLUMN: changed}, {**row("r3", id=3), LINEAGE_COLUMN: changed}],
                 ["r1"], None)
    assert mirror.version is None  # written, not committed yet
    assert mirror.whole_rows() == [{**row("r2", id=2), LINEAGE_COLUMN: changed},
                                   {**row("r3", id=3), LINEAGE_COLUMN: changed}]


def test_selected_rows_are_copies():
    mirror = TargetMirror([row("r1", id=1)], 1, 10)
    mirror.select(Lookups(by_key={("id",): {(1,)}}))[0]["id"] = 99
    assert mirror.select(Lookups(by_key={("id",): {(1,)}})) == [row("r1", id=1)]


def test_overflow_past_max_rows():
    with pytest.raises(MirrorOverflow):
        TargetMirror([row("r1"), row("r2")], 1, 1)
    mirror = TargetMirror([row("r1")], 1, 1)
    with pytest.raises(MirrorOverflow):
        mirror.apply([row("r2")], [], 2)


@pytest.mark.parametrize("image", ["full", "minimal"])
@pytest.mark.parametrize("keyed", [True, False], ids=["pk", "nokey"])
@settings(max_examples=150, deadline=None)
@given(data=st.data())
def test_mirror_answers_every_batch_as_the_whole_table_does(keyed, image, data):
    ops = data.draw(workload.operations(keyed), label="ops")
    cuts = data.draw(st.lists(st.integers(0, 60), max_size=4), label="batch cuts")
    target = target_from_ddl(workload.KEYED if keyed else workload.KEYLESS)
    master = workload.Master(keyed, image)
    for op in ops:
        master.apply(op)
    table: list[dict] = []  # what Delta holds after each batch's MERGE
    mirror = TargetMirror([], None, 1000)
    bounds = sorted({0, len(master.log), *[c % (len(master.log) + 1) for c in cuts]})
    for version, (start, end) in enumerate(zip(bounds, bounds[1:])):
        batch = [change for trx in master.log[start:end] for change in trx]
        lookups = lookups_for(target, batch)
        assert mirror.select(lookups) == brute_force(table, lookups)
        result = replay_touched(target, batch, mirror.select, mode="strict")
        table = result.final_table(table)
        mirror.apply([{**w.values, ROW_ID_COLUMN: w.row_id} for w in result.upserts],
                     [d.row_id for d in result.deletes], version)
        assert sorted(mirror.select(Lookups(by_image={(ROW_ID_COLUMN,):
                                                      {(r[ROW_ID_COLUMN],) for r in table}})),
                      key=lambda r: r[ROW_ID_COLUMN]) == sorted(table, key=lambda r: r[ROW_ID_COLUMN])
        assert len(mirror) == len(table)
    assert workload._content(table, master.columns) == workload._content(master.rows, master.columns)


def test_replay_touched_reads_key_values_the_first_replay_produced():
    # A minimal UPDATE of one column of a composite UNIQUE key moves the row onto (1, 2), a key
    # value no image names: the second read finds the row holding it (1062 in strict mode).
    target = target_from_ddl("CREATE TABLE test.u (id int NOT NULL, a int NOT NULL, b int NOT NULL, "
                             "PRIMARY KEY (id), UNIQUE KEY ab (a, b))")
    src = Source("test", "u", ["id", "a", "b"])
    table = [row("r1", id=1, a=1, b=1), row("r2", id=2, a=1, b=2)]
    reads = []

    def read(lookups):
        reads.append(lookups)
        return brute_force(table, lookups)

    from libs.replay import ReplayStopped
    with pytest.raises(ReplayStopped) as stopped:
        replay_touched(target, [src.update({"id": 1}, {"b": 2})], read, mode="strict")
    assert stopped.value.error.code == 1062
    assert len(reads) == 2 and reads[1].by_key == {("a", "b"): {(1, 2)}}

"""libs/apply/fold.py: the fold gives what the exact replay gives (table, change log, deleted
rows' lineage), and folds what it can prove safe while leaving the rest to the replay: one row
of the table per rule, then random workloads (hypothesis) with every image format."""
from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

from libs.replay import ReplayStopped
from libs.replay.json_diff import encode_json_diff
from tests.change_builders import Source
from tests.unit.apply.fold_harness import by_fold, by_replay
from tests.unit.replay.replay_builders import rows, target_from_ddl

DDL = ("CREATE TABLE d.t (id int NOT NULL, a int NOT NULL DEFAULT 7, b varchar(9) DEFAULT 'z', "
       "c int NOT NULL, ts timestamp(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6), j json, PRIMARY KEY (id))")
COLUMNS = ["id", "a", "b", "c", "ts", "j"]
STORED = ((1, 10, "one", 100, None, None), (2, 20, "two", 200, None, None))


def _target(ddl: str = DDL):
    return target_from_ddl(ddl)


def _stored(target):
    import datetime as dt
    ts = dt.datetime(2024, 1, 1)
    return rows(target, *((*r[:4], ts, None) for r in STORED))


src = Source("d", "t", COLUMNS)

# name, changes (a function of a fresh Source), (folded changes, replayed changes)
CASES = [
    ("minimal updates merge over the stored row",
     lambda s: [s.update({"id": 1}, {"id": 1, "a": 11}), s.update({"id": 1}, {"id": 1, "b": "uno"})], (2, 0)),
    ("an insert takes the target's defaults, CURRENT_TIMESTAMP at its commit",
     lambda s: [s.insert({"id": 3, "c": 300})], (1, 0)),
    ("insert, update, delete of one key: nothing stored, nothing to delete",
     lambda s: [s.insert({"id": 3, "c": 3}), s.update({"id": 3}, {"id": 3, "a": 4}),
                s.delete({"id": 3})], (3, 0)),
    ("a stored row deleted and its key inserted again: a new row identity",
     lambda s: [s.delete({"id": 1}), s.insert({"id": 1, "c": 5}),
                s.update({"id": 1}, {"id": 1, "b": "x"})], (3, 0)),
    ("NULL for a NOT NULL column: its default at that change (1048)",
     lambda s: [s.update({"id": 2}, {"id": 2, "a": None}), s.insert({"id": 4, "c": None})], (2, 0)),
    ("full images find the row by its key",
     lambda s: [s.update({"id": 1, "a": 10, "b": "one", "c": 100},
                         {"id": 1, "a": 10, "b": "ONE", "c": 100})], (1, 0)),
    ("an update of a missing row (1032) goes to the replay, the other key folds",
     lambda s: [s.update({"id": 9}, {"id": 9, "a": 1}), s.update({"id": 1}, {"id": 1, "a": 2})], (1, 1)),
    ("an insert on a stored row (1062) goes to the replay with the key's other changes",
     lambda s: [s.update({"id": 1}, {"id": 1, "a": 2}), s.insert({"id": 1, "c": 1}),
                s.delete({"id": 2})], (1, 2)),
    ("a key-changing update: both keys to the replay",
     lambda s: [s.insert({"id": 5, "c": 5}), s.update({"id": 1}, {"id": 5, "a": 3}),
                s.delete({"id": 2})], (1, 2)),
    ("a key-changing update onto a stored key no other change names (1062): the replay sees that row",
     lambda s: [s.update({"id": 1}, {"id": 2}), s.update({"id": 1}, {"id": 1, "a": 5}),
                s.insert({"id": 9, "c": 1})], (1, 2)),
    ("a key-changing update onto a fresh key, then that key changed again",
     lambda s: [s.update({"id": 1}, {"id": 6}), s.update({"id": 6}, {"id": 6, "a": 1}),
                s.update({"id": 2}, {"id": 2, "b": "q"})], (1, 2)),
    ("deletes of stored rows carry the deleting change's lineage",
     lambda s: [s.update({"id": 2}, {"id": 2, "c": 12}), s.delete({"id": 2}), s.delete({"id": 1})], (3, 0)),
    ("a JSON diff applies to the stored document: the replay",
     lambda s: [s.update({"id": 1},
                         {"id": 1, "j": encode_json_diff([{"op": "replace", "path": "$.a", "value": 1}])}),
                s.update({"id": 2}, {"id": 2, "j": '{"k": 1}'})], (1, 1)),
    ("snapshot rows, one key twice: the later replaces the earlier",
     lambda s: [s.change("snapshot", None, {"id": 5, "a": 1, "c": 1}),
                s.change("snapshot", None, {"id": 6, "c": 2}),
                s.change("snapshot", None, {"id": 5, "a": 2, "c": 3}),
                s.update({"id": 6}, {"id": 6, "b": "u"})], (4, 0)),
    ("a snapshot row of a stored key goes to the replay",
     lambda s: [s.change("snapshot", None, {"id": 1, "c": 1}),
                s.change("snapshot", None, {"id": 7, "c": 2})], (1, 1)),
    ("an image without the key: the whole table to the replay",
     lambda s: [s.update({"a": 10}, {"a": 11}), s.update({"id": 2}, {"id": 2, "a": 1})], (0, 2)),
]


@pytest.mark.parametrize("name, make, split", CASES, ids=[c[0] for c in CASES])
def test_fold_equals_the_replay(name, make, split):
    target = _target()
    stored = _stored(target)
    changes = make(Source("d", "t", COLUMNS))
    mode = "idempotent"  # the replay's part must not stop the comparison
    table, log, deleted, folded = by_fold(target, changes, stored, mode)
    assert (table, log, deleted) == by_replay(target, changes, stored, mode)
    assert (len(folded.log.at), len(folded.rest)) == split


def test_a_bad_value_reaches_the_replay_which_stops_the_batch():
    target = _target()
    changes = [src.update({"id": 1}, {"id": 1, "a": "eleven"}), src.update({"id": 2}, {"id": 2, "a": 1})]
    with pytest.raises(ReplayStopped):
        by_replay(target, changes, _stored(target))
    with pytest.raises(ReplayStopped):
        by_fold(target, changes, _stored(target))


@pytest.mark.parametrize("ddl", [
    "CREATE TABLE d.t (id int NOT NULL, a int, PRIMARY KEY (id), UNIQUE KEY u (a))",  # a 1062 across rows
    "CREATE TABLE d.t (id int, a int)",  # keyless
])
def test_tables_the_fold_leaves_whole_to_the_replay(ddl):
    target = _target(ddl)
    s = Source("d", "t", ["id", "a"])
    changes = [s.insert({"id": 1, "a": 1}), s.update({"id": 1}, {"id": 1, "a": 2})]
    table, log, deleted, folded = by_fold(target, changes, [])
    assert (table, log, deleted) == by_replay(target, changes, [])
    assert len(folded.log.at) == 0 and len(folded.rest) == 2


# -- random workloads: a small master applies them and logs its images --------------------------

KEYED = ("CREATE TABLE d.t (id int NOT NULL, a int DEFAULT 7, b varchar(3) DEFAULT 'z', c blob, "
         "PRIMARY KEY (id))")
BLOBS = {"c"}
values = {"a": st.sampled_from([None, 0, 1]), "b": st.sampled_from([None, "x", "y"]),
          "c": st.sampled_from([None, b"", b"\x01"])}
operation = st.one_of(
    st.tuples(st.just("insert"), st.integers(0, 6), st.fixed_dictionaries({}, optional=values)),
    st.tuples(st.just("update"), st.integers(0, 6), st.fixed_dictionaries({}, optional=values)),
    st.tuples(st.just("delete"), st.integers(0, 6), st.just({})),
    st.tuples(st.just("move"), st.integers(0, 6), st.integers(0, 6)),
)


def _master_log(ops, image: str, stored: dict[int, dict]):
    """Each operation as the master logs it (invalid ones, as InnoDB refuses them, logged
    anyway half the time: the fold must leave such keys to the replay)."""
    s = Source("d", "t", ["id", "a", "b", "c"])
    rows_now = {k: dict(v) for k, v in stored.items()}
    defaults = {"a": 7, "b": "z", "c": None}

    def before(row):
        if image == "full":
            return dict(row)
        return {"id": row["id"]} if image == "minimal" else {k: v for k, v in row.items() if k not in BLOBS}

    def after(row, set_):
        if image == "full":
            return dict(row)
        shown = {"id": row["id"], **{k: row[k] for k in set_}} if image == "minimal" else \
            {**{k: v for k, v in row.items() if k not in BLOBS}, **{k: row[k] for k in set_}}
        return shown

    log = []
    for op, key, arg in ops:
        if op == "insert" and key not in rows_now:
            rows_now[key] = {"id": key, **defaults, **arg}
            log.append(s.insert(after(rows_now[key], arg) if image != "full" else rows_now[key]))
        elif op == "update" and key in rows_now and arg:
            old = dict(rows_now[key])
            rows_now[key].update(arg)
            log.append(s.update(before(old), after(rows_now[key], arg)))
        elif op == "delete" and key in rows_now:
            log.append(s.delete(before(rows_now.pop(key))))
        elif op == "move" and key in rows_now and arg not in rows_now:
            old = rows_now.pop(key)
            rows_now[arg] = {**old, "id": arg}
            log.append(s.update(before(old), after(rows_now[arg], ["id"])))
        elif op == "move" and key in rows_now and arg != key and len(log) % 2:  # onto a live key (1062)
            log.append(s.update(before(rows_now[key]), after({**rows_now[key], "id": arg}, ["id"])))
        elif op in ("insert", "update", "delete") and len(log) % 2:  # refused by the master: logged anyway
            log.append(s.insert({"id": key, **arg}) if op == "insert" else
                       s.update({"id": key}, {"id": key, **arg}) if op == "update" else s.delete({"id": key}))
    return log


@settings(max_examples=300, deadline=None)
@given(ops=st.lists(operation, max_size=30), image=st.sampled_from(["full", "noblob", "minimal"]),
       stored_keys=st.sets(st.integers(0, 6), max_size=4))
def test_random_workloads_fold_as_they_replay(ops, image, stored_keys):
    target = _target(KEYED)
    stored = {k: {"id": k, "a": k, "b": "s", "c": b"\x02"} for k in sorted(stored_keys)}
    stored_rows = rows(target, *((r["id"], r["a"], r["b"], r["c"]) for r in stored.values()))
    changes = _master_log(ops, image, stored)
    table, log, deleted, folded = by_fold(target, changes, stored_rows, "idempotent")
    assert (table, log, deleted) == by_replay(target, changes, stored_rows, "idempotent")
    assert len(folded.log.at) + len(folded.rest) == len(changes)

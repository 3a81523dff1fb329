"""libs/apply/partition.py: which changes the executors may replay apart (issue #21 goal 1).
The property that matters: replaying each group alone on its own rows gives the table that
replaying the whole batch gives."""

import random

import pytest

from libs.apply.partition import (
    change_keys, components, executor_eligible, key_text, snapshot_rows_eligible, split_key,
)
from libs.replay import replay
from tests.change_builders import Source
from tests.unit.replay.replay_builders import rows, target_from_ddl

PK = "CREATE TABLE d.t (id int NOT NULL, v varchar(5), PRIMARY KEY (id))"


@pytest.mark.parametrize("ddl, key", [
    (PK, ("id",)),
    ("CREATE TABLE d.t (id int NOT NULL, v varchar(5), UNIQUE KEY u (id))",
     ("id",)),  # NOT NULL UK: a lookup key
    ("CREATE TABLE d.t (id int, v varchar(5), UNIQUE KEY u (id))", None),  # nullable UK: rows found by image
    ("CREATE TABLE d.t (id int NOT NULL, v varchar(5), PRIMARY KEY (id), UNIQUE KEY u (v))",
     None),  # 1062 on v
    ("CREATE TABLE d.t (id int, v varchar(5))", None),  # keyless
    ("CREATE TABLE d.t (a int NOT NULL, b int NOT NULL, PRIMARY KEY (a, b))", ("a", "b")),
])
def test_split_key(ddl, key):
    assert split_key(target_from_ddl(ddl)) == key


@pytest.mark.parametrize("op, before, after, keys", [
    ("insert", None, {"id": 1, "v": "x"}, (None, (1,))),
    ("delete", {"id": 2}, None, ((2,), None)),
    ("update", {"id": 3}, {"v": "y"}, ((3,), (3,))),          # minimal after image: the key stays
    ("update", {"id": 3, "v": "x"}, {"id": 4, "v": "x"}, ((3,), (4,))),  # a key-changing UPDATE
    ("update", {"v": "x"}, {"v": "y"}, (None, None)),         # no key in the before image
    ("update", {"id": "nope"}, {"v": "y"}, (None, None)),     # a value that does not convert
    ("insert", None, {"id": None}, (None, None)),             # NULL is no key
])
def test_change_keys(op, before, after, keys):
    target = target_from_ddl(PK)
    assert change_keys(target, ("id",), Source("d", "t", ["id", "v"]).change(op, before, after)) == keys


def test_components_join_chains_and_pick_the_least_key():
    assert components([("b", "c"), ("x", "y"), ("c", "a")]) == {
        "a": "a", "b": "a", "c": "a", "x": "x", "y": "x"}
    assert components([]) == {}


@pytest.mark.parametrize("ops, n, minimum, ddl, eligible", [
    ({"insert": 5, "update": 5}, 10, 10, False, True),
    ({"insert": 5, "update": 4}, 9, 10, False, False),   # under the threshold
    ({"insert": 5}, 5, 0, True, False),                  # a DDL somewhere in the batch
    ({"insert": 5, "statement": 1}, 6, 0, False, False),  # WL#3303 decisions stay on the driver
    ({"insert": 5}, 5, None, False, False),              # null: never
])
def test_executor_eligible(ops, n, minimum, ddl, eligible):
    assert executor_eligible(ops, n, minimum, ddl) is eligible


@pytest.mark.parametrize("ops, minimum, batch_ops, eligible", [
    ({"snapshot": 10}, 10, {"snapshot", "insert"}, True),        # a later chunk's rows
    ({"truncate": 1, "snapshot": 10}, 10, {"truncate", "snapshot"}, True),  # the run's start too
    ({"snapshot": 9}, 10, {"snapshot"}, False),                   # under the threshold
    ({"snapshot": 10, "insert": 1}, 10, {"snapshot", "insert"}, False),  # binlog changes of it
    ({"snapshot": 10}, 10, {"snapshot", "ddl"}, False),           # a DDL in the batch
    ({"truncate": 1}, 0, {"truncate"}, False),                    # no rows
    ({"snapshot": 10}, None, {"snapshot"}, False),                # null: never
])
def test_snapshot_rows_eligible(ops, minimum, batch_ops, eligible):
    assert snapshot_rows_eligible(ops, minimum, batch_ops) is eligible


@pytest.mark.parametrize("seed", range(20))
def test_groups_replayed_apart_give_the_whole_batch_replay(seed):
    """Random inserts, updates, deletes and key-changing updates on a PK table: each group of
    components(...) replayed alone on the rows its keys name gives, together, the same rows
    (values and _row_id) as one replay of the batch."""
    rng = random.Random(seed)
    target = target_from_ddl(PK)
    src = Source("d", "t", ["id", "v"])
    current = rows(target, *((i, f"v{i}") for i in range(0, 20, 2)))
    live = {r["id"] for r in current}
    changes = []
    for _ in range(40):
        free = [i for i in range(25) if i not in live]
        roll = rng.random()
        if roll < 0.3 and free:
            new = rng.choice(free)
            live.add(new)
            changes.append(src.insert({"id": new, "v": "n"}))
        elif live and roll < 0.6:
            changes.append(src.update({"id": rng.choice(sorted(live))}, {"v": f"u{rng.randrange(9)}"}))
        elif live and roll < 0.8 and free:
            old, new = rng.choice(sorted(live)), rng.choice(free)
            live.discard(old)
            live.add(new)
            changes.append(src.update({"id": old}, {"id": new}))
        elif live:
            old = rng.choice(sorted(live))
            live.discard(old)
            changes.append(src.delete({"id": old}))
    whole = replay(target, current, changes).final_table(current)

    keys = [change_keys(target, ("id",), c) for c in changes]
    root = components((key_text(b), key_text(a)) for b, a in keys if b and a and b != a)
    group_of = lambda k: root.get(key_text(k), key_text(k))  # noqa: E731
    groups: dict[str, list] = {}
    for change, (b, a) in zip(changes, keys):
        groups.setdefault(group_of(b or a), []).append(change)
    apart = [r for r in current if not any(group_of((r["id"],)) == g for g in groups)]
    for g, part in groups.items():
        mine = [r for r in current if group_of((r["id"],)) == g]
        apart += replay(target, mine, part).final_table(mine)
    assert sorted(apart, key=lambda r: r["_row_id"]) == sorted(whole, key=lambda r: r["_row_id"])
    assert len(groups) > 1

"""libs/apply/maintenance.py: when a table is compacted or vacuumed, and how many per batch
(tables given by their Delta version: commits since the last compaction trigger it)."""
from libs.apply.maintenance import OPTIMIZE, OPTIMIZE_WIDE, VACUUM, MaintenancePlanner, MaintenancePolicy


def planner(min_commits=10, every=100.0, per_batch=1):
    return MaintenancePlanner(MaintenancePolicy(min_commits, every, per_batch))


def test_a_table_is_compacted_once_it_has_enough_commits_since_it_was_first_seen():
    p = planner()
    assert p.due({"t": 500}, now=0) == []  # first seen at version 500: the baseline, not a trigger
    assert p.due({"t": 509}, now=1) == []
    assert p.due({"t": 510}, now=2) == [("t", OPTIMIZE)]
    p.done("t", OPTIMIZE, version_after=3, now=3)
    assert p.due({"t": 12}, now=4) == []  # 9 commits since the compaction
    assert p.due({"t": 13}, now=5) == [("t", OPTIMIZE)]


def test_vacuum_comes_every_interval_per_table():
    p = planner(min_commits=0, every=100.0)  # 0: never compact
    assert p.due({"t": 1}, now=0) == []
    assert p.due({"t": 999}, now=99) == []
    assert p.due({"t": 999}, now=100) == [("t", VACUUM)]
    p.done("t", VACUUM, version_after=999, now=100)
    assert p.due({"t": 999}, now=150) == []


def test_never_vacuum_and_never_compact():
    p = planner(min_commits=0, every=None)
    p.due({"t": 1}, now=0)
    assert p.due({"t": 10_000}, now=10 ** 9) == []


def test_at_most_per_batch_operations_the_table_furthest_past_its_trigger_first():
    p = planner(min_commits=10, every=None, per_batch=1)
    p.due({"a": 0, "b": 0, "c": 0}, now=0)
    assert p.due({"a": 12, "b": 35, "c": 3}, now=1) == [("b", OPTIMIZE)]
    p.done("b", OPTIMIZE, version_after=1, now=1)
    assert p.due({"a": 12, "b": 2, "c": 3}, now=2) == [("a", OPTIMIZE)]
    two = planner(min_commits=10, every=None, per_batch=2)
    two.due({"a": 0, "b": 0, "c": 0}, now=0)
    assert two.due({"a": 12, "b": 35, "c": 30}, now=1) == [("b", OPTIMIZE), ("c", OPTIMIZE)]


def test_a_table_made_anew_counts_from_its_new_version():
    p = planner(min_commits=10)
    p.due({"t": 100}, now=0)
    assert p.due({"t": 4}, now=1) == []  # dropped and created again: version 4
    assert p.due({"t": 14}, now=2) == [("t", OPTIMIZE)]


def test_every_wide_every_th_compaction_of_a_table_is_wide():
    p = MaintenancePlanner(MaintenancePolicy(10, None, 2, wide_every=3))
    p.due({"a": 0, "b": 0}, now=0)
    ops = []
    for k in range(1, 8):  # a compacted 7 times, b once in between
        due = p.due({"a": 10 * k, **({"b": 10} if k == 4 else {})}, now=k)
        ops += due
        for table, op in due:
            p.done(table, op, version_after=10 * k if table == "a" else 10, now=k)
    assert [op for t, op in ops if t == "a"] == [OPTIMIZE, OPTIMIZE, OPTIMIZE_WIDE, OPTIMIZE, OPTIMIZE,
                                                OPTIMIZE_WIDE, OPTIMIZE]
    assert [op for t, op in ops if t == "b"] == [OPTIMIZE]  # counted per table

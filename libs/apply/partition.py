"""Which changes of a batch the executors may replay apart (issue #21 goal 1). Pure: the
Spark stage (pipelines/apply/executor_replay.py) asks these per change and per batch.

The seeds' rules are about one row identity: its changes apply in commit order, and a change
finds its row by key (WL#5092 find_row; libs/apply/plan.py "Touched rows"). Changes that can
never touch the same row may replay in different tasks. That is provable here only for a
target whose ONE enforced key is also a lookup key (a PRIMARY KEY, or a NOT NULL UNIQUE key
with no other UNIQUE key): every row change then names its row by that key's value, before
and after, and two changes interact exactly when their key values meet.

    split_key(target)                    the key the target's changes split by, or None
    change_keys(target, key, change)     (before, after) key values of one change, as text
    components(edges)                    key -> the key standing for its group
    executor_eligible(...)               does a table's part of the batch go to the executors
    snapshot_rows_eligible(...)          do a table's snapshot rows go to them, as new rows

A key-changing UPDATE joins its before and after key into one group (`components`, a
union-find over the batch's few such updates). A change without a whole key (a target keyed
differently from the source, a value that does not convert) sends the whole table's part of
the batch to one group: still on an executor, still exact, just not split.
"""
from __future__ import annotations

from typing import Any, Iterable, Mapping, Sequence

from libs.contracts.change import ROW_OPS, Change, Op
from libs.replay.images import present_columns, typed_key
from libs.targets.model import Target


def split_key(target: Target) -> tuple[str, ...] | None:
    """The target's only enforced key when it is a lookup key; None when rows cannot be told
    apart by one key (no key: keyless rows match by whole image; two UNIQUE keys: an insert
    can collide with another row on the second one, error 1062)."""
    keys = target.enforced_keys
    if len(keys) == 1 and keys[0] in target.lookup_keys:
        return keys[0]
    return None


def key_text(values: Sequence[Any]) -> str:
    """One key value as text, equal for equal typed values (libs/replay typed values: int, str,
    Decimal at the column's scale, naive UTC datetime, bytes): repr is deterministic across
    processes, where hash() of a str is not."""
    return repr(tuple(values))


def change_keys(target: Target, key: Sequence[str], change: Change) -> tuple[tuple | None, tuple | None]:
    """(before, after) values of `key` in one row change, as the replay types them; None where
    the image does not hold the whole key (an insert has no before; a delete no after; a
    minimal UPDATE's after image without key columns leaves the key as it was)."""
    op = change.op
    before = _key_of(target, key, change.before) if op != Op.INSERT else None
    after = _key_of(target, key, change.after) if op != Op.DELETE else None
    if op == Op.UPDATE and after is None:
        after = before
    return before, after


def _key_of(target: Target, key: Sequence[str], image) -> tuple | None:
    """The image's values of `key`, typed only for those columns (the replay types the rest)."""
    return typed_key(key, present_columns(target, image))


def components(edges: Iterable[tuple[str, str]]) -> dict[str, str]:
    """Union-find over key pairs (a key-changing UPDATE's before and after): every key that
    occurs -> the least key of its connected group, so the grouping is deterministic."""
    parent: dict[str, str] = {}

    def find(k: str) -> str:
        parent.setdefault(k, k)
        while parent[k] != k:
            parent[k] = parent[parent[k]]
            k = parent[k]
        return k

    for a, b in edges:
        ra, rb = find(a), find(b)
        if ra != rb:
            parent[max(ra, rb)] = min(ra, rb)
    return {k: find(k) for k in parent}


def executor_eligible(ops: Iterable[str], changes: int, min_changes: int | None, batch_has_ddl: bool) -> bool:
    """A declared, selected table's part of the batch replays on the executors when it holds at
    least `min_changes` changes (JobConfig.executor_apply_min_changes; None: never) and only row
    changes, in a batch without DDL, truncate, snapshot or statement changes anywhere: those
    carry table-wide decisions (schema evolution, renames, a table made anew, WL#3303) that the
    driver's replay takes, and they are rare."""
    return min_changes is not None and changes >= min_changes and not batch_has_ddl and set(ops) <= ROW_OPS


def snapshot_rows_eligible(ops: Mapping[str, int], min_changes: int | None, batch_ops: Iterable[str]) -> bool:
    """A table's snapshot rows (issue #37 item 3) are made target rows on the executors and
    written as new rows, nothing collected, when they are at least `min_changes` and all the
    table has in the batch besides them is its snapshot's start (`truncate`, which stays on the
    driver: it versions the schema and makes the table anew). A snapshot row needs no stored
    row: its table was emptied when the run started, and a run reads each key once
    (libs/snapshot/changes.py). A DDL anywhere in the batch keeps them on the driver: a rename
    onto the table, or a later ALTER, changes what its rows are (batch_ddl.py)."""
    return (min_changes is not None and ops.get(Op.SNAPSHOT, 0) >= max(min_changes, 1)
            and set(ops) <= {Op.SNAPSHOT, Op.TRUNCATE} and Op.DDL not in set(batch_ops))

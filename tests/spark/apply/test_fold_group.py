"""The executors' group replay (pipelines/apply/executor_replay.ReplayGroup) with the fold on and
off gives the same output frame: MERGE rows, change log, quarantine; and with the fold on, the
per-change replay only sees what the fold leaves. Run in the driver process on Arrow tables
(no Spark job): the Spark-typed schemas are the ones the executors use."""
from __future__ import annotations

import random

import pyarrow as pa
import pyarrow.compute  # noqa: F401 - pa.compute.sum
import pytest

import pipelines.apply.executor_replay as executor_replay
from libs.apply.partition import change_keys, split_key
from pipelines.apply.executor_replay import FOLDED, LOG, QUARANTINED, REPLAYED, ReplayGroup
from tests.change_builders import Source
from tests.unit.apply.fold_harness import changes_table

from .builders import catalog_from_ddl

pytestmark = pytest.mark.spark

DDL = ("CREATE TABLE shop.a (id int NOT NULL, v varchar(10), n int NOT NULL DEFAULT 3, "
       "at datetime(6) DEFAULT CURRENT_TIMESTAMP(6), PRIMARY KEY (id))")


def _workload(seed: int) -> tuple[list[dict], list[dict]]:
    """(stored rows, 300 minimal-image changes) with every shape the fold meets: updates,
    deletes and re-inserts of stored keys, new keys, a few key changes and a 1032."""
    rng = random.Random(seed)
    s = Source("shop", "a", ["id", "v", "n", "at"])
    stored = [{"id": i, "v": f"s{i}", "n": i, "at": None, "_row_id": f"r{i}"} for i in range(0, 40, 2)]
    live = {r["id"] for r in stored}
    changes = []
    for _ in range(300):
        roll = rng.random()
        if roll < 0.3:
            key = rng.choice([i for i in range(60) if i not in live])
            live.add(key)
            changes.append(s.insert({"id": key, "v": rng.choice(["x", None])}))
        elif roll < 0.75 and live:
            key = rng.choice(sorted(live))
            changes.append(s.update({"id": key},
                                    {"id": key, rng.choice(["v", "n"]): rng.choice([1, 2, None])}))
        elif roll < 0.95 and live:
            key = rng.choice(sorted(live))
            live.discard(key)
            changes.append(s.delete({"id": key}))
        elif live:
            key = rng.choice(sorted(live))
            free = rng.choice([i for i in range(60, 90) if i not in live])
            live.discard(key)
            live.add(free)
            changes.append(s.update({"id": key}, {"id": free}))
    changes.append(s.update({"id": 999}, {"id": 999, "v": "q"}))  # no such row: 1032, quarantined
    return stored, changes


def _sorted(table: pa.Table) -> list:
    """Rows in a stable order, without the time a quarantine row was made. All-null rows go: an
    output row may hold a MERGE row and a change-log entry side by side (ReplayGroup._beside),
    so a projection of either part has null rows where the other was longer."""
    rows = [r for r in table.to_pylist() if any(v is not None for v in r.values())]
    for row in rows:
        if row.get(QUARANTINED):
            row[QUARANTINED].pop("quarantined_at")
    return sorted(rows, key=repr)


@pytest.mark.parametrize("seed", [1, 2])
def test_the_fold_gives_the_replays_output(seed, monkeypatch):
    target = catalog_from_ddl(DDL).get("shop", "a")
    stored, changes = _workload(seed)
    out = {}
    replayed = {}
    real = executor_replay.replay_touched
    for fold in (False, True):
        group = ReplayGroup(target, "idempotent", 7, {}, fold=fold)
        stored_table = pa.Table.from_pylist(stored, schema=pa.schema(
            [group.schema.field(n) for n in (*target.column_names, "_row_id")]))
        seen = []
        monkeypatch.setattr(executor_replay, "replay_touched",
                            lambda t, rows, read, mode:
                                seen.append(len(rows)) or real(t, rows, read, mode=mode))
        out[fold] = group.replay_records(changes_table(changes), stored_table)
        replayed[fold] = sum(seen)
    how = {fold: {c: pa.compute.sum(out[fold][c]).as_py() for c in (FOLDED, REPLAYED)} for fold in out}
    assert how[False] == {FOLDED: 0, REPLAYED: len(changes)}  # what the job's metrics count
    assert how[True] == {FOLDED: len(changes) - replayed[True], REPLAYED: replayed[True]}
    merge = [f.name for f in group.schema if f.name not in (LOG, FOLDED, REPLAYED)]
    assert _sorted(out[True].select(merge)) == _sorted(out[False].select(merge))
    assert _sorted(out[True].select([LOG]).filter(out[True][LOG].is_valid())) == \
        _sorted(out[False].select([LOG]).filter(out[False][LOG].is_valid()))
    assert replayed[False] == len(changes)
    assert 0 < replayed[True] < len(changes) / 2  # the key changes' and the 1032's keys only


def test_the_key_pass_reads_keys_as_the_replay_types_them():
    """KeyChanges reads the images column by column; each change's (before, after) key is what
    libs/apply/partition.change_keys gives (a key change, a minimal update, NULL and bad keys)."""
    target = catalog_from_ddl(DDL).get("shop", "a")
    _, changes = _workload(3)
    s = Source("shop", "a", ["id", "v", "n", "at"])
    changes += [s.update({"id": 1}, {"id": 2, "v": "m"}), s.update({"id": 4}, {"v": "m"}),
                s.insert({"id": None}), s.delete({"id": "x"}), s.update({"v": "no key"}, {"v": "y"})]
    key = split_key(target)
    key_type = executor_replay.key_schema(target, key)
    batch = changes_table(changes).to_batches()[0]
    got = list(executor_replay.KeyChanges(target, key, key_type)._keys(batch))
    assert got == [change_keys(target, key, c) for c in changes]
    assert sum(b != a for b, a in got if b and a) >= 2  # key changes were among them

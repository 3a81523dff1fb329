"""The executors' replay (pipelines/apply/executor_replay.py, issue #21 goal 1) gives what the
driver's replay gives: the same batches through DeltaApplier with executor_apply_min_changes
None (driver) and 0 (every table that can goes to the executors) leave equal target tables
(_row_id and lineage included), change logs, quarantines and progress."""

import os
import random

from collections import Counter

import pytest

from libs.tables.system_tables import CHANGE_LOG, PROGRESS, QUARANTINE
from pipelines.apply import ApplyStopped, DeltaApplier
from pipelines.apply.applier import DeltaApplier as _Applier
from tests.drawn import drawn_seed

from .builders import Source, catalog_from_ddl, changes_df, config, delta, rows_of, version

pytestmark = pytest.mark.spark

DDL = ("CREATE TABLE shop.a (id int NOT NULL, v varchar(10), n int DEFAULT 3, PRIMARY KEY (id));\n"
       "CREATE TABLE shop.k (v varchar(10), n int);\n"
       "CREATE TABLE shop.u (id int NOT NULL, e varchar(10), PRIMARY KEY (id), UNIQUE KEY ue (e))")


def _workload(seed: int, batches: int = 3) -> list[list[dict]]:
    """Batches of row changes over the three tables, one source: minimal images on shop.a with
    key-changing UPDATEs (chains and a swap through a free key), duplicates on keyless shop.k,
    updates of shop.u's unique `e`."""
    rng = random.Random(seed)
    a, k, u = (Source("shop", "a", ["id", "v", "n"]), Source("shop", "k", ["v", "n"]),
               Source("shop", "u", ["id", "e"]))
    counter = iter(range(1, 10**6))
    rows_a: dict[int, dict] = {}
    rows_k: list[dict] = []
    rows_u: dict[int, str] = {}
    out = []

    def trx(source):
        n = next(counter)
        source.trx = n - 1
        return source

    for _ in range(batches):
        batch = []
        for _ in range(60):
            roll = rng.random()
            if roll < 0.25 or not rows_a:
                free = [i for i in range(40) if i not in rows_a]
                key = rng.choice(free) if free else max(rows_a) + 1  # all 40 taken: a new key
                row = {"id": key, "v": rng.choice(["x", "y", None])}
                rows_a[key] = row
                batch.append(trx(a).insert(row))
            elif roll < 0.55:
                key = rng.choice(sorted(rows_a))
                batch.append(trx(a).update({"id": key}, {"v": rng.choice(["p", "q"])}))
            elif roll < 0.65:
                key = rng.choice(sorted(rows_a))
                free = [i for i in range(40) if i not in rows_a]
                if free:
                    new = rng.choice(free)
                    rows_a[new] = rows_a.pop(key)
                    batch.append(trx(a).update({"id": key}, {"id": new}))
            elif roll < 0.72:
                key = rng.choice(sorted(rows_a))
                del rows_a[key]
                batch.append(trx(a).delete({"id": key}))
            elif roll < 0.85:
                row = {"v": rng.choice(["d", "e"]), "n": rng.choice([1, 2])}
                rows_k.append(row)
                batch.append(trx(k).insert(row))
            elif roll < 0.92 and rows_k:
                row = rng.choice(rows_k)
                rows_k.remove(row)
                batch.append(trx(k).delete(row))
            else:
                key = rng.randrange(10)
                if key in rows_u:
                    new = f"f{next(counter)}"  # never an insert's e0-e9: `e` is a unique key
                    batch.append(trx(u).update({"id": key, "e": rows_u[key]}, {"id": key, "e": new}))
                    rows_u[key] = new
                else:
                    rows_u[key] = f"e{key}"
                    batch.append(trx(u).insert({"id": key, "e": f"e{key}"}))
        out.append(batch)
    return out


UNIQUE = {"a": (0,), "u": (0, 1)}  # ordinals of each keyed table's unique columns (DDL)


def _keys_each_change_meets(batches) -> list[str]:
    """Replays a workload's unique values as the server would: what a strict replay would stop on."""
    present, faults = {(t, o): set() for t, ordinals in UNIQUE.items() for o in ordinals}, []
    for change in (c for batch in batches for c in batch):
        for ordinal in UNIQUE.get(change.table, ()):
            keys = present[change.table, ordinal]
            before, after = (next((v["text"] for v in image or () if v["ordinal"] == ordinal), None)
                             for image in (change.before, change.after))
            after = before if after is None and change.after else after  # a minimal image without it
            if before is not None and before not in keys:
                faults.append(f"{change.op} of absent {change.table} {before}")
            if after is not None and after != before and after in keys:
                faults.append(f"{change.op} onto present {change.table} {after}")
            keys.discard(before)
            if after is not None:
                keys.add(after)
    return faults


def test_every_drawn_workload_is_a_history_a_server_could_write():
    # a drawn workload that a strict replay stops on tests nothing (seed 85092414 inserted key
    # 999 twice once all 40 keys were taken; seed 305329268 updated shop.u's unique `e` to e8,
    # then inserted id 8 with e8)
    assert {seed: f for seed in (*range(1000), 85092414, 305329268)
            if (f := _keys_each_change_meets(_workload(seed)))} == {}


def _everything(spark, cfg):
    tables = {t: rows_of(spark, cfg, t, *delta(spark, cfg, t).columns)
              for t in ("shop__a", "shop__k", "shop__u")}
    log = rows_of(spark, cfg, CHANGE_LOG, *delta(spark, cfg, CHANGE_LOG).columns)
    progress = rows_of(spark, cfg, PROGRESS, "source", "trx_id", "trx_file", "trx_end_pos", "commit_ts",
                       "batch_id", "changes")
    return tables, log, progress


def test_executor_replay_equals_the_driver_replay(spark, tmp_path):
    # One drawn workload a run (~50 s each: twelve DeltaApplier batches), printed so a failure
    # can be repeated with CDC_EXECUTOR_REPLAY_SEED; tests/unit/apply/test_fold.py compares the
    # fold and the replay over many random workloads without Spark.
    seed = drawn_seed("CDC_EXECUTOR_REPLAY_SEED")
    print(f"\nexecutor replay: seed {seed} (CDC_EXECUTOR_REPLAY_SEED={seed} repeats it)")
    batches = _workload(seed)
    results, counts = {}, {}
    applied, replayed = ({"driver": Counter(), "executors": Counter()},
                         {"driver": Counter(), "executors": Counter()})
    for name, min_changes in (("driver", None), ("executors", 0)):
        cfg = config(tmp_path / name, executor_apply_min_changes=min_changes)
        applier = DeltaApplier(catalog_from_ddl(DDL), cfg)
        counts[name] = []
        for n, batch in enumerate(batches):
            counts[name].append(applier(changes_df(spark, batch), n))
            applied[name].update(applier.last_batch.folded)
            replayed[name].update(applier.last_batch.replayed)
        results[name] = _everything(spark, cfg)
    assert results["executors"] == results["driver"]
    assert counts["executors"] == counts["driver"]
    # the job's metrics (AppliedBatch): the driver replays every row change; the executors fold
    # most of the same changes (the keyed table's) and replay the rest
    row_changes = sum(c.op in ("insert", "update", "delete") for b in batches for c in b)
    assert not applied["driver"] and sum(replayed["driver"].values()) == row_changes
    assert applied["executors"]["shop__a"] > 0
    assert sum(applied["executors"].values()) + sum(replayed["executors"].values()) == row_changes
    tables, log, _ = results["driver"]
    assert len(tables["shop__a"]) > 5 and len(log) == sum(map(len, batches))  # 8 rows or more in seeds 0-2999


def test_a_key_changing_update_chain_in_one_batch_lands_on_the_rows_it_moves(spark, tmp_path):
    a = Source("shop", "a", ["id", "v", "n"])
    first = [a.insert({"id": i, "v": f"v{i}"}) for i in range(1, 5)]
    # 1 -> 9, then 2 -> 1 (the key 1 just freed), then 9 -> 2: a swap of rows 1 and 2 through 9.
    second = [a.update({"id": 1}, {"id": 9}), a.update({"id": 2}, {"id": 1}), a.update({"id": 9}, {"id": 2}),
              a.update({"id": 2}, {"v": "moved"}), a.delete({"id": 3})]
    cfg = config(tmp_path, executor_apply_min_changes=0)
    applier = DeltaApplier(catalog_from_ddl(DDL), cfg)
    applier(changes_df(spark, first), 0)
    applier(changes_df(spark, second), 1)
    assert rows_of(spark, cfg, "shop__a") == [(1, "v2", 3), (2, "moved", 3), (4, "v4", 3)]


def test_strict_stop_on_an_executor_names_table_key_and_position_and_writes_nothing(spark, tmp_path):
    cfg = config(tmp_path, executor_apply_min_changes=0)
    a = Source("shop", "a", ["id", "v", "n"])
    batch = [a.insert({"id": 1, "v": "x"}), a.update({"id": 42}, {"v": "nope"})]
    with pytest.raises(ApplyStopped) as stopped:
        DeltaApplier(catalog_from_ddl(DDL), cfg)(changes_df(spark, batch), 0)
    for part in ("1032", "shop.a", "'id': '42'", "GTID 0-1-2", "shop__a", "batch 0"):
        assert part in str(stopped.value)
    assert not os.path.exists(cfg.delta_root)


def test_idempotent_quarantine_and_a_replayed_batch_on_the_executors(spark, tmp_path):
    a = Source("shop", "a", ["id", "v", "n"])
    batch = [a.insert({"id": 1, "v": "x"}), a.update({"id": 42}, {"v": "nope"}),
             a.insert({"id": 1, "v": "y"})]
    results = {}
    for name, min_changes in (("driver", None), ("executors", 0)):
        cfg = config(tmp_path / name, executor_apply_min_changes=min_changes, exec_mode="idempotent")
        counts = DeltaApplier(catalog_from_ddl(DDL), cfg)(changes_df(spark, batch), 0)
        q = rows_of(spark, cfg, QUARANTINE, "source", "binlog_file", "binlog_pos", "kind", "reason")
        results[name] = (counts, rows_of(spark, cfg, "shop__a"), q)
    assert results["executors"] == results["driver"]
    # 42 missing; 1 overwritten
    assert sorted(r[3] for r in results["driver"][2]) == ["duplicate_key", "row_not_found"]

    versions = {t: version(spark, cfg, t) for t in ("shop__a", CHANGE_LOG, PROGRESS, QUARANTINE)}
    # a new process, same batch
    counts = DeltaApplier(catalog_from_ddl(DDL), cfg)(changes_df(spark, batch), 0)
    assert counts["shop.a"]["already_applied"] == 1
    assert {t: version(spark, cfg, t) for t in versions} == versions


def test_nothing_is_collected_from_an_executor_table(spark, tmp_path, monkeypatch):
    """The driver's collect sees none of an executor table's changes."""
    a = Source("shop", "a", ["id", "v", "n"])
    seen = []
    real = _Applier._collect

    def spy(df):
        table = real(df)
        seen.append(table.num_rows)
        return table

    monkeypatch.setattr(_Applier, "_collect", staticmethod(spy))
    cfg = config(tmp_path, executor_apply_min_changes=3)
    k = Source("shop", "k", ["v", "n"])
    k.trx = 100
    batch = [a.insert({"id": i, "v": "x"}) for i in range(5)] + [k.insert({"v": "d", "n": 1})]
    counts = DeltaApplier(catalog_from_ddl(DDL), cfg)(changes_df(spark, batch), 0)
    assert seen == [1]  # shop.k's one change (under the threshold); shop.a's 5 stayed on the executors
    assert counts["shop.a"]["rows_upserted"] == 5 and len(rows_of(spark, cfg, "shop__a")) == 5


def test_rows_at_most_bounds_a_filtered_cached_frame_without_a_job(spark):
    from pyspark.sql import functions as F

    from pipelines.apply.batch_split import rows_at_most

    cached = spark.range(40).withColumn("k", F.col("id") % 3).persist()
    assert rows_at_most(cached) is None  # not materialised yet: no count kept
    cached.count()
    failed = spark.createDataFrame([(1,)], "k long")
    kept = cached.filter(F.col("id") > 5).join(F.broadcast(failed), "k", "left_anti").select("id")
    assert rows_at_most(kept) == 40 and kept.count() <= 40  # the cached rows: filter and anti-join only drop
    assert rows_at_most(cached.select(F.explode(F.array("id", "k")))) is None  # explode makes rows
    assert rows_at_most(cached.join(cached, "k")) is None
    cached.unpersist()

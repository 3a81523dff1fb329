"""CPU seconds of the executors' group work per change, fold vs change-by-change replay (issue #37
item 4): pipelines/apply/executor_replay.ReplayGroup.replay_records on one Arrow table in this
process (no Spark job: what one executor task does with one group), on sysbench-shaped rows.

    .venv/bin/python bench/fold_cost.py [--rows 100000] [--runs 3]

Workloads (sbtest: id INT PRIMARY KEY, k INT, c CHAR(120), pad CHAR(60)):
  snapshot  --rows snapshot rows into an empty table (a snapshot part's work)
  oltp      --rows sysbench oltp_read_write row changes on --rows stored rows, minimal images:
            per transaction UPDATE k, UPDATE c, DELETE, INSERT of the same id
Per workload and mode, the process CPU time (time.process_time: load on the machine stretches
wall time, not this) of the best of --runs, and whether both modes gave the same table rows.
"""
from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.bench_support import commit_hash, load_average  # noqa: E402

DDL = ("CREATE TABLE sbtest.sbtest1 (id int NOT NULL, k int NOT NULL DEFAULT 0, "
       "c char(120) NOT NULL DEFAULT '', "
       "pad char(60) NOT NULL DEFAULT '', PRIMARY KEY (id))")
COLUMNS = ["id", "k", "c", "pad"]


def _text(rng: random.Random, n: int) -> str:
    return "-".join(f"{rng.randrange(10**11):011d}" for _ in range(n // 12))


def workloads(rows: int):
    from tests.change_builders import Source

    rng = random.Random(7)
    s = Source("sbtest", "sbtest1", COLUMNS)
    snapshot = [s.change("snapshot", None, {"id": i, "k": rng.randrange(rows), "c": _text(rng, 120),
                                             "pad": _text(rng, 60)}, trx=1, seq=i)
                for i in range(1, rows + 1)]
    stored = [{"id": i, "k": i, "c": _text(rng, 120), "pad": _text(rng, 60), "_row_id": f"r{i}"}
              for i in range(1, rows + 1)]
    changes = []
    for t in range(rows // 4):
        key = rng.randrange(1, rows + 1)
        trx = 2 + t
        changes += [s.update({"id": key}, {"id": key, "k": rng.randrange(rows)}, trx=trx, seq=0),
                    s.update({"id": key}, {"id": key, "c": _text(rng, 120)}, trx=trx, seq=1),
                    s.delete({"id": key}, trx=trx, seq=2),
                    s.insert({"id": key, "k": 1, "c": _text(rng, 120), "pad": _text(rng, 60)},
                             trx=trx, seq=3)]
    return {"snapshot": (snapshot, None), "oltp": (changes, stored)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    import pyarrow as pa

    from pipelines.apply.executor_replay import LOG, ReplayGroup
    from tests.spark.apply.builders import catalog_from_ddl
    from tests.unit.apply.fold_harness import changes_table

    target = catalog_from_ddl(DDL).get("sbtest", "sbtest1")
    print(f"fold_cost: commit {commit_hash()}, load {load_average()}, {args.rows:,} rows", flush=True)
    for name, (changes, stored) in workloads(args.rows).items():
        records = changes_table(changes)
        outputs, best = {}, {}
        for fold in (False, True):
            group = ReplayGroup(target, "strict", 1, {}, fold=fold)
            table = None if stored is None else pa.Table.from_pylist(stored, schema=pa.schema(
                [group.schema.field(n) for n in (*COLUMNS, "_row_id")]))
            for _ in range(args.runs):
                t = time.process_time()
                out = group.replay_records(records, table)
                best[fold] = min(best.get(fold, float("inf")), time.process_time() - t)
            # the table's rows (those with a _row_id): the part's counters and its change log are
            # other rows, written apart by each mode (its counts differ by design: folded/replayed)
            outputs[fold] = sorted(repr(r) for r in out.drop_columns([LOG]).to_pylist()
                                   if r["_row_id"] is not None)
        n = len(changes)
        print(f"{name}: {n:,} changes | replay {best[False]:.2f} CPU s "
              f"({best[False] / n * 1e6:.1f} us/change) | "
              f"fold {best[True]:.2f} CPU s ({best[True] / n * 1e6:.1f} us/change) | "
              f"x{best[False] / best[True]:.1f} | "
              f"same output: {outputs[True] == outputs[False]} | load {load_average()}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

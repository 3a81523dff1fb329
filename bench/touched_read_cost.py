"""What the replay's read of a batch's touched rows costs on a big table, against what a
driver-side columnar copy of the table would cost (issue #57; bench/README.md "Touched-row read
cost").

    .venv/bin/python bench/touched_read_cost.py [--rows 1000000] [--files 8] [--keys 1000] [--runs 3]

A sysbench-shaped Delta table (`id` int primary key, `k` int, `c` char(120), `pad` char(60),
`_row_id`) of --rows rows in --files files, written in id order as a snapshot writes it. Then,
for --keys uniform random ids, --runs times each:

* `read_touched`: the applier's own read (pipelines/apply/touched_rows.py), a filter or a semi-join
  of the Delta table, every target column collected: what a live batch pays per unmirrored table;
* `keys only`: the same filter selecting `id` and `_row_id` only: what column pruning alone saves;
* `arrow take`: the whole table held once as Arrow sorted by `id` (its load time and size
  printed), each run a numpy searchsorted of the ids, a take and the rows as Python dicts.

All three give the same rows (checked). Prints each figure's runs and the machine's load.
"""
from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.bench_support import commit_hash, load_average  # noqa: E402

DDL = ("CREATE TABLE sbtest.sbtest1 (id int NOT NULL, k int NOT NULL DEFAULT 0,"
       " c char(120) NOT NULL DEFAULT '', pad char(60) NOT NULL DEFAULT '', PRIMARY KEY (id))")


def _table(spark, path: str, rows: int, files: int) -> None:
    from pyspark.sql import functions as F

    spark.range(1, rows + 1, numPartitions=files).select(
        F.col("id").cast("int").alias("id"), (F.col("id") * 7 % 100_000).cast("int").alias("k"),
        F.rpad(F.sha2(F.col("id").cast("string"), 256), 120, "c").alias("c"),
        F.rpad(F.col("id").cast("string"), 60, "p").alias("pad"),
        F.sha2(F.concat(F.lit("row"), F.col("id").cast("string")), 256).alias("_row_id"),
    ).write.format("delta").option("delta.enableDeletionVectors", "true").save(path)


def _timed(runs: int, fn) -> tuple[list[float], object]:
    times, out = [], None
    for _ in range(runs):
        start = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - start)
    return times, out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--files", type=int, default=8)
    parser.add_argument("--keys", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()

    import numpy as np
    import pyarrow.compute as pc
    from pyspark.sql import functions as F

    import pipelines.apply.tables as D
    from libs.apply.plan import Lookups
    from pipelines.apply.touched_rows import read_touched
    from pipelines.job.spark_session import SessionOptions, build_session
    from tests.spark.apply.builders import catalog_from_ddl

    spark = build_session(SessionOptions(app_name="touched-read-cost", warehouse_dir=tempfile.mkdtemp()))
    target = catalog_from_ddl(DDL).get("sbtest", "sbtest1")
    path = str(Path(tempfile.mkdtemp()) / "sbtest1")
    print(f"touched_read_cost: commit {commit_hash()}, {args.rows:,} rows in {args.files} files, "
          f"{args.keys:,} random ids, load {load_average()}", flush=True)
    start = time.perf_counter()
    _table(spark, path, args.rows, args.files)
    print(f"table written in {time.perf_counter() - start:.1f} s", flush=True)
    ids = random.Random(57).sample(range(1, args.rows + 1), args.keys)
    lookups = Lookups(by_key={("id",): {(i,) for i in ids}})

    def keys_only():
        frame = spark.read.format("delta").load(path).where(F.col("id").isin(ids))
        return frame.select("id", "_row_id").toArrow()

    times, rows = _timed(args.runs, lambda: read_touched(spark, path, target, lookups))
    print(f"read_touched (every column): {', '.join(f'{t:.2f}' for t in times)} s", flush=True)
    want = sorted((r["id"], r["_row_id"]) for r in rows)
    times, keys = _timed(args.runs, keys_only)
    print(f"keys only (id, _row_id):     {', '.join(f'{t:.2f}' for t in times)} s", flush=True)
    assert sorted(zip(keys["id"].to_pylist(), keys["_row_id"].to_pylist())) == want

    start = time.perf_counter()
    names = [*target.column_names, "_row_id"]
    whole = spark.read.format("delta").load(path).select(*names).toArrow()
    whole = whole.take(pc.sort_indices(whole["id"]))
    sorted_ids = whole["id"].to_numpy()
    print(f"arrow copy: loaded in {time.perf_counter() - start:.1f} s, {whole.nbytes / 2**20:.0f} MiB",
          flush=True)

    def take():
        at = np.searchsorted(sorted_ids, np.array(ids, dtype=sorted_ids.dtype))
        at = at[(at < len(sorted_ids)) & (sorted_ids[np.minimum(at, len(sorted_ids) - 1)] == ids)]
        return D.python_rows(whole.take(at))

    times, taken = _timed(args.runs, take)
    print(f"arrow take:                  {', '.join(f'{t:.4f}' for t in times)} s", flush=True)
    assert sorted(taken, key=lambda r: r["id"]) == sorted(rows, key=lambda r: r["id"])
    print(f"same rows from all three: {len(rows):,}; load {load_average()}")


if __name__ == "__main__":
    main()

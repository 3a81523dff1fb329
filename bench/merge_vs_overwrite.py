"""One small target table written per batch by MERGE vs by whole-table overwrite
(bench/README.md "Session 8").

    .venv/bin/python bench/merge_vs_overwrite.py [--rows 60] [--changed 30] [--rounds 8]

Why: with the target mirror (libs/apply/target_mirror.py) the applier knows a mirrored table's whole
content after each batch, so it can replace the table in one write instead of a MERGE by
`_row_id` (state rebuild, scan and rewrite jobs plus MERGE planning). Two tables of the same
shape as an applier target (column mapping, column defaults, `_row_id`, `_lineage`), each
written `--rounds` times, the two ways alternating so machine load hits both: MERGE of
`--changed` rows (updates) with Delta's txnAppId/txnVersion, and overwrite of all `--rows` rows
with txnAppId/txnVersion as writer options. Prints the wall time and Spark jobs of every write
and the medians; checks after each round that both tables hold the same rows.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

DDL = """CREATE TABLE delta.`{path}` (
  id INT NOT NULL, name STRING DEFAULT 'x', amount DOUBLE, _row_id STRING NOT NULL,
  _lineage STRUCT<statement: STRING, gtid: STRING, pos: BIGINT>
) USING delta TBLPROPERTIES ('delta.feature.allowColumnDefaults' = 'supported',
                             'delta.columnMapping.mode' = 'name')"""


def rows_for(round_no: int, n: int, changed: int) -> list[tuple]:
    """Rows below `changed` as written by round `round_no`, the others as round 0 left them."""
    def row(i: int, r: int) -> tuple:
        lineage = (f"UPDATE t SET ... round {r}", f"0-1-{r}", 100 * r)
        return (i, f"name-{i}-{r}", float(i * r), f"row-{i}", lineage)
    return [row(i, round_no if i < changed else 0) for i in range(n)]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=60)
    ap.add_argument("--changed", type=int, default=30)
    ap.add_argument("--rounds", type=int, default=8)
    args = ap.parse_args(argv)

    from delta.tables import DeltaTable
    from pyspark.sql import functions as F

    from bench.bench_support import load_average
    from pipelines.job.spark_session import SessionOptions, build_session

    spark = build_session(SessionOptions(app_name="merge-vs-overwrite"))
    tracker = spark.sparkContext.statusTracker()
    root = Path(tempfile.mkdtemp(prefix="merge-vs-overwrite-"))
    schema = ("id INT, name STRING, amount DOUBLE, _row_id STRING, "
              "_lineage STRUCT<statement: STRING, gtid: STRING, pos: BIGINT>")
    paths = {how: str(root / how) for how in ("merge", "overwrite")}
    for path in paths.values():
        spark.sql(DDL.format(path=path))
        initial = spark.createDataFrame(rows_for(0, args.rows, 0), schema)
        initial.write.format("delta").mode("append").save(path)

    def merge(round_no: int) -> None:
        source = spark.createDataFrame(rows_for(round_no, args.rows, args.changed)[:args.changed], schema)
        spark.conf.set("spark.databricks.delta.write.txnAppId", "bench:merge")
        spark.conf.set("spark.databricks.delta.write.txnVersion", str(round_no))
        spark.conf.set("spark.databricks.delta.merge.materializeSource", "none")
        try:
            (DeltaTable.forPath(spark, paths["merge"]).alias("t")
             .merge(source.alias("s"), F.col("t._row_id") == F.col("s._row_id"))
             .whenMatchedUpdateAll().whenNotMatchedInsertAll().execute())
        finally:
            spark.conf.unset("spark.databricks.delta.write.txnAppId")
            spark.conf.unset("spark.databricks.delta.write.txnVersion")

    def overwrite(round_no: int) -> None:
        (spark.createDataFrame(rows_for(round_no, args.rows, args.changed), schema).coalesce(1)
         .write.format("delta").mode("overwrite").option("txnAppId", "bench:overwrite")
         .option("txnVersion", round_no).save(paths["overwrite"]))

    walls: dict[str, list[float]] = {"merge": [], "overwrite": []}
    jobs: dict[str, list[int]] = {"merge": [], "overwrite": []}
    for round_no in range(1, args.rounds + 1):
        order = (("merge", merge), ("overwrite", overwrite))
        for how, write in (order if round_no % 2 else order[::-1]):
            before = set(tracker.getJobIdsForGroup(None))
            t0 = time.perf_counter()
            write(round_no)
            walls[how].append(time.perf_counter() - t0)
            jobs[how].append(len(set(tracker.getJobIdsForGroup(None)) - before))
        a, b = (sorted(spark.read.format("delta").load(p).collect()) for p in paths.values())
        if a != b:
            raise SystemExit(f"round {round_no}: the tables differ")
        print(f"round {round_no}: merge {walls['merge'][-1]:.2f} s ({jobs['merge'][-1]} jobs), "
              f"overwrite {walls['overwrite'][-1]:.2f} s ({jobs['overwrite'][-1]} jobs)", flush=True)
    for how in walls:
        steady = walls[how][1:]  # round 1 compiles classes for both
        print(f"{how}: median {statistics.median(steady):.3f} s over rounds 2-{args.rounds}, "
              f"jobs per write {statistics.median(jobs[how][1:]):.0f}")
    print(f"load average {load_average()}")
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The floor under a small apply batch on this machine: what Spark + Delta cost before any of
our code runs (issue #21 goal 3, bench/README.md). Prints its figures; not a test.

    .venv/bin/python bench/delta_floor.py [--rounds 10] [--stream-seconds 30]

In the project's own session (pipelines/job/spark_session.build_session), on tables shaped like an
applier target (column mapping, column DEFAULTs, `_row_id`, `_lineage`):

* append: 1 row appended (what the change log and the progress table each take per batch);
* overwrite+txn: a 60-row table replaced with Delta's txnAppId/txnVersion (the applier's write
  of a small mirrored target, pipelines/apply/target_writes.py);
* merge+txn: 30 of those rows MERGEd by `_row_id` with txnAppId/txnVersion (a big target's write);
* one-table batch: change-log append, target overwrite+txn, progress append, one after the
  other as the applier orders them (the least a batch touching one table commits), on a table
  and txnAppId of its own (sharing overwrite+txn's would make Delta skip the target write: the
  round's txnVersion is committed there already). Each round's commit count is checked.
* stream: a query with nothing in it (the `rate` source at 20 rows/s, a 1 s trigger, a
  foreachBatch that counts its rows), triggerExecution per micro-batch: the engine's own cost
  of a micro-batch with a Python sink.

Medians and minimums over the rounds after the first (which loads classes).
"""
from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

SCHEMA = ("id INT, name STRING, amount DOUBLE, _row_id STRING, "
          "_lineage STRUCT<statement: STRING, gtid: STRING, pos: BIGINT>")
TXN = ("spark.databricks.delta.write.txnAppId", "spark.databricks.delta.write.txnVersion")


def rows(round_no: int, n: int) -> list[tuple]:
    return [(i, f"name-{i}-{round_no}", float(i * round_no), f"row-{i}",
             (f"UPDATE t round {round_no}", "0-1-1", i))
            for i in range(n)]


def stream_floor(spark, seconds: float) -> list[float]:
    """triggerExecution (s) of each micro-batch of an empty-handed query, the first one left out."""
    counted = []
    query = (spark.readStream.format("rate").option("rowsPerSecond", 20).load().writeStream
             .foreachBatch(lambda df, _: counted.append(df.count())).trigger(processingTime="1 second")
             .option("checkpointLocation", tempfile.mkdtemp(prefix="delta-floor-ckpt-")).start())
    time.sleep(seconds)
    query.stop()
    return [p["durationMs"]["triggerExecution"] / 1000 for p in query.recentProgress[1:] if p["numInputRows"]]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--stream-seconds", type=float, default=30)
    args = ap.parse_args(argv)

    from delta.tables import DeltaTable
    from pyspark.sql import functions as F

    from bench.bench_support import load_average
    from bench.merge_vs_overwrite import DDL
    from pipelines.job.spark_session import SessionOptions, build_session

    spark = build_session(SessionOptions(app_name="delta-floor"))
    root = Path(tempfile.mkdtemp(prefix="delta-floor-"))
    names = ("log", "target", "progress", "merged", "batch-target")
    paths = {name: str(root / name) for name in names}
    for name, path in paths.items():
        spark.sql(DDL.format(path=path))
        if name in ("target", "merged", "batch-target"):
            spark.createDataFrame(rows(0, 60), SCHEMA).write.format("delta").mode("append").save(path)

    def append(name: str, round_no: int) -> None:
        (spark.createDataFrame(rows(round_no, 1), SCHEMA).write.format("delta").mode("append")
         .save(paths[name]))

    def overwrite(round_no: int, name: str = "target") -> None:
        (spark.createDataFrame(rows(round_no, 60), SCHEMA).coalesce(1).write.format("delta").mode("overwrite")
         .option("txnAppId", f"floor:{name}").option("txnVersion", round_no).save(paths[name]))

    def merge(round_no: int) -> None:
        spark.conf.set(TXN[0], "floor:merge")
        spark.conf.set(TXN[1], str(round_no))
        try:
            (DeltaTable.forPath(spark, paths["merged"]).alias("t")
             .merge(spark.createDataFrame(rows(round_no, 30), SCHEMA).alias("s"),
                    F.col("t._row_id") == F.col("s._row_id"))
             .whenMatchedUpdateAll().whenNotMatchedInsertAll().execute())
        finally:
            for key in TXN:
                spark.conf.unset(key)

    def version(name: str) -> int:
        return DeltaTable.forPath(spark, paths[name]).history(1).collect()[0]["version"]

    batch_tables = ("log", "batch-target", "progress")

    def one_table_batch(round_no: int) -> None:
        append("log", round_no)
        overwrite(round_no, "batch-target")
        append("progress", round_no)

    load_before = load_average()
    measures = {"append": lambda r: append("log", r), "overwrite+txn": overwrite, "merge+txn": merge,
                "one-table batch": one_table_batch}
    walls: dict[str, list[float]] = {name: [] for name in measures}
    for round_no in range(1, args.rounds + 1):
        for name, write in measures.items():
            before = [version(n) for n in batch_tables] if name == "one-table batch" else None
            t0 = time.perf_counter()
            write(round_no)
            walls[name].append(time.perf_counter() - t0)
            if before is not None:  # outside the timing: a history read is a Spark job
                after = [version(n) for n in batch_tables]
                if [a - b for a, b in zip(after, before)] != [1, 1, 1]:
                    raise SystemExit(f"one-table batch {round_no}: versions {before} -> {after}, "
                                     "not a commit each")
    stream = stream_floor(spark, args.stream_seconds)
    print(f"load average before {load_before}, after {load_average()}")
    for name, times in walls.items():
        steady = times[1:]
        print(f"{name:16s} median {statistics.median(steady):.3f} s  min {min(steady):.3f} s  "
              f"({len(steady)} rounds)")
    if stream:
        print(f"{'stream':16s} median {statistics.median(stream):.3f} s  min {min(stream):.3f} s  "
              f"({len(stream)} micro-batches, triggerExecution)")
    else:
        print("stream: no micro-batch with input in the window")
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Per-batch cost of the stream stages alone (the fixed cost F of a batch).

    .venv/bin/python bench/plain_batches.py [--transactions 15000] [--max-offsets 20000]

The apply_bench workload (cached under .cache/bench/) shipped to a private broker, then the
cdc-replicate query WITHOUT the apply stage (change records appended to Delta), available-now,
twice in one Spark session (a warm-up, then the measured run). Prints Spark's progress of each
micro-batch of the measured run (numInputRows, durationMs per phase): a small last batch next
to full ones separates the fixed cost of a batch from the per-event cost.
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.apply_workloads import simulated_binlog  # noqa: E402
from bench.bench_support import job_seconds, load_average, private_broker, spark_ui  # noqa: E402


def print_jobs_of_batch(spark, batch_id: int, run_id) -> None:
    """Spark jobs of one micro-batch (the UI's REST API: description carries runId and batch):
    wall time, tasks and executor run time per job, so the fixed cost is seen job by job."""
    stages = {s["stageId"]: s for s in spark_ui(spark, "/stages")}
    every = spark_ui(spark, "/jobs")
    jobs = [j for j in every if f"runId = {run_id}" in (j.get("description") or "")
            and f"batch = {batch_id}" in (j.get("description") or "")]
    if not jobs:
        print("  no job names the batch; the last 12 jobs:")
        jobs = sorted(every, key=lambda j: j["jobId"])[-12:]
    for job in sorted(jobs, key=lambda j: j["jobId"]):
        run_ms = sum(stages[s]["executorRunTime"] for s in job["stageIds"] if s in stages)
        print(f"  job {job['jobId']}: {job_seconds(job) * 1000:7.0f} ms wall, "
              f"{job['numTasks']:3d} tasks, executor run {run_ms:6d} ms, {job['name'][:60]} | "
              f"{(job.get('description') or '')[:60]!r}")
        for sid in sorted(s for s in job["stageIds"] if s in stages and stages[s]["status"] == "COMPLETE"):
            st = stages[sid]
            wall = job_seconds({"submissionTime": st["submissionTime"],
                                "completionTime": st["completionTime"]})
            print(f"    stage {sid}: {wall * 1000:6.0f} ms wall, {st['numTasks']:2d} tasks, executor run "
                  f"{st['executorRunTime']:6d} ms, in {st['inputRecords']}/{st['shuffleReadRecords']} "
                  f"out {st['outputRecords']}/{st['shuffleWriteRecords']}, {st['name'][:50]}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--transactions", type=int, default=15000)
    ap.add_argument("--seed", type=int, default=11)
    ap.add_argument("--max-offsets", type=int, default=20000)
    args = ap.parse_args(argv)

    from libs.config.job import JobConfig
    from pipelines.replicate import build_query
    from pipelines.ship import main as cdc_ship
    from pipelines.job.spark_session import SessionOptions, build_session

    binlog, _ = simulated_binlog(args.transactions, args.seed)
    work = Path(tempfile.mkdtemp(prefix="plain-batches-"))
    spark = build_session(SessionOptions(app_name="plain-batches", ui=True))
    try:
        with private_broker(work / "kafka") as bootstrap:
            if cdc_ship(["--from-file", str(binlog), "--bootstrap", bootstrap, "--topic", "plain",
                         "--source", "sim"]) != 0:
                raise RuntimeError("cdc-ship failed")
            for name in ("warm-up", "measured"):
                cfg = JobConfig(bootstrap=bootstrap, topic="plain", available_now=True,
                                delta_root=str(work / name / "delta"), checkpoint=str(work / name / "ckpt"),
                                max_offsets_per_trigger=args.max_offsets)
                t0 = time.perf_counter()
                query = build_query(spark, cfg)
                query.awaitTermination()
                elapsed = time.perf_counter() - t0
            print(f"load {load_average()}; measured run {elapsed:.1f} s")
            for p in query.recentProgress:
                print(f"batch {p['batchId']}: {p['numInputRows']} records, durationMs {p['durationMs']}")
            for p in query.recentProgress[-2:]:  # a full batch and the small last one
                print(f"jobs of batch {p['batchId']} ({p['numInputRows']} records):")
                print_jobs_of_batch(spark, p["batchId"], query.runId)
    finally:
        spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())

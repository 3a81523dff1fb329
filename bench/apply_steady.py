"""Per-batch fixed cost of DeltaApplier in steady state (bench/README.md "Session 3").

    .venv/bin/python bench/apply_steady.py [--transactions 3000] [--batches 4] [--conf KEY=VALUE ...]

A minimal-image, no-DDL simulator workload (seed 3) decoded by libs/ (no Spark), cut into
`--batches` consecutive batches of whole transactions, applied one after the other by ONE
DeltaApplier on an empty delta root (batch 0 also creates the tables; the later ones are the
steady state). Per batch: wall time, Spark jobs and tasks (status tracker), and the driver-side
split (collect / touched-row reads / Python replay / writes / MERGEs / progress). For the last
batch, the Spark jobs grouped by description with tasks and summed durations (the UI's REST
API; jobs of tables run side by side overlap, so the sum exceeds the wall time).
`--conf` sets Spark confs when the session is built (static ones too), to try a setting against
the default. `--compare`: two appliers on two delta roots in one session, batch by batch in
alternating order, "before" without issue #37 item 5's cuts (BEFORE), "after" with the defaults;
each one's background work (pipelines/apply/snapshot_warmer.py) is waited for after its batch
and printed apart, so it never runs inside the other's batch.
"""
from __future__ import annotations

import argparse
import os
import collections
import functools
import json
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.bench_support import job_seconds, load_average, spark_ui, tree_cpu, ui_time  # noqa: E402

PHASES = ("_collect", "_read_touched")  # of the applier
# of its writes (pipelines/apply/batch_writes.py)
WRITE_PHASES = ("write", "_write_targets", "append_progress")


def decoded_batches(transactions: int, batches: int) -> list[list[dict]]:
    from libs.stream.assembler import InMemorySpillStore
    from libs.binlog import iter_frames
    from libs.simulator.run import SimulationOptions, simulate
    from libs.simulator.sinks import FileSink
    from libs.stages.assembly import InputFrame, assemble_group, decode_segment

    sink = FileSink()
    simulate(SimulationOptions(row_image="minimal", ddl_rate=0.0, transactions=transactions, seed=3), sink)
    frames = [InputFrame(bytes(f), "sim-bin.000001", pos, 0, i)
              for i, (pos, f) in enumerate(iter_frames(sink.bytes(), file="sim-bin.000001"))]
    records, _ = assemble_group("sim", None, frames, InMemorySpillStore(), now=0)
    changes = [c for r in records if r["kind"] == "segment" for c in decode_segment(r)]
    order = list(dict.fromkeys(c["trx_id"] for c in changes))  # commit order
    per = -(-len(order) // batches)
    batch_of = {trx: i // per for i, trx in enumerate(order)}
    out: list[list[dict]] = [[] for _ in range(batches)]
    for change in changes:
        out[batch_of[change["trx_id"]]].append(change)
    return out


class PhaseTimer:
    """Wraps methods of objects, given as (object, method names) pairs; sums their wall time
    (threads overlap: sums, not walls)."""

    def __init__(self, *methods):
        self.totals: dict[str, float] = collections.defaultdict(float)
        for obj, names in methods:
            for name in names:
                setattr(obj, name, self._timed(name, getattr(obj, name)))

    def _timed(self, name, method):
        @functools.wraps(method)
        def wrapper(*args, **kwargs):
            t0 = time.perf_counter()
            try:
                return method(*args, **kwargs)
            finally:
                self.totals[name] += time.perf_counter() - t0
        return wrapper

    def take(self) -> dict[str, float]:
        out = {k: round(v, 2) for k, v in self.totals.items()}
        self.totals.clear()
        return out


def job_summary(spark, first_job: int, end_job: int | None = None, group: str | None = None) -> list[str]:
    """Jobs with first_job <= id < end_job of job group `group` (None: no group) grouped by
    description: count, tasks, summed seconds."""
    groups: dict[str, list] = collections.defaultdict(lambda: [0, 0, 0.0])
    for job in spark_ui(spark, "/jobs"):
        if job["jobId"] < first_job or (end_job is not None and job["jobId"] >= end_job):
            continue
        if job.get("jobGroup") != group:
            continue
        g = groups[(job.get("description") or job["name"])[:100]]
        g[0] += 1
        g[1] += job["numTasks"]
        g[2] += job_seconds(job)
    return [f"{n:3d} jobs {t:4d} tasks {s:6.2f} s  {name}"
            for name, (n, t, s) in sorted(groups.items(), key=lambda kv: -kv[1][2])]


def job_timeline(spark, first_job: int, end_job: int | None = None) -> list[str]:
    """Jobs with first_job <= id < end_job in submission order: start (s after the first), wall
    seconds, the idle gap since the previous job ended (driver work: planning, Python, commits), tasks."""
    jobs = sorted((j for j in spark_ui(spark, "/jobs")
                   if j["jobId"] >= first_job and (end_job is None or j["jobId"] < end_job)),
                  key=lambda j: j["jobId"])
    jobs = [j for j in jobs if j.get("jobGroup") is None] + [j for j in jobs if j.get("jobGroup") is not None]
    if not jobs:
        return []
    origin, last_end, lines = ui_time(jobs[0], "submissionTime"), None, []
    for job in jobs:
        start = ui_time(job, "submissionTime")
        gap = (start - last_end).total_seconds() if last_end else 0.0
        end = ui_time(job, "completionTime") if job.get("completionTime") else start
        last_end = max(last_end or end, end)
        group = f"[{job['jobGroup']}] " if job.get("jobGroup") else ""
        lines.append(f"{(start - origin).total_seconds():7.2f} s  {job_seconds(job):5.2f} s  "
                     f"gap {gap:5.2f} s "
                     f"{job['numTasks']:3d} tasks  {group}{(job.get('description') or job['name'])[:80]}")
    return lines


# The cuts of issue #37 item 5 (bench/README.md "Issue #37 goal e"), as `--compare` switches
# them: "before" is the code without them, "after" the job's defaults.
BEFORE = {"warm": False, "threads": 4}
WARM_GROUP = "cdc-snapshot-warm"  # pipelines/apply/snapshot_warmer.JOB_GROUP


def knobs_of(applier) -> dict:
    from pipelines.apply import batch_writes
    return {"warm": applier.writes.warmer.enabled, "threads": batch_writes.TABLE_THREADS}


def set_knobs(applier, knobs: dict) -> None:
    from pipelines.apply import batch_writes
    applier.writes.warmer.enabled = knobs["warm"]
    batch_writes.TABLE_THREADS = knobs["threads"]


class Run:
    """One DeltaApplier on its own delta root, its knobs set around each of its batches."""

    def __init__(self, name: str, work: Path, ddl: Path, args, knobs: dict | None):
        from libs.config.job import JobConfig
        from libs.targets import load_targets
        from pipelines.apply import DeltaApplier

        self.name = name
        self.applier = DeltaApplier(load_targets(None, [str(ddl)]), JobConfig(
            delta_root=str(work / name), target_ddl=str(ddl), target_mirror_max_rows=args.mirror_max_rows,
            target_overwrite_max_rows=args.overwrite_max_rows))
        self.knobs = knobs if knobs is not None else knobs_of(self.applier)
        self.timer = PhaseTimer((self.applier, PHASES), (self.applier.writes, WRITE_PHASES))
        self.walls: list[float] = []
        self.tails: list[float] = []
        self.cpus: list[float] = []
        self.jobs: tuple[int, int] = (0, 0)  # the last batch's job ids [first, end)

    def batch(self, spark, df, n: int, batch_id: int) -> None:
        tracker = spark.sparkContext.statusTracker()
        set_knobs(self.applier, self.knobs)
        before = set(tracker.getJobIdsForGroup(None))
        first_job = max(before | set(tracker.getJobIdsForGroup(WARM_GROUP)), default=-1) + 1
        cpu0, t0 = tree_cpu(os.getpid()), time.perf_counter()
        self.applier(df, batch_id)
        wall = time.perf_counter() - t0
        t1 = time.perf_counter()
        self.applier.writes.warmer.wait()  # its background work ends before anything else runs
        tail = time.perf_counter() - t1
        cpu = tree_cpu(os.getpid()) - cpu0  # the driver, its JVM and Python workers, background included
        new = set(tracker.getJobIdsForGroup(None)) - before  # the batch's jobs (the warm's have a group)
        warm_jobs = {j for j in tracker.getJobIdsForGroup(WARM_GROUP) if j >= first_job}  # (waited for above)
        self.jobs = (first_job, max(new | warm_jobs, default=first_job) + 1)
        tasks = sum(stage.numTasks for job in new if (info := tracker.getJobInfo(job))
                    for s in info.stageIds if (stage := tracker.getStageInfo(s)))
        self.walls.append(wall)
        self.tails.append(tail)
        self.cpus.append(cpu)
        print(f"{self.name} batch {batch_id}: {n} changes, {wall:.2f} s "
              f"(+ {tail:.2f} s background after it), "
              f"CPU {cpu:.2f} s, "
              f"{len(new)} jobs ({len(warm_jobs)} in the background), {tasks} tasks; "
              f"summed s per phase {self.timer.take()}", flush=True)

    def report(self, spark, timeline: bool) -> None:
        steady, tails = self.walls[1:], self.tails[1:]
        if steady:
            print(f"{self.name} {self.knobs}: steady batches {', '.join(f'{w:.2f}' for w in steady)} s; "
                  f"median {statistics.median(steady):.2f} s, min {min(steady):.2f} s; "
                  f"background after them median {statistics.median(tails):.2f} s; "
                  f"CPU median {statistics.median(self.cpus[1:]):.2f} s")
        print(f"{self.name}: jobs of the last batch:")
        for line in job_summary(spark, *self.jobs):
            print("  " + line)
        print(f"{self.name}: its background jobs after it ({WARM_GROUP}):")
        for line in job_summary(spark, *self.jobs, group=WARM_GROUP):
            print("  " + line)
        if timeline:
            print(f"{self.name}: timeline of the last batch, then its background jobs:")
            for line in job_timeline(spark, *self.jobs):
                print("  " + line)


def main(argv=None) -> int:
    from libs.config.job import JobConfig

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--transactions", type=int, default=3000)
    ap.add_argument("--batches", type=int, default=4)
    ap.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE")
    ap.add_argument("--merge-threads", type=int, default=None,
                    help="pipelines.apply.batch_writes.TABLE_THREADS for this run "
                         "(1: tables one after the other)")
    ap.add_argument("--timeline", action="store_true", help="also list the last batch's jobs in order")
    ap.add_argument("--compare", action="store_true",
                    help=f"two appliers on two roots, batch by batch in alternating order: "
                         f"before = {BEFORE}, after = the defaults")
    ap.add_argument("--before", default=None, metavar="JSON",
                    help=f"--compare's before knobs (default {BEFORE})")
    ap.add_argument("--after", default=None, metavar="JSON",
                    help="--compare's after knobs (default: the job's)")
    ap.add_argument("--mirror-max-rows", type=int, default=JobConfig.target_mirror_max_rows,
                    help="JobConfig.target_mirror_max_rows (0: read touched rows from Delta every batch)")
    ap.add_argument("--overwrite-max-rows", type=int, default=JobConfig.target_overwrite_max_rows,
                    help="JobConfig.target_overwrite_max_rows (0: every target write is a MERGE)")
    args = ap.parse_args(argv)

    import pyarrow as pa
    from pyspark.sql.pandas.types import to_arrow_schema

    from libs.simulator.schema import replica_ddl, standard_tables
    from pipelines.job.schemas import CHANGE_RECORD, spark_schema
    from pipelines.job.spark_session import SessionOptions, build_session

    if args.merge_threads is not None:
        from pipelines.apply import batch_writes
        batch_writes.TABLE_THREADS = args.merge_threads
    batches = decoded_batches(args.transactions, args.batches)
    spark = build_session(SessionOptions(app_name="apply-steady", ui=True,
                                         extra_conf=tuple(tuple(c.split("=", 1)) for c in args.conf)))
    schema = to_arrow_schema(spark_schema(CHANGE_RECORD))
    frames = []
    for rows in batches:
        df = spark.createDataFrame(pa.Table.from_pylist(rows, schema=schema)).cache()
        df.count()
        frames.append((df, len(rows)))
    work = Path(tempfile.mkdtemp(prefix="apply-steady-"))
    try:
        ddl = work / "targets.sql"
        ddl.write_text(replica_ddl(standard_tables("mariadb"), "sim"))
        before, after = (None if k is None else json.loads(k) for k in (args.before, args.after))
        runs = [Run("before", work, ddl, args, before or BEFORE),
                Run("after", work, ddl, args, after)] if args.compare \
            else [Run("delta", work, ddl, args, None)]
        print(f"load average {load_average()}")
        for batch_id, (df, n) in enumerate(frames):
            for run in (runs if batch_id % 2 == 0 else runs[::-1]):  # alternating: neither always first
                run.batch(spark, df, n, batch_id)
        for run in runs:
            run.report(spark, args.timeline)
        print(f"load average {load_average()}")
    finally:
        spark.stop()
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

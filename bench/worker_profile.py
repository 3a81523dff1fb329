"""Where the stream stages' Python workers spend their time.

    .venv/bin/python bench/worker_profile.py [--transactions 15000] [--max-offsets 20000] [--top 30]

Runs the plain pipeline (no apply stage, as bench/plain_batches.py) with the assemble stage's
applyInPandasWithState function and the rows stage's mapInArrow function replaced by subclasses
that run under cProfile in the Python worker and dump their stats to a directory. The subclasses
are defined here, in __main__, so cloudpickle ships them by value to the workers; the pipeline
code is unchanged. Prints, per stage, the worker wall time inside the function (including the
pandas/Arrow conversions that happen in our code) and the top functions by own time.

What it cannot see: Spark's Arrow serialisation around the function (outside our frame).
"""
from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import sys
import tempfile
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.apply_workloads import simulated_binlog  # noqa: E402
from bench.bench_support import load_average, private_broker  # noqa: E402
from pipelines.stages import assemble as assemble_stage  # noqa: E402
from pipelines.stages import rows as rows_stage  # noqa: E402

PROFILE_DIR = Path(tempfile.mkdtemp(prefix="worker-profile-"))


def _profiled(stage: str, produce):
    """Run produce() (which returns a list of outputs) under cProfile; dump stats for `stage`."""
    prof = cProfile.Profile()
    t0 = time.perf_counter()
    out = prof.runcall(produce)
    wall = time.perf_counter() - t0
    name = f"{stage}-{os.getpid()}-{uuid.uuid4().hex[:8]}-{wall:.6f}.prof"
    prof.dump_stats(str(PROFILE_DIR / name))
    return out


class ProfiledAssembleFn(assemble_stage.AssembleFn):
    def __call__(self, key, pdfs, state):
        parent = super().__call__
        yield from _profiled("assemble", lambda: list(parent(key, pdfs, state)))


class ProfiledDecodeSegments(rows_stage.DecodeSegments):
    def __call__(self, batches):
        parent = super().__call__
        yield from _profiled("rows", lambda: list(parent(batches)))


def report(stage: str, top: int) -> None:
    files = sorted(PROFILE_DIR.glob(f"{stage}-*.prof"))
    if not files:
        print(f"== {stage}: no profile written")
        return
    wall = sum(float(f.stem.rsplit("-", 1)[1]) for f in files)
    stats = pstats.Stats(*[str(f) for f in files])
    print(f"== {stage}: {len(files)} calls, {wall:.2f} s wall inside the function")
    stats.sort_stats("tottime").print_stats(top)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--transactions", type=int, default=15000)
    ap.add_argument("--seed", type=int, default=11)
    ap.add_argument("--max-offsets", type=int, default=20000)
    ap.add_argument("--top", type=int, default=30)
    args = ap.parse_args(argv)

    from libs.config.job import JobConfig
    from pipelines.replicate import build_query
    from pipelines.ship import main as cdc_ship
    from pipelines.job.spark_session import SessionOptions, build_session

    # build_query looks these names up when it runs: the profiled subclasses take their place
    assemble_stage.AssembleFn = ProfiledAssembleFn
    rows_stage.DecodeSegments = ProfiledDecodeSegments

    binlog, _ = simulated_binlog(args.transactions, args.seed)
    work = Path(tempfile.mkdtemp(prefix="worker-profile-run-"))
    spark = build_session(SessionOptions(app_name="worker-profile"))
    try:
        with private_broker(work / "kafka") as bootstrap:
            if cdc_ship(["--from-file", str(binlog), "--bootstrap", bootstrap, "--topic", "plain",
                         "--source", "sim"]) != 0:
                raise RuntimeError("cdc-ship failed")
            cfg = JobConfig(bootstrap=bootstrap, topic="plain", available_now=True,
                            delta_root=str(work / "delta"), checkpoint=str(work / "ckpt"),
                            max_offsets_per_trigger=args.max_offsets)
            t0 = time.perf_counter()
            query = build_query(spark, cfg)
            query.awaitTermination()
            elapsed = time.perf_counter() - t0
            records = sum(p["numInputRows"] for p in query.recentProgress)
            print(f"load {load_average()}; run {elapsed:.1f} s, {records} records, "
                  f"{len(query.recentProgress)} batches")
    finally:
        spark.stop()
    for stage in ("assemble", "rows"):
        report(stage, args.top)
    return 0


if __name__ == "__main__":
    sys.exit(main())

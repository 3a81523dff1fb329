"""cProfile of ONE DeltaApplier batch (the before/after figures of bench/README.md "Apply").

    .venv/bin/python bench/apply_profile.py [TRANSACTIONS] [BATCHES]   # default 5000 1

A minimal-image, no-DDL simulator workload (seed 3) decoded by libs/ (assemble_group +
decode_segment, no Spark), cut into BATCHES batches of whole transactions and handed to ONE
DeltaApplier batch after batch, each as a cached DataFrame, on an empty delta root (the
applier's classes are warmed on a separate root first). Only the LAST batch is profiled: with
BATCHES > 1 that is the steady state (tables exist, mirrors are warm). Prints the wall time and
the top of the profile by cumulative, then own, time (driver side: py4j waits are Spark's work).
"""
import cProfile
import dataclasses
import pstats
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main() -> None:
    import pyarrow as pa
    from pyspark.sql.pandas.types import to_arrow_schema

    from bench.apply_steady import decoded_batches
    from libs.config.job import JobConfig
    from libs.simulator.schema import replica_ddl, standard_tables
    from libs.targets import load_targets
    from pipelines.apply import DeltaApplier
    from pipelines.job.schemas import CHANGE_RECORD, spark_schema
    from pipelines.job.spark_session import SessionOptions, build_session

    n = int(sys.argv[1]) if len(sys.argv) > 1 else 5000
    batches = int(sys.argv[2]) if len(sys.argv) > 2 else 1
    spark = build_session(SessionOptions(app_name="apply-profile"))
    schema = spark_schema(CHANGE_RECORD)
    frames = []
    for changes in decoded_batches(n, batches):  # the same workload as apply_steady.py
        frames.append(spark.createDataFrame(pa.Table.from_pylist(changes,
                                                                 schema=to_arrow_schema(schema))).cache())
        frames[-1].count()
    df = frames[-1]
    work = Path(tempfile.mkdtemp(prefix="apply-profile-"))
    ddl = work / "targets.sql"
    ddl.write_text(replica_ddl(standard_tables("mariadb"), "sim"))
    cfg = JobConfig(delta_root=str(work / "delta"), target_ddl=str(ddl))
    catalog = load_targets(None, [str(ddl)])
    DeltaApplier(catalog, dataclasses.replace(cfg, delta_root=str(work / "warm")))(frames[0].limit(100), 0)
    applier = DeltaApplier(catalog, cfg)
    for batch_id, earlier in enumerate(frames[:-1]):
        applier(earlier, batch_id)
    t0 = time.perf_counter()
    profile = cProfile.Profile()
    profile.enable()
    applier(df, len(frames) - 1)
    profile.disable()
    print(f"apply: {df.count()} changes in {time.perf_counter() - t0:.1f} s; load average "
          f"{' '.join(Path('/proc/loadavg').read_text().split()[:3])}", flush=True)
    pstats.Stats(profile).sort_stats("cumulative").print_stats(30)
    pstats.Stats(profile).sort_stats("tottime").print_stats(20)
    spark.stop()
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()

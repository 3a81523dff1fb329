"""The job's VACUUM of a small table (pipelines/apply/maintenance.py) against Delta's plain VACUUM.

One Delta table of a few small files that left it (appends, then OPTIMIZE), vacuumed with
retention 0; then one more append and OPTIMIZE, so every VACUUM has files to delete. Rounds
alternate the two sides: Delta's defaults (the listing in 10,000 tasks), and the job's own
`TableMaintenance._vacuum` (the listing in the session's cores). Seconds per VACUUM, medians.

    .venv/bin/python bench/vacuum_listing.py [--rounds 3]
"""
from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.bench_support import commit_hash, load_average  # noqa: E402
from libs.config.job import WritesSettings  # noqa: E402
from libs.tables.table_location import TableLocation  # noqa: E402
from pipelines.apply.maintenance import TableMaintenance  # noqa: E402
from pipelines.job.spark_session import SessionOptions, build_session  # noqa: E402


def delta_default(spark, table: TableLocation) -> None:
    session = spark.newSession()
    session.conf.set("spark.databricks.delta.retentionDurationCheck.enabled", "false")
    session.sql(f"VACUUM {table.sql_ref()} RETAIN 0 HOURS").collect()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=3, help="VACUUMs per side")
    args = ap.parse_args(argv)
    spark = build_session(SessionOptions(app_name="vacuum-listing"))
    job = TableMaintenance(WritesSettings(vacuum_retention_hours=0))
    sides = {"delta default": delta_default, "job": lambda s, t: job._vacuum(s.newSession(), t)}
    print(f"vacuum_listing: commit {commit_hash()}, load average {load_average()}, "
          f"{spark.sparkContext.defaultParallelism} cores")
    seconds: dict[str, list[float]] = {side: [] for side in sides}
    with tempfile.TemporaryDirectory(prefix="vacuum-listing-") as tmp:
        table = TableLocation(path=str(Path(tmp) / "t"))
        for i in range(6):
            spark.range(i * 10, i * 10 + 10).write.format("delta").mode("append").save(table.path)
        for run in range(args.rounds):
            for side in sides if run % 2 == 0 else reversed(list(sides)):
                spark.range(1).write.format("delta").mode("append").save(table.path)
                spark.sql(f"OPTIMIZE {table.sql_ref()}").collect()
                started = time.monotonic()
                sides[side](spark, table)
                seconds[side].append(time.monotonic() - started)
                print(f"  round {run} {side:13s}: {seconds[side][-1]:5.1f} s", flush=True)
    for side, runs in seconds.items():
        print(f"vacuum_listing: {side:13s} median {statistics.median(runs):5.1f} s over {len(runs)} VACUUMs")
    print(f"vacuum_listing: load average after {load_average()}")
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Snapshot throughput, end to end (issue #16 acceptance): a private MariaDB loaded with
--rows rows over five tables (PK, composite PK, unique-only, keyless, BLOB/TEXT: the demo
database, libs/local/demo_database.py, which the onboarding tests use), then, in the same run:

  mariadb-dump --single-transaction of the database to /dev/null        (the yardstick)
  cdc-ship --snapshot: server -> topic (the project's Kafka broker)     (the shipper's part)
  cdc-replicate --available-now: topic -> Delta, targets from the source (the job's part)
  a plain Spark append of the same rows to new Delta tables        (issue #37 goal c's yardstick)

and prints rows/s of each and the shipper/mariadb-dump ratio (target >= 0.5). Every figure is
one run on this machine; compare two builds with farm-bench.

    .venv/bin/python bench/snapshot_bench.py [--rows 1000000] [--chunk-rows 5000]
"""
from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from libs.config.job import JobConfig  # noqa: E402
from libs.local.demo_database import create_script, sizes as table_sizes  # noqa: E402
from libs.local.kafka_broker import BrokerConfig, free_port_pair, start, stop  # noqa: E402
from libs.runtime.paths import KAFKA_JARS_DIR  # noqa: E402
from libs.local.mariadb_server import MariaDBServer  # noqa: E402

DB = "bench_snap"


def _timed(label: str, fn) -> float:
    t0 = time.monotonic()
    fn()
    seconds = time.monotonic() - t0
    print(f"{label}: {seconds:.1f} s", flush=True)
    return seconds


def _dump(server: MariaDBServer) -> None:
    binary = shutil.which("mariadb-dump") or shutil.which("mysqldump")
    subprocess.run([binary, f"--host={server.host}", f"--port={server.port}", f"--user={server.user}",
                    f"--password={server.password}", "--single-transaction", DB],
                   stdout=subprocess.DEVNULL, check=True)


def _ship(server: MariaDBServer, broker: BrokerConfig, chunk_rows: int, password_file: Path) -> None:
    from pipelines.ship import main
    rc = main(["--server", f"{server.host}:{server.port}", "--user", server.user, "--password-file",
               str(password_file), "--bootstrap", broker.bootstrap, "--topic", "bench", "--source", "bench",
               "--snapshot", "--include", rf"{DB}\..*", "--non-block",
               "--snapshot-chunk-rows", str(chunk_rows), "--progress", "30"])
    if rc != 0:
        raise SystemExit(f"cdc-ship exited {rc}")


def _replicate(broker: BrokerConfig, work: Path) -> None:
    from pipelines.replicate import build_query, make_applier
    from pipelines.job.spark_session import SessionOptions, build_session
    spark = build_session(SessionOptions(app_name="snapshot-bench", driver_memory="3g"))
    cfg = JobConfig(bootstrap=broker.bootstrap, topic="bench", delta_root=str(work / "delta"),
                    checkpoint=str(work / "ckpt"), available_now=True, tables={"include": [rf"{DB}\..*"]})
    query = build_query(spark, cfg, make_applier(cfg))
    query.awaitTermination()
    if query.exception() is not None:
        raise SystemExit(f"cdc-replicate failed: {query.exception()}")
    return spark


def _check_counts(spark, work: Path, sizes: dict[str, int]) -> None:
    """Every Delta table holds the rows the server has: a figure of a job that lost rows would
    mean nothing."""
    for table, key in (("t_pk", "n_pk"), ("t_cpk", "n_cpk"), ("t_uk", "n_uk"), ("t_nokey", "n_nokey"),
                       ("t_blob", "n_blob")):
        got = spark.read.format("delta").load(str(work / "delta" / f"{DB}__{table}")).count()
        print(f"Delta {DB}.{table}: {got:,} rows (server {sizes[key]:,})")
        if got != sizes[key]:
            raise SystemExit(f"Delta {DB}.{table} holds {got:,} rows, the server {sizes[key]:,}")


def _same_rows(spark, work: Path) -> dict:
    """The job's tables read back (all their columns, lineage included), held in memory."""
    return {t: spark.read.format("delta").load(str(work / "delta" / f"{DB}__{t}")).localCheckpoint()
            for t in ("t_pk", "t_cpk", "t_uk", "t_nokey", "t_blob")}


def _plain_append(frames: dict, work: Path) -> None:
    """The yardstick of issue #37 goal c: the same rows appended to new Delta tables by a plain
    Spark write, one table after another, in the session the job used (its start not counted)."""
    for table, rows in frames.items():
        rows.write.format("delta").mode("append").save(str(work / "plain" / table))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--chunk-rows", type=int, default=5000)
    ap.add_argument("--skip-delta", action="store_true", help="stop after the topic (no Spark job)")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="snapshot-bench-"))
    server = MariaDBServer.start(work / "mariadb")
    broker = BrokerConfig(jars_dir=KAFKA_JARS_DIR, data_dir=work / "kafka", port=free_port_pair())
    try:
        start(broker)
        sizes = table_sizes(args.rows)
        _timed(f"load {sum(sizes.values()):,} rows", lambda: server.sql(create_script(DB, sizes)))
        password_file = work / "password"
        password_file.write_text(server.password + "\n")
        password_file.chmod(0o600)
        rows = sum(sizes.values())
        dump_s = _timed("mariadb-dump --single-transaction > /dev/null", lambda: _dump(server))
        ship_s = _timed("cdc-ship --snapshot (server -> topic)",
                        lambda: _ship(server, broker, args.chunk_rows, password_file))
        print(f"rows: {rows:,}")
        print(f"mariadb-dump: {rows / dump_s:,.0f} rows/s")
        print(f"cdc-ship --snapshot: {rows / ship_s:,.0f} rows/s")
        print(f"ratio shipper / mariadb-dump: {dump_s / ship_s:.2f} (target >= 0.5)")
        if not args.skip_delta:
            spark = []
            delta_s = _timed("cdc-replicate (topic -> Delta)", lambda: spark.append(_replicate(broker, work)))
            print(f"cdc-replicate: {rows / delta_s:,.0f} rows/s (Spark session start included)")
            print(f"end to end (server -> topic -> Delta): {rows / (ship_s + delta_s):,.0f} rows/s")
            _check_counts(spark[0], work, sizes)
            frames = _same_rows(spark[0], work)
            plain_s = _timed("plain Spark append of the same rows", lambda: _plain_append(frames, work))
            print(f"cdc-replicate / plain append: {delta_s / plain_s:.2f} (issue #37 goal c: <= 2)")
    finally:
        stop(broker)
        server.stop()
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

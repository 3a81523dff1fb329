"""`scripts/dev run --mariadb` (cdc-onboard-demo): onboarding a living database, as a user meets it.

1. A private MariaDB (libs/local/mariadb_server.py) holding the demo database (libs/local/demo_database.py,
   --rows rows over five tables), and the project's Kafka broker.
2. A workload session writing MINIMAL row images, and `cdc-ship --snapshot` as a user runs it (a
   process of its own): the existing rows, then the binlog from the snapshot's position, followed.
3. `cdc-replicate` streaming into Delta, with no target DDL: the targets come from the source.
4. After --seconds: the workload stops, the shipper ships the binlog to its end, the job applies
   everything in the topic, and every Delta table is compared with the server's own SELECT, row for row
   (pipelines/delta/table_equality.py). Exit 0 when all are equal, 1 when one differs.
"""
from __future__ import annotations

import argparse
import random
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from libs.config.job import JobConfig
from libs.local.demo_database import TABLES, create_script, sizes, workload_transaction
from libs.local.kafka_broker import BrokerConfig, free_port_pair, start, stop
from libs.local.mariadb_server import MariaDBServer
from libs.runtime.paths import KAFKA_JARS_DIR

DB, TOPIC, SOURCE = "demo", "cdc-demo", "demo-mariadb"


def _say(line: str) -> None:
    print(f"cdc-onboard-demo: {line}", flush=True)


class _Workload(threading.Thread):
    """One session committing the demo workload (MINIMAL row images) until stopped."""

    def __init__(self, server: MariaDBServer, pause_s: float):
        super().__init__(daemon=True)
        self.server, self.pause_s, self.stopped, self.committed, self.error = (
            server, pause_s, threading.Event(), 0, None)

    def run(self) -> None:
        try:
            conn = self.server.connect()
            rng = random.Random(7)
            with conn.cursor() as cur:
                cur.execute("SET SESSION binlog_row_image = MINIMAL")
                while not self.stopped.is_set():
                    cur.execute("BEGIN")
                    for sql in workload_transaction(rng, self.committed, set(TABLES)):
                        cur.execute(sql.format(db=DB))
                    cur.execute("COMMIT")
                    self.committed += 1
                    time.sleep(self.pause_s)
            conn.close()
        except Exception as exc:  # noqa: BLE001 - reported by main
            self.error = exc

    def stop(self) -> None:
        self.stopped.set()
        self.join(30)
        if self.error is not None:
            raise SystemExit(f"cdc-onboard-demo: the workload failed: {self.error}")


def _ship_args(server: MariaDBServer, broker: BrokerConfig, password_file: Path) -> list[str]:
    return ["--server", f"{server.host}:{server.port}", "--user", server.user,
            "--password-file", str(password_file),
            "--bootstrap", broker.bootstrap, "--topic", TOPIC, "--source", SOURCE, "--snapshot",
            "--include", rf"{DB}\..*", "--progress", "10"]


def _compare(spark, server: MariaDBServer, delta_root: Path) -> bool:
    from pipelines.delta.table_equality import delta_rows, server_rows
    equal = True
    for table in TABLES:
        columns, expected = server_rows(server, DB, table)
        got = delta_rows(spark, str(delta_root / f"{DB}__{table}"), columns)
        same = got == expected
        equal &= same
        _say(f"{DB}.{table}: server {sum(expected.values()):,} rows, Delta {sum(got.values()):,} rows: "
             + ("equal" if same else f"DIFFERENT ({sum((expected - got).values()):,} rows missing in Delta, "
                                     f"{sum((got - expected).values()):,} rows not on the server)"))
    return equal


def run(work: Path, rows: int, seconds: float, pause_s: float) -> bool:
    from pipelines.replicate import build_query, make_applier
    from pipelines.ship import main as ship_main
    from pipelines.job.spark_session import SessionOptions, build_session

    server = MariaDBServer.start(work / "mariadb")
    broker = BrokerConfig(jars_dir=KAFKA_JARS_DIR, data_dir=work / "kafka", port=free_port_pair())
    shipper = None
    try:
        start(broker)
        server.sql(create_script(DB, sizes(rows)))
        _say(f"MariaDB at {server.host}:{server.port} holds {rows:,} rows in {DB}.{{{','.join(TABLES)}}}; "
             f"Kafka at {broker.bootstrap}; work directory {work}")
        password_file = work / "password"
        password_file.write_text(server.password + "\n")
        password_file.chmod(0o600)
        workload = _Workload(server, pause_s)
        workload.start()
        args = _ship_args(server, broker, password_file)
        _say("cdc-ship " + " ".join(args))
        shipper = subprocess.Popen([sys.executable, "-m", "pipelines.ship", *args])
        spark = build_session(SessionOptions(app_name="cdc-onboard-demo", driver_memory="3g"))
        cfg = JobConfig(bootstrap=broker.bootstrap, topic=TOPIC, delta_root=str(work / "delta"),
                        checkpoint=str(work / "checkpoint"), trigger_seconds=2.0,
                        tables={"include": [rf"{DB}\..*"]})
        query = build_query(spark, cfg, make_applier(cfg))
        _say(f"cdc-replicate follows {TOPIC} into {cfg.delta_root} (targets from the source) "
             f"for {seconds:.0f} s")
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline and query.isActive:
            time.sleep(min(10.0, max(0.0, deadline - time.monotonic())))
            done = (query.lastProgress or {}).get("batchId")
            _say(f"{workload.committed:,} workload transactions committed; job: "
                 + ("first batch running" if done is None else f"batch {done} done")
                 + f", {query.status['message']}")
        workload.stop()
        shipper.terminate()
        shipper.wait(60)
        if ship_main([*args, "--non-block"]) != 0:  # the binlog to its end
            raise SystemExit("cdc-onboard-demo: cdc-ship failed")
        _say(f"workload stopped after {workload.committed:,} transactions; the job catches up")
        query.processAllAvailable()  # every record in the topic now, applied (no batch cut short)
        query.stop()
        if query.exception() is not None:
            raise SystemExit(f"cdc-onboard-demo: cdc-replicate failed: {query.exception()}")
        return _compare(spark, server, work / "delta")
    finally:
        if shipper is not None and shipper.poll() is None:
            shipper.kill()
        stop(broker)
        server.stop()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=100_000, help="rows in the demo database before the snapshot")
    ap.add_argument("--seconds", type=float, default=30.0,
                    help="how long the workload runs while the job follows")
    ap.add_argument("--pause", type=float, default=0.01, help="seconds between workload transactions")
    ap.add_argument("--keep", action="store_true", help="keep the work directory (Delta tables, logs)")
    a = ap.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="cdc-onboard-demo-"))
    try:
        equal = run(work, a.rows, a.seconds, a.pause)
    finally:
        if not a.keep:
            shutil.rmtree(work, ignore_errors=True)
    _say("every Delta table equals the server's" if equal else "a Delta table differs from the server's")
    return 0 if equal else 1


if __name__ == "__main__":
    sys.exit(main())

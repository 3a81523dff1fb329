"""The processes of bench/chaos_restarts.py, each SIGKILLed and started again at once, and the
workload that writes through the server's restarts.

  mariadbd   libs/local/mariadb_server.py: kill() (its process group), restart() on its data dir,
             binlog and port (crash recovery)
  broker     the project's broker (libs/local/kafka_broker.py): its recorded pid's process group,
             then start() on the same data dir and port
  shipper    `cdc-ship --server --snapshot`, as a user runs it (bench_support.start_shipper): its
             process group (tests/integration/process_tree.py sigkill_tree)
  job        `cdc-replicate` (tests/integration/exactly_once/replicator.py Replicator): its process
             group and every descendant (PySpark's worker daemon has a group of its own)

Workloads: sysbench `oltp_read_write` (bench/oltp_sysbench.py; started again whenever it exits, as
it does when the server dies under it), or the demo database's transactions through PyMySQL
(libs/local/demo_database.py), reconnecting after each failure.
"""
from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import threading
import time
from pathlib import Path

import bench_support
from libs.local import kafka_broker
from libs.local.demo_database import TABLES as DEMO_TABLES, workload_transaction
from libs.local.kafka_broker import free_port_pair
from libs.shipper.file_source import binlog_sort_key
from libs.shipper.kafka_sink import last_record
from pipelines.kafka import broker_config
from tests.integration.exactly_once.replicator import STARTED, Replicator
from tests.integration.process_tree import sigkill_tree

KINDS = ("job", "shipper", "broker", "mariadbd")


class Broker:
    def __init__(self, data_dir: Path):
        self.cfg = broker_config(free_port_pair(), str(data_dir))

    @property
    def bootstrap(self) -> str:
        return self.cfg.bootstrap

    def start(self) -> None:
        kafka_broker.start(self.cfg, timeout=180.0)

    def proc_started(self) -> bool:
        return True

    def running(self) -> bool:
        return kafka_broker.status(self.cfg)["pid"] is not None

    def kill(self) -> None:
        pid = kafka_broker.status(self.cfg)["pid"]
        if pid is None:
            return
        os.killpg(pid, signal.SIGKILL)
        try:
            os.waitpid(pid, 0)  # our child: reaped, so its pid reads as gone
        except ChildProcessError:
            pass

    def stop(self) -> None:
        kafka_broker.stop(self.cfg)

    def log_tail(self) -> str:
        return bench_support.log_tail(self.cfg.log_file, 5)


class Shipper:
    """cdc-ship --server --snapshot of database `db` (records keyed by `db`), following."""

    def __init__(self, server, broker: Broker, work: Path, topic: str, db: str):
        self.server, self.broker, self.work, self.topic, self.db = server, broker, work, topic, db
        self.proc: subprocess.Popen | None = None
        self.log = work / "cdc-ship.log"

    def start(self) -> None:
        self.proc = bench_support.start_shipper(self.server, self.broker.bootstrap, self.work, self.topic,
                                                self.db)

    def proc_started(self) -> bool:
        return self.proc is not None

    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def kill(self) -> None:
        sigkill_tree(self.proc)

    def shipped_to(self, file: str, pos: int) -> bool:
        """Does the topic hold the source's binlog up to file:pos (a record, heartbeats too, there or on)?"""
        last = last_record(self.broker.bootstrap, self.topic, self.db, timeout=10.0)
        return last is not None and bool(last.binlog_file) and (
            binlog_sort_key(last.binlog_file), last.end_pos) >= (binlog_sort_key(file), pos)

    def resumes(self) -> int:
        """How many of its runs have read where the topic ends and resumed there (their first line)."""
        return self.log.read_text(errors="replace").count(": resuming at ") if self.log.exists() else 0

    def stop(self) -> int | None:
        """SIGTERM: cdc-ship flushes and exits 0. Its exit code."""
        bench_support.stop_process(self.proc)
        return None if self.proc is None else self.proc.returncode

    def log_tail(self) -> str:
        return bench_support.log_tail(self.log, 5)


class Job:
    """cdc-replicate, targets from the source, on one checkpoint across its restarts."""

    def __init__(self, work: Path, broker: Broker, topic: str, db: str, trigger_s: float):
        self.conf = work / "job.yaml"
        self.conf.write_text(f"trigger_seconds: {trigger_s}\ntables:\n  include: ['{db}\\..*']\n")
        self.replicator = Replicator(work, ["--bootstrap", broker.bootstrap, "--topic", topic,
                                            "--delta-root", str(work / "delta"),
                                            "--checkpoint", str(work / "ckpt")],
                                     checkpoint=work / "ckpt", delta_root=work / "delta")

    def start(self) -> None:
        self.replicator.start(self.conf)

    def proc_started(self) -> bool:
        return self.replicator.proc is not None

    def running(self) -> bool:
        return self.replicator.proc is not None and self.replicator.proc.poll() is None

    def started(self) -> bool:
        return STARTED in self.replicator.runs[-1].read_text(errors="replace")

    def kill(self) -> None:
        self.replicator.kill()

    def committed_offset(self, topic: str) -> int:
        """The topic offset the last committed batch read up to (-1: none committed)."""
        _planned, committed = self.replicator.batches()
        if committed < 0:
            return -1
        lines = (self.replicator.checkpoint / "query" / "offsets" / str(committed)).read_text().splitlines()
        ends = [json.loads(line).get(topic, {}) for line in lines[2:] if line.startswith("{")]
        return sum(int(v) for end in ends for v in end.values())

    def stop(self, timeout: float = 300.0) -> int | None:
        """SIGTERM: the running batch commits, the job exits 0 (`stopped after batch N`)."""
        proc = self.replicator.proc
        if proc is None or proc.poll() is not None:
            return None if proc is None else proc.returncode
        proc.terminate()
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()
        return proc.returncode

    def log_tail(self) -> str:
        return self.replicator.log_tail(5, dumps=False)


class DemoWorkload(threading.Thread):
    """The demo database's transactions (MINIMAL row images) in one session, until stopped;
    a failed one (the server died under it) is followed by a new connection."""

    def __init__(self, server, db: str, pause_s: float, seed: int):
        super().__init__(daemon=True)
        self.server, self.db, self.pause_s, self.rng = server, db, pause_s, random.Random(seed)
        self.stopped = threading.Event()
        self.committed = self.failed = 0
        self.describe = f"the demo database's transactions through PyMySQL, {pause_s:g} s apart"

    def _transaction(self, conn, i: int) -> None:
        with conn.cursor() as cur:
            cur.execute("BEGIN")
            for sql in workload_transaction(self.rng, i, set(DEMO_TABLES)):
                cur.execute(sql.format(db=self.db))
            cur.execute("COMMIT")

    def run(self) -> None:
        conn, i = None, 0
        while not self.stopped.is_set():
            i += 1  # never twice: a COMMIT whose answer was lost may have committed
            try:
                if conn is None:
                    conn = self.server.connect()
                    conn.cursor().execute("SET SESSION binlog_row_image = MINIMAL")
                self._transaction(conn, i)
                self.committed += 1
            except Exception:  # noqa: BLE001 - the server went away (or a deadlock): a new session
                self.failed += 1
                conn = _closed(conn)
                self.stopped.wait(0.5)
            self.stopped.wait(self.pause_s)
        _closed(conn)

    def stop(self) -> None:
        self.stopped.set()
        self.join(60)

    def summary(self) -> str:
        return f"{self.committed:,} transactions committed, {self.failed} failed (the server's restarts)"


def _closed(conn) -> None:
    if conn is not None:
        try:
            conn.close()
        except Exception:  # noqa: BLE001 - a connection the server dropped
            pass


class SysbenchWorkload(threading.Thread):
    """sysbench run (oltp_read_write, --rate, 2 threads) again and again until stopped: a run ends
    when the server dies under it; the next starts once the server answers."""

    def __init__(self, sysbench, server, rate: float, log: Path):
        super().__init__(daemon=True)
        self.sysbench, self.server, self.rate, self.log = sysbench, server, rate, log
        self.stopped = threading.Event()
        self.runs = self.failed = 0
        self.proc: subprocess.Popen | None = None
        self.describe = f"sysbench {sysbench.script} --rate={rate:g} --threads=2"

    def run(self) -> None:
        while not self.stopped.is_set():
            args = self.sysbench.args("run", "--threads=2", "--time=0", f"--rate={self.rate:g}",
                                      "--report-interval=0")
            with open(self.log, "ab") as out:
                self.proc = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT,
                                             start_new_session=True)
            self.runs += 1
            if self.proc.wait() != 0 and not self.stopped.is_set():
                self.failed += 1
            self.stopped.wait(1.0)

    def stop(self) -> None:
        self.stopped.set()
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
        self.join(60)

    def summary(self) -> str:
        return f"{self.runs} sysbench runs, {self.failed} of them ended by the server's restart"


def until(predicate, timeout: float, what: str, tick=lambda: None, every: float = 0.5) -> float:
    """Seconds until `predicate()` holds, calling `tick()` each round (restarts of processes that
    ended by themselves); RuntimeError naming `what` after `timeout`."""
    began = time.monotonic()
    while not predicate():
        tick()
        if time.monotonic() - began > timeout:
            raise RuntimeError(f"chaos: timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(every)
    return time.monotonic() - began

"""Ride through restarts (issue #56 item 5): kill -9 of every process of a running pipeline, over
and over, while a workload writes, then the tables equal the server's and no change is twice.

    .venv/bin/python bench/chaos_restarts.py [--events 20] [--seed N] [--workload sysbench|demo]
                                             [--rows N] [--rate TPS] [--gap MIN MAX] [--keep]

A private MariaDB (libs/local/mariadb_server.py; binlog ROW, MINIMAL images with sysbench), the
project's broker, `cdc-ship --server --snapshot` following the database and `cdc-replicate` (targets
from the source), as a new user runs them (bench/chaos_parts.py). The workload: sysbench
`oltp_read_write` at --rate (installed with apt-get when missing), or `demo`, the demo database's
transactions through PyMySQL. Then a seeded schedule: --events kills of each kind (job, shipper,
broker, mariadbd) in a drawn order, one at a time, a drawn pause of --gap seconds before each; each
kill is a SIGKILL of the process (and its process group, for the job every descendant too), and the
process is started again at once (mariadbd on its data dir, binlog and port: crash recovery). The
next kill waits until the pipeline is whole again (the job's query started, the topic holding the
server's position). A process that ends by itself is counted, named with its last line, and
started again. Then the drain: the workload stops, the shipper ships the server's binlog to its
end and is stopped (SIGTERM), the job commits everything the topic holds and is stopped (SIGTERM).

Figures: the kills of each kind and how long the pipeline took to be whole again; every Delta
table against the server's `SELECT *` (pipelines/delta/table_equality.py); the change log:
entries, the same change (source, trx_id, change_seq) twice, and per (GTID, table, operation) against
the server's own decoder over its binlog (`mariadb-binlog -vv`: missing, extra); `_cdc_progress`'s
last GTID against `@@gtid_binlog_pos`; quarantined rows; the processes that ended by themselves.
The suite runs it with one kill of each kind (tests/integration/production/test_chaos_restarts.py).
"""
from __future__ import annotations

import argparse
import collections
import random
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

BENCH = Path(__file__).resolve().parent
for _path in (str(BENCH.parent), str(BENCH)):  # also when a test loads this file by its path
    if _path not in sys.path:
        sys.path.insert(0, _path)

import bench_support  # noqa: E402
import chaos_parts  # noqa: E402
from chaos_parts import KINDS, Broker, Job, Shipper, until  # noqa: E402

TOPIC = "chaos"
JOB_START_S, WHOLE_S, DRAIN_S = 900.0, 600.0, 1800.0  # bounds for a loaded 2-core machine


@dataclass(frozen=True)
class Options:
    work: Path
    events: int = 20          # kills of each kind
    seed: int = 1
    workload: str = "sysbench"
    rows: int = 10_000        # sysbench: rows per table (4 tables); demo: rows in all
    rate: float = 20.0        # sysbench --rate; demo: transactions a second, at most
    gap_s: tuple[float, float] = (5.0, 20.0)
    trigger_s: float = 1.0


@dataclass
class Figures:
    seed: int
    workload: str = ""
    kills: collections.Counter = field(default_factory=collections.Counter)
    whole_again_s: dict[str, list[float]] = field(default_factory=lambda: {k: [] for k in KINDS})
    ended_by_themselves: list[str] = field(default_factory=list)
    shipper_reconnects: int = 0  # its `connection lost (...); reconnecting` lines, every run
    tables: dict[str, tuple[int, int, bool]] = field(default_factory=dict)  # server rows, Delta rows, equal
    change_log: int = 0
    twice: int = 0
    missing: int = 0
    extra: int = 0
    binlog_changes: int = 0
    progress_at_server_gtid: bool = False
    quarantined: int = 0
    seconds: float = 0.0
    phases_s: dict[str, float] = field(default_factory=dict)  # set-up, schedule, drain, check

    @property
    def all_equal(self) -> bool:
        return bool(self.tables) and all(equal for _, _, equal in self.tables.values())


def _say(line: str) -> None:
    print(f"chaos: {line}", flush=True)


class Chaos:
    """The pipeline under test, its schedule and its drain."""

    def __init__(self, opts: Options, figures: Figures):
        self.opts, self.figures = opts, figures
        self.db = "sbtest" if opts.workload == "sysbench" else "demo"
        self.server = self.broker = self.shipper = self.job = self.workload = None
        self.first_file = ""

    # -- set-up ------------------------------------------------------------------------------
    def set_up(self) -> None:
        work, o = self.opts.work, self.opts
        self.server = _start_server(work, o.workload)
        self.broker = Broker(work / "kafka")
        self.broker.start()
        self.workload = _fill(self.server, self.db, o, work)
        self.figures.workload = self.workload.describe
        self.first_file = self.server.flush_binlogs()  # the binlog from here on is the oracle's
        self.shipper = Shipper(self.server, self.broker, work, TOPIC, self.db)
        self.shipper.start()
        self.job = Job(work, self.broker, TOPIC, self.db, o.trigger_s)
        self._whole("the snapshot in the topic")
        self.job.start()
        self.workload.start()
        until(self.job.started, JOB_START_S, "the job's query", self.restart_the_ended)
        _say(f"MariaDB {self.server.host}:{self.server.port}, broker {self.broker.bootstrap}, work {work}; "
             f"workload: {self.workload.describe}; shipper following, job reading")

    # -- the schedule ------------------------------------------------------------------------
    def run_schedule(self) -> None:
        rng = random.Random(self.opts.seed)
        kinds = [kind for kind in KINDS for _ in range(self.opts.events)]
        rng.shuffle(kinds)
        began = time.monotonic()
        for n, kind in enumerate(kinds, 1):
            pause = rng.uniform(*self.opts.gap_s)
            deadline = time.monotonic() + pause
            until(lambda: time.monotonic() >= deadline, pause + 60, "the pause", self.restart_the_ended)
            whole = self.kill_and_restart(kind)
            self.figures.kills[kind] += 1
            self.figures.whole_again_s[kind].append(whole)
            _say(f"event {n}/{len(kinds)} at {time.monotonic() - began:.0f} s: kill -9 {kind}, "
                 f"the pipeline whole again after {whole:.1f} s")

    def kill_and_restart(self, kind: str) -> float:
        part = {"job": self.job, "shipper": self.shipper, "broker": self.broker}.get(kind)
        resumes, killed = self.shipper.resumes(), time.monotonic()
        if kind == "mariadbd":
            self.server.kill()
            self.server.restart()
        else:
            part.kill()
            part.start()
        if kind == "job":
            until(self.job.started, JOB_START_S, "the job's query", self.restart_the_ended)
            return time.monotonic() - killed
        if kind == "shipper":  # the new one has read where the topic ends (a heartbeat there is not it)
            until(lambda: self.shipper.resumes() > resumes, WHOLE_S, "the shipper's resume",
                  self.restart_the_ended)
        self._whole(f"the topic at the server's position after the {kind}'s restart")
        return time.monotonic() - killed

    def _whole(self, what: str) -> None:
        file, pos = self.server.master_status()
        until(lambda: _quietly(self.shipper.shipped_to, file, pos), WHOLE_S, what, self.restart_the_ended)

    def restart_the_ended(self) -> None:
        """A process that ended by itself: counted, named with its last lines, started again."""
        for kind, part in (("mariadbd", None), ("broker", self.broker), ("shipper", self.shipper),
                           ("job", self.job)):
            if kind == "mariadbd" and self.server.process.poll() is not None:
                self._ended(kind, bench_support.log_tail(self.server.error_log, 1).splitlines())
                self.server.restart()
            elif part is not None and part.proc_started() and not part.running():
                self._ended(kind, part.log_tail().splitlines()[-2:])
                part.start()

    def _ended(self, kind: str, last: list[str]) -> None:
        self.figures.ended_by_themselves.append(f"{kind}: {' / '.join(last)}")
        _say(f"{kind} ENDED BY ITSELF: {' / '.join(last)}; started again")

    # -- the drain ---------------------------------------------------------------------------
    def drain(self) -> list[str]:
        """Workload stopped, binlog shipped to its end, everything in Delta; the binlog files written
        since the snapshot."""
        self.workload.stop()
        self.figures.workload += f" ({self.workload.summary()})"
        end_file = self.server.flush_binlogs()
        self._whole("the topic at the server's end")
        code = self.shipper.stop()
        shipped = self.shipper.log.read_text(errors="replace")
        self.figures.shipper_reconnects = shipped.count("connection lost")
        if code != 0:
            self.figures.ended_by_themselves.append(f"shipper: exit {code} on SIGTERM")
        high = _high_watermark(self.broker.bootstrap, TOPIC)
        seconds = until(lambda: self.job.committed_offset(TOPIC) >= high, DRAIN_S,
                        f"the job's commit of offset {high}", self._job_alive)
        code = self.job.stop()
        if code != 0:
            self.figures.ended_by_themselves.append(f"job: exit {code} on SIGTERM: {self.job.log_tail()}")
        _say(f"drained: the job committed the topic's {high:,} records {seconds:.0f} s after the shipper "
             f"reached the server's end")
        names = [row[0] for row in self.server.query("SHOW BINARY LOGS")]
        return names[names.index(self.first_file):names.index(end_file)]

    def _job_alive(self) -> None:
        if not self.job.running():
            self._ended("job", self.job.log_tail().splitlines()[-2:])
            self.job.start()

    def tear_down(self) -> None:
        for step in (lambda: self.workload.stop(), lambda: self.shipper.stop(),
                     lambda: self.job.running() and self.job.kill(), lambda: self.broker.stop(),
                     lambda: self.server.stop()):
            try:
                step()
            except Exception:  # noqa: BLE001 - a part never started, or already gone
                pass


def _quietly(check, *args) -> bool:
    try:
        return check(*args)
    except Exception:  # noqa: BLE001 - the broker is restarting: not yet
        return False


def _high_watermark(bootstrap: str, topic: str) -> int:
    from confluent_kafka import Consumer, TopicPartition

    from libs.shipper.kafka_sink import watermarks
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "chaos-drain"})
    try:
        return watermarks(consumer, TopicPartition(topic, 0), 30.0)[1]
    finally:
        consumer.close()


def _start_server(work: Path, workload: str):
    if workload == "sysbench":
        from oltp_sysbench import start_server
        return start_server(work / "mariadb")
    from libs.local.mariadb_server import MariaDBServer
    return MariaDBServer.start(work / "mariadb")


def _fill(server, db: str, o: Options, work: Path):
    """The database's first rows (in the snapshot), and the workload that writes on (not started)."""
    if o.workload == "sysbench":
        from oltp_sysbench import Sysbench, ensure_sysbench
        sysbench = Sysbench(ensure_sysbench(), server.host, server.port, server.user, server.password,
                            tables=4, rows=o.rows)
        sysbench.prepare()
        return chaos_parts.SysbenchWorkload(sysbench, server, o.rate, work / "sysbench.log")
    from libs.local.demo_database import create_script, sizes
    server.sql(create_script(db, sizes(o.rows)))
    return chaos_parts.DemoWorkload(server, db, 1.0 / o.rate, o.seed)


def run(opts: Options, spark_of=None) -> Figures:
    """The whole run; `spark_of()` gives the Spark session the check reads Delta with, once every
    process of the pipeline is gone (default: a local session of its own)."""
    from chaos_check import check
    figures, began = Figures(opts.seed), time.monotonic()
    chaos = Chaos(opts, figures)

    def timed(phase: str, step):
        started = time.monotonic()
        out = step()
        figures.phases_s[phase] = time.monotonic() - started
        return out

    try:
        timed("set-up", chaos.set_up)
        timed("schedule", chaos.run_schedule)
        files = timed("drain", chaos.drain)
        timed("check", lambda: check(chaos, files, spark_of, figures))
    finally:
        chaos.tear_down()
    figures.seconds = time.monotonic() - began
    report(figures)
    return figures


def report(f: Figures) -> None:
    _say(f"seed {f.seed}; workload: {f.workload}; {f.seconds:.0f} s in all ("
         + ", ".join(f"{phase} {s:.0f} s" for phase, s in f.phases_s.items()) + ")")
    for kind in KINDS:
        back = sorted(f.whole_again_s[kind])
        if back:
            _say(f"kill -9 {kind}: {f.kills[kind]} times; whole again after {back[len(back) // 2]:.1f} s "
                 f"(median), {back[-1]:.1f} s (longest)")
    _say("ended by themselves: " + ("; ".join(f.ended_by_themselves) or "none")
         + f"; the shipper's reconnection attempts: {f.shipper_reconnects}")
    equal = sum(1 for _, _, e in f.tables.values() if e)
    _say(f"tables equal to the server's SELECT: {equal} of {len(f.tables)} "
         f"({sum(s for s, _, _ in f.tables.values()):,} server rows)")
    _say(f"change log: {f.change_log:,} entries, {f.twice} changes twice; against the server's binlog "
         f"({f.binlog_changes:,} row changes): {f.missing} missing, {f.extra} extra")
    _say(f"_cdc_progress at the server's last GTID: {'yes' if f.progress_at_server_gtid else 'NO'}; "
         f"quarantined rows: {f.quarantined}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--events", type=int, default=20, help="kills of each kind")
    ap.add_argument("--seed", type=int, default=None, help="default: drawn, and printed")
    ap.add_argument("--workload", choices=("sysbench", "demo"), default="sysbench")
    ap.add_argument("--rows", type=int, default=10_000, help="sysbench: rows per table; demo: rows in all")
    ap.add_argument("--rate", type=float, default=20.0, help="transactions a second")
    ap.add_argument("--gap", type=float, nargs=2, default=(5.0, 20.0), metavar=("MIN", "MAX"),
                    help="seconds before each kill, drawn between MIN and MAX")
    ap.add_argument("--work", type=Path, help="work directory (default: a new temporary one)")
    ap.add_argument("--keep", action="store_true", help="keep the work directory")
    a = ap.parse_args(argv)
    seed = a.seed if a.seed is not None else random.SystemRandom().randrange(2**31)
    work = a.work or Path(tempfile.mkdtemp(prefix="cdc-chaos-"))
    work.mkdir(parents=True, exist_ok=True)
    _say(f"seed {seed} (--seed {seed} repeats the schedule); work directory {work}")
    try:
        f = run(Options(work, a.events, seed, a.workload, a.rows, a.rate, tuple(a.gap)))
    finally:
        if not a.keep:
            shutil.rmtree(work, ignore_errors=True)
    ok = (f.all_equal and not f.twice and not f.missing and not f.extra and not f.ended_by_themselves
          and f.progress_at_server_gtid)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

"""Keep up with a real OLTP database (issue #37 goals a, b and c's measurable parts): Debian's
sysbench 1.0.20 `oltp_read_write` on a private MariaDB 10.11 (binlog ROW, binlog_row_image
MINIMAL, binlog_annotate_row_events ON), shipped by `cdc-ship --server --snapshot` through the
project's Kafka broker and followed by `cdc-replicate` (no target DDL: targets from the source).

    .venv/bin/python bench/oltp_bench.py [--tables 4 --rows 1000000 --backlog-seconds 60
                                          --live-seconds 60 --rate 50] [--quick] [--keep]
                                          [--dv-commits] [--copy-max-rows N]
    --quick: 4 x 20,000 rows, 15 s phases (validation)
    --dv-commits: writes.deletion_vector_commits; --copy-max-rows: target_copy_max_rows

Phases, each printing a figure line (command, figure, load average, commit):

1 prepare   sysbench prepare (before any capture), then shipper and job started together:
            seconds from their start until every row is visible in Delta (the tables' logs:
            live files' numRecords minus deletion vectors). The job is stopped; then a plain
            Spark append of the same rows (the job's Delta tables read, data columns only,
            appended to new Delta tables one after the other, in this process' own session built
            beforehand, with the job stopped): the ratio snapshot / plain append (goal c: <= 2).
2 backlog   with the job stopped, sysbench unthrottled (2 threads) for --backlog-seconds; row
            changes = the server's Handler_write + _update + _delete; the job started;
            drain rate = row changes / (when the batch whose _cdc_progress row reached the
            server's position at the load's end was visible - the job's start); also without
            the Spark start-up (from the first backlog batch's start). Goal >= 2,000/s.
3 live      sysbench --rate for --live-seconds with the job running. Commit-to-visible: this
            process polls the server's binlog position (SHOW MASTER STATUS) every 0.1 s; the
            transactions that committed between two polls are visible at the first batch whose
            _cdc_progress row reached the later poll's position; their latency is counted as
            that batch's visibility minus the EARLIER poll (an upper bound, by <= 0.1 s).
            p50/p99/max over those poll intervals; drain = seconds from the load's end until
            the server's last position is visible (goals: p99 <= 10 s, drain <= 30 s).
4 equality  the job stopped, every table against the server's SELECT * (all columns, all rows,
            as multisets: pipelines/delta/table_equality.py); OK or the first differences.
5 size      per table rows, live files and bytes (the log), files and bytes on disk (all data
            files, live or not, and the _delta_log); bytes each backlog/live batch wrote to a
            table (its commit's add actions: data files + deletion vector files) against the
            changed rows' size (rows of the batch and table in _cdc_change_log x the table's
            average row as data: 8 bytes of INTs + the CHARs' characters) (goal b: <= 20x);
            then each table's bytes on disk against the same table after OPTIMIZE + VACUUM
            RETAIN 0 HOURS run by the bench (goal b: <= 2x; `--live-seconds 1800` for its 30 minutes).

The batches' timeline (where the seconds go: before the first target commit = read, decode,
assemble, replay; the target commits; the progress append) is printed for phases 2 and 3.
Not a test: a benchmark; it starts and stops its own server, broker, shipper and job.
"""
from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from bench_support import (checkout_env, commit_hash, load_average, log_tail, private_broker,  # noqa: E402
                           spawn, start_shipper, stop_process, wait_shipper_following)
from oltp_delta import JobTables  # noqa: E402
from oltp_report import (Figures, batch_timeline, compaction_figures, equality, job_batches,  # noqa: E402
                         latency_figures, size_figures)
from oltp_sysbench import DB, Sysbench, ensure_sysbench, row_changes, start_server  # noqa: E402

from libs.local.mariadb_server import MariaDBServer  # noqa: E402

TOPIC = "binlog"
POLL_S = 0.1


class Run:
    """The server, broker, shipper and job of one bench run, and what it measured."""

    def __init__(self, args, work: Path, server: MariaDBServer, bootstrap: str, root: Path = ROOT):
        """`root`: the checkout whose cdc-ship and cdc-replicate run (default: this one)."""
        self.args, self.work, self.server, self.bootstrap, self.root = args, work, server, bootstrap, root
        self.table_names = [f"sbtest{i}" for i in range(1, args.tables + 1)]
        self.delta = JobTables.under(work / "delta", DB, self.table_names)
        self.sysbench = Sysbench(ensure_sysbench(), server.host, server.port, server.user, server.password,
                                 args.tables, args.rows)
        self.figures = Figures(commit_hash(root))
        self.job = self.shipper = self.spark = None
        self.job_log = work / "cdc-replicate.log"

    # -- processes ---------------------------------------------------------------------------
    def start_job(self) -> float:
        conf = self.work / "job.yaml"
        writes = "writes:\n  deletion_vector_commits: true\n" if self.args.dv_commits else ""
        copy = f"target_copy_max_rows: {self.args.copy_max_rows}\n" if self.args.copy_max_rows else ""
        conf.write_text(f"trigger_seconds: 1\ntables:\n  include: ['{DB}\\..*']\n{writes}{copy}")
        started = time.time()
        self.job = spawn([str(Path(sys.executable).parent / "cdc-replicate"), "--conf", str(conf),
                          "--bootstrap", self.bootstrap, "--topic", TOPIC,
                          "--delta-root", str(self.work / "delta"),
                          "--checkpoint", str(self.work / "ckpt")], self.job_log, self.root)
        return started

    def stop_job(self) -> None:
        stop_process(self.job)
        self.job = None

    def tear_down(self) -> None:
        """The job, the shipper and this process' Spark session stopped."""
        self.stop_job()
        stop_process(self.shipper)
        if self.spark is not None:
            self.spark.stop()

    def check_alive(self) -> None:
        for name, proc, log in (("cdc-replicate", self.job, self.job_log),
                                ("cdc-ship", self.shipper, self.work / "cdc-ship.log")):
            if proc is not None and proc.poll() is not None:
                raise SystemExit(f"{name} exited {proc.returncode}:\n{log_tail(log)}")

    def wait_covered(self, file: str, pos: int) -> tuple[int, float]:
        """(batch, visible_at) of the first batch that applied the server's binlog up to (file, pos),
        once that batch has ended (its progress line)."""
        deadline = time.monotonic() + self.args.timeout
        while (found := self.delta.covered_at(file, pos)) is None:
            self.check_alive()
            if time.monotonic() > deadline:
                raise SystemExit(f"job wedged: {file}:{pos} not applied after {self.args.timeout:.0f} s:\n"
                                 f"{log_tail(self.job_log)}")
            time.sleep(0.25)
        self.wait_batch_done(found[0])
        return found

    def wait_batch_done(self, batch: int) -> None:
        """Until the job's progress line of `batch` (printed once the trigger has ended)."""
        deadline = time.monotonic() + self.args.timeout
        while batch not in job_batches(self.job_log):
            self.check_alive()
            if time.monotonic() > deadline:
                raise SystemExit(f"job wedged: batch {batch} not ended after {self.args.timeout:.0f} s")
            time.sleep(0.5)

    def session(self):
        if self.spark is None:
            from pipelines.job.spark_session import SessionOptions, build_session
            self.spark = build_session(SessionOptions(app_name="oltp-bench", driver_memory="2g"))
        return self.spark

    # -- phases --------------------------------------------------------------------------------
    def prepare(self) -> None:
        a = self.args
        cmd = f"sysbench oltp_read_write --tables={a.tables} --table-size={a.rows} prepare"
        t0 = time.monotonic()
        self.sysbench.prepare()
        self.figures.line("prepare", cmd, "sysbench prepare", f"{time.monotonic() - t0:.1f} s")
        t0 = time.time()
        self.shipper = start_shipper(self.server, self.bootstrap, self.work, TOPIC, DB, self.root)
        self.start_job()
        wait_shipper_following(self.server, self.bootstrap, TOPIC, DB, self.shipper,
                               self.work / "cdc-ship.log", timeout=a.timeout)
        shipped = time.time() - t0
        deadline, first = time.monotonic() + a.timeout, None
        while True:
            self.check_alive()
            rows = self.delta.refresh().rows()
            if first is None and any(rows.values()):
                first = time.time() - t0
            if all(n == a.rows for n in rows.values()):
                break
            if time.monotonic() > deadline:
                raise SystemExit(f"snapshot not visible after {a.timeout:.0f} s: {rows}\n"
                                 f"{log_tail(self.job_log)}")
            time.sleep(0.5)
        snapshot_s = max(c.mtime for log in self.delta.logs.values() for c in log.commits.values()) - t0
        last = max(b for b in self.delta.visible_at())
        self.wait_batch_done(last)  # stopped after its progress row, not inside it
        total = a.tables * a.rows
        cmd = "cdc-ship --server --snapshot + cdc-replicate"
        self.figures.line("snapshot", cmd, "shipper following (snapshot in the topic)", f"{shipped:.1f} s")
        self.figures.line("snapshot", cmd, "first rows visible", f"{first:.1f} s")
        self.figures.line("snapshot", cmd,
                          f"all {total:,} rows visible (from start, Spark start-up included)",
                          f"{snapshot_s:.1f} s ({total / snapshot_s:,.0f} rows/s)")
        self.stop_job()
        batch_timeline(self.delta, job_batches(self.job_log), 0, last, "snapshot", self.job_log)
        spark = self.session()
        t0 = time.monotonic()
        for name, path in self.delta.targets.items():
            (spark.read.format("delta").load(str(path)).select("id", "k", "c", "pad")
             .write.format("delta").mode("append").save(str(self.work / "plain" / name)))
        plain = time.monotonic() - t0
        self.figures.line("snapshot", "spark.read.delta(target).select(data columns).write.append",
                          "plain Spark append of the same rows",
                          f"{plain:.1f} s ({total / plain:,.0f} rows/s)")
        self.figures.line("snapshot", "ratio", "snapshot / plain append (goal c <= 2)",
                          f"{snapshot_s / plain:.2f}", met=snapshot_s / plain <= 2)

    def backlog(self) -> None:
        a = self.args
        before = max(self.delta.refresh().visible_at(), default=-1)
        c0 = row_changes(self.server)
        run = self.sysbench.run(a.backlog_seconds, threads=a.threads)
        changes = row_changes(self.server) - c0
        file, pos = self.server.master_status()
        self.figures.line("backlog", f"sysbench oltp_read_write --threads={a.threads} "
                          f"--time={a.backlog_seconds:g} run (job stopped)", "load written",
                          f"{run.transactions:,} trx ({run.tps:.0f}/s), {changes:,} row changes, "
                          f"{run.ignored_errors} ignored errors")
        started = self.start_job()
        last, visible = self.wait_covered(file, pos)
        drain = visible - started
        batches, visible_at = job_batches(self.job_log), self.delta.visible_at()
        first = min(b for b in visible_at if b > before)
        first_start = visible_at[first] - batches.get(first, (0, 0.0))[1]
        cmd = "cdc-replicate (restarted)"
        self.figures.line("backlog", cmd, f"drained in batches {first}..{last}, from the job's start",
                          f"{drain:.1f} s: {changes / drain:,.0f} row changes/s (goal >= 2,000)",
                          met=changes / drain >= 2000)
        self.figures.line("backlog", cmd, "the same from the first backlog batch's start (no Spark start-up)",
                          f"{visible - first_start:.1f} s: "
                          f"{changes / (visible - first_start):,.0f} row changes/s")
        self.phase_batches = {"backlog": (first, last)}
        batch_timeline(self.delta, batches, first, last, "backlog", self.job_log)

    def live(self) -> None:
        a = self.args
        before = max(self.delta.refresh().visible_at(), default=-1)
        polls: list[tuple[float, str, int]] = []
        stop = threading.Event()

        def poll() -> None:
            conn = self.server.connect()
            try:
                with conn.cursor() as cur:
                    while not stop.is_set():
                        cur.execute("SHOW MASTER STATUS")
                        row = cur.fetchone()
                        polls.append((time.time(), row[0], int(row[1])))
                        stop.wait(POLL_S)
            finally:
                conn.close()

        poller = threading.Thread(target=poll, daemon=True, name="binlog-position-poll")
        poller.start()
        c0 = row_changes(self.server)
        run = self.sysbench.run(a.live_seconds, rate=a.rate, threads=a.threads)
        ended = time.time()
        changes = row_changes(self.server) - c0
        file, pos = self.server.master_status()
        last, visible = self.wait_covered(file, pos)
        stop.set()
        poller.join()
        cmd = (f"sysbench oltp_read_write --threads={a.threads} --rate={a.rate:g} "
               f"--time={a.live_seconds:g} run")
        self.figures.line("live", cmd, "load written", f"{run.transactions:,} trx ({run.tps:.1f}/s), "
                          f"{changes:,} row changes ({changes / run.seconds:.0f}/s)")
        p50, p99, worst, n = latency_figures(self.delta, polls)
        self.figures.line("live", cmd, f"commit-to-visible over {n} poll intervals (upper bounds)",
                          f"p50 {p50:.1f} s, p99 {p99:.1f} s, max {worst:.1f} s (goal p99 <= 10)",
                          met=p99 <= 10)
        self.figures.line("live", cmd, "drain after the load stopped",
                          f"{visible - ended:.1f} s (goal <= 30)", met=visible - ended <= 30)
        self.phase_batches["live"] = (before + 1, last)
        batch_timeline(self.delta, job_batches(self.job_log), before + 1, last, "live", self.job_log)

    def check_equal(self) -> bool:
        self.stop_job()
        ok = equality(self.session(), self.server, self.delta, self.figures)
        return ok

    def sizes(self) -> None:
        size_figures(self.session(), self.server, self.delta, self.phase_batches, self.figures)
        compaction_figures(self.session(), self.delta, self.figures)


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tables", type=int, default=4)
    ap.add_argument("--rows", type=int, default=1_000_000, help="rows per table (sysbench --table-size)")
    ap.add_argument("--backlog-seconds", type=float, default=60.0)
    ap.add_argument("--live-seconds", type=float, default=60.0)
    ap.add_argument("--rate", type=float, default=50.0, help="live phase: sysbench --rate (transactions/s)")
    ap.add_argument("--threads", type=int, default=2, help="sysbench --threads")
    ap.add_argument("--quick", action="store_true", help="4 x 20,000 rows, 15 s phases")
    ap.add_argument("--timeout", type=float, default=3600.0, help="per wait for the job")
    ap.add_argument("--keep", action="store_true", help="keep the work directory (logs, Delta tables)")
    ap.add_argument("--dv-commits", action="store_true",
                    help="the job writes with writes.deletion_vector_commits (issue #57 item 3)")
    ap.add_argument("--copy-max-rows", type=int, default=0,
                    help="the job's target_copy_max_rows: keyed copies of the tables (issue #57)")
    args = ap.parse_args(argv)
    if args.quick:
        args.rows, args.backlog_seconds, args.live_seconds = 20_000, 15.0, 15.0
    return args


def main(argv=None) -> int:
    args = parse_args(argv)
    os.environ.update(checkout_env())  # this process' Spark session and its workers too
    work = Path(tempfile.mkdtemp(prefix="oltp-bench-"))
    print(f"oltp bench: HEAD {commit_hash()}, load average {load_average()}, work {work}", flush=True)
    server = start_server(work / "mariadb")
    run, ok = None, False
    try:
        with private_broker(work / "kafka") as bootstrap:
            run = Run(args, work, server, bootstrap)
            try:
                run.prepare()
                run.backlog()
                run.live()
                ok = run.check_equal()
                run.sizes()
            finally:
                run.tear_down()
    finally:
        server.stop()
        if run is not None:
            run.figures.table()
        if args.keep:
            print(f"work directory kept: {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

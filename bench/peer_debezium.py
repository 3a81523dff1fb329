"""Ours vs what users build today (issue #21 goal 5), side by side in ONE run on this machine:

  peer: MariaDB -> Debezium 3.1 MariaDB connector (Kafka Connect standalone) -> JSON topics
        -> Spark Structured Streaming, foreachBatch: latest change per key, MERGE into Delta
        (bench/peer_connect.py, bench/peer_merge_job.py); its tables have deletion vectors, as
        ours (issue #37 goal d; --peer-no-deletion-vectors: without, as before)
  ours: MariaDB -> cdc-ship --server --snapshot -> one topic of raw binlog frames
        -> cdc-replicate (targets declared by --target-ddl, the workload's own CREATE TABLEs)

One private MariaDB server (binlog_format=ROW, binlog_row_image=FULL: Debezium refuses MINIMAL;
MariaDB GTIDs are always on), one private Kafka broker (the project's), both capturers and both
Spark jobs live at the same time (two Spark driver processes, the project's session factory, the
same trigger and maxOffsetsPerTrigger). One deterministic workload (bench/peer_workload.py, a seed)
written once, read by both:

  load        accounts in transactions of 100 rows; also the warm-up: both jobs have started and
              made it visible before anything is measured
  latency     --rate transactions/s for --latency-seconds (paced: each starts at its slot)
  throughput  --transactions transactions as fast as one client writes them

Each phase starts once both pipelines made the previous one visible. Figures per pipeline:

  commit-to-visible latency of each transaction = when the Delta commit that made it visible was
      written (the last target-table commit of its micro-batch: bench/delta_visibility.py) minus
      time.time() right after the server answered its COMMIT (same machine clock); p50/p99/max
  throughput = row changes of the throughput phase / (when its last transaction became visible -
      when its first one committed): end to end, server commit to Delta
  CPU seconds of each pipeline's processes in each phase (ours: cdc-ship + cdc-replicate's tree;
      peer: the Connect JVM + the peer job's tree): the two share 2 cores
  check: each pipeline's four Delta tables equal the server's SELECT * (exact rows)

The figures and the report: bench/peer_figures.py.

    .venv/bin/python bench/peer_debezium.py [--rate 50 --latency-seconds 60 --transactions 20000]
        [--seed 21] [--trigger-seconds 1] [--jobs ours,peer] [--json OUT] [--keep]

Set-up of the peer: .cache/bench-debezium (mvn, once; bench/peer_connect.py). Not a test.
"""
from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from bench_support import (commit_hash, load_average, log_tail as _tail, private_broker,  # noqa: E402
                           spawn as _spawn, start_shipper, stop_process as _stop, tree_cpu,
                           wait_shipper_following)
from delta_visibility import PipelineVisibility  # noqa: E402
from peer_connect import ConnectWorker, resolve  # noqa: E402
from peer_figures import measure, print_report  # noqa: E402
from peer_workload import (CLOCK_COLUMN, CLOCK_TABLE, DB, TABLES, Committed, Workload,  # noqa: E402
                           run, schema_script)

from libs.local.mariadb_server import MariaDBServer  # noqa: E402

OUR_TOPIC, PEER_PREFIX = "binlog", "dbz"


# -- the two pipelines ------------------------------------------------------------------------
@dataclass
class Pipeline:
    name: str
    visibility: PipelineVisibility
    job: subprocess.Popen | None = None
    job_log: Path | None = None
    capture_pid: int | None = None

    def cpu(self) -> dict[str, float]:
        """CPU seconds so far of the capture process (cdc-ship / the Connect JVM) and the job's tree."""
        return {"capture": tree_cpu(self.capture_pid) if self.capture_pid else 0.0,
                "job": tree_cpu(self.job.pid) if self.job else 0.0}

    def check_alive(self) -> None:
        if self.job is not None and self.job.poll() is not None:
            raise SystemExit(f"{self.name} job exited {self.job.returncode}:\n{_tail(self.job_log)}")


def ours_tables(root: Path) -> dict[str, Path]:
    return {t.name: root / f"{DB}__{t.name}" for t in TABLES}


def peer_tables(root: Path) -> dict[str, Path]:
    return {t.name: root / t.name for t in TABLES}


def start_ours(bootstrap: str, work: Path, args) -> subprocess.Popen:
    conf = work / "ours-job.yaml"
    conf.write_text(f"trigger_seconds: {args.trigger_seconds}\nmax_offsets_per_trigger: {args.max_offsets}\n"
                    f"tables:\n  include: ['{DB}\\..*']\n")
    ddl = work / "targets.sql"
    ddl.write_text("".join(t.ddl() + ";\n" for t in TABLES))
    return _spawn([str(Path(sys.executable).parent / "cdc-replicate"), "--conf", str(conf),
                   "--bootstrap", bootstrap, "--topic", OUR_TOPIC, "--target-ddl", str(ddl),
                   "--delta-root", str(work / "ours" / "delta"), "--checkpoint", str(work / "ours" / "ckpt")],
                  work / "ours-job.log")


def start_peer(bootstrap: str, work: Path, args) -> subprocess.Popen:
    return _spawn([sys.executable, str(ROOT / "bench" / "peer_merge_job.py"), "--bootstrap", bootstrap,
                   "--topic-prefix", PEER_PREFIX, "--delta-root", str(work / "peer" / "delta"),
                   "--checkpoint", str(work / "peer" / "ckpt"),
                   "--trigger-seconds", str(args.trigger_seconds),
                   "--max-offsets", str(args.max_offsets),
                   *(["--no-deletion-vectors"] if args.peer_no_deletion_vectors else [])],
                  work / "peer-job.log")


def create_topics(bootstrap: str) -> None:
    """One partition each (the broker's default), made before anyone subscribes."""
    from confluent_kafka.admin import AdminClient, NewTopic
    admin = AdminClient({"bootstrap.servers": bootstrap})
    names = [OUR_TOPIC] + [f"{PEER_PREFIX}.{DB}.{t.name}" for t in TABLES]
    for future in admin.create_topics([NewTopic(n, 1, 1) for n in names]).values():
        future.result(30)


def wait_visible(pipelines: list[Pipeline], seq: int, timeout: float) -> dict[str, float]:
    """Until every pipeline has made transaction `seq` visible; when each did (monotonic s)."""
    done: dict[str, float] = {}
    deadline = time.monotonic() + timeout
    while len(done) < len(pipelines):
        for p in pipelines:
            if p.name not in done:
                p.check_alive()
                if p.visibility.applied_through() >= seq:
                    done[p.name] = time.monotonic()
        if time.monotonic() > deadline:
            late = [p.name for p in pipelines if p.name not in done]
            raise SystemExit(f"not visible after {timeout:.0f} s: transaction {seq} in {late}")
        time.sleep(0.5)
    time.sleep(3 * 1.0)  # the batch's other table commits (the clock's may come first)
    return done


def compare_tables(server: MariaDBServer, roots: dict[str, dict[str, Path]]) -> dict[str, dict[str, str]]:
    """Each pipeline's Delta tables against the server's SELECT * (data columns, exact rows)."""
    from pipelines.job.spark_session import SessionOptions, build_session
    spark = build_session(SessionOptions(app_name="peer-bench-compare"))

    def key(row):
        return [(v is not None, v) for v in row]

    out: dict[str, dict[str, str]] = {}
    try:
        for table in TABLES:
            columns = [c for c, _ in table.columns]
            want = sorted(server.query(f"SELECT {', '.join(columns)} FROM `{DB}`.`{table.name}`"), key=key)
            for name, tables in roots.items():
                df = spark.read.format("delta").load(str(tables[table.name]))
                got = sorted((tuple(r) for r in df.select(*columns).collect()), key=key)
                if got == [tuple(r) for r in want]:
                    verdict = f"equal ({len(got):,} rows)"
                else:
                    missing = len(set(map(tuple, want)) - set(got))
                    extra = len(set(got) - set(map(tuple, want)))
                    verdict = (f"DIFFERENT: server {len(want):,} rows, Delta {len(got):,}; "
                               f"{missing} missing, {extra} extra")
                out.setdefault(name, {})[table.name] = verdict
    finally:
        spark.stop()
    return out


# -- the run ----------------------------------------------------------------------------------
def parse_args(argv: list[str] | None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seed", type=int, default=21)
    ap.add_argument("--accounts", type=int, default=1000)
    ap.add_argument("--rate", type=float, default=50.0, help="latency phase: transactions per second")
    ap.add_argument("--latency-seconds", type=float, default=60.0)
    ap.add_argument("--transactions", type=int, default=20000, help="throughput phase: as fast as possible")
    ap.add_argument("--trigger-seconds", type=float, default=1.0, help="both jobs' processing-time trigger")
    ap.add_argument("--max-offsets", type=int, default=200_000,
                    help="both jobs' maxOffsetsPerTrigger (ours: its default)")
    ap.add_argument("--peer-no-deletion-vectors", action="store_true",
                    help="the peer's tables without deletion vectors "
                         "(ours have them: issue #37 goal d compares both with)")
    ap.add_argument("--jobs", default="ours,peer", help="which Spark jobs run (both capturers always do)")
    ap.add_argument("--cache", type=Path, default=ROOT / ".cache" / "bench-debezium")
    ap.add_argument("--timeout", type=float, default=1800.0, help="per phase, for both to catch up")
    ap.add_argument("--json", type=Path)
    ap.add_argument("--keep", action="store_true", help="keep the work directory (logs, Delta tables)")
    return ap.parse_args(argv)


def run_phases(server: MariaDBServer, pipelines: list[Pipeline], args) -> tuple[dict, dict]:
    """load, latency, throughput, each written once and waited for until every pipeline made it
    visible; (committed transactions, CPU seconds per pipeline) per phase."""
    workload = Workload(seed=args.seed, accounts=args.accounts)
    paced = int(args.rate * args.latency_seconds)
    phases = (("load", workload.load(), None),
              ("latency", [workload.transaction() for _ in range(paced)], args.rate),
              ("throughput", [workload.transaction() for _ in range(args.transactions)], None))
    committed: dict[str, list[Committed]] = {}
    cpu: dict[str, dict[str, dict[str, float]]] = {}
    conn = server.connect()
    try:
        for phase, transactions, rate in phases:
            cpu0 = {p.name: p.cpu() for p in pipelines}
            t0 = time.monotonic()
            committed[phase] = run(conn, transactions, phase, rate=rate)
            wrote = time.monotonic() - t0
            done = wait_visible(pipelines, transactions[-1].seq, args.timeout)
            cpu[phase] = {p.name: {k: v - cpu0[p.name][k] for k, v in p.cpu().items()} for p in pipelines}
            changes = sum(c.changes for c in committed[phase])
            print(f"{phase}: {len(transactions):,} transactions, {changes:,} row changes written in "
                  f"{wrote:.1f} s; " + ", ".join(f"{n} visible {done[n] - t0:.1f} s after the phase started"
                                                  for n in done) + f"; load {load_average()}", flush=True)
    finally:
        conn.close()
    return committed, cpu


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    jobs = [j.strip() for j in args.jobs.split(",") if j.strip()]
    dirs = resolve(args.cache)
    work = Path(tempfile.mkdtemp(prefix="peer-bench-"))
    report: dict = {"commit": commit_hash(), "args": {k: str(v) for k, v in vars(args).items()},
                    "load_start": load_average()}
    print(f"peer bench: HEAD {report['commit']}, load average {report['load_start']}, work {work}",
          flush=True)
    server = MariaDBServer.start(work / "mariadb", extra_options=("--binlog-row-image=FULL",))
    shipper = connect = None
    pipelines: list[Pipeline] = []
    try:
        fmt, image, version = server.query("SELECT @@binlog_format, @@binlog_row_image, @@version")[0]
        print(f"MariaDB {version}: binlog_format={fmt} binlog_row_image={image}", flush=True)
        server.sql(schema_script())
        with private_broker(work / "kafka") as bootstrap:
            create_topics(bootstrap)
            shipper = start_shipper(server, bootstrap, work, OUR_TOPIC, DB)
            connect = ConnectWorker.start(dirs, work / "connect", bootstrap, host=server.host,
                                          port=server.port, user=server.user, password=server.password,
                                          database=DB, topic_prefix=PEER_PREFIX)
            wait_shipper_following(server, bootstrap, OUR_TOPIC, DB, shipper, work / "cdc-ship.log")
            connect.wait_streaming()
            print("capture: cdc-ship following (after its snapshot of the empty tables), "
                  "Debezium streaming (snapshot.mode=no_data)", flush=True)
            ours = Pipeline("ours", PipelineVisibility(ours_tables(work / "ours" / "delta"), "cdc-replicate:",
                                                       CLOCK_TABLE, CLOCK_COLUMN), capture_pid=shipper.pid)
            peer = Pipeline("peer", PipelineVisibility(peer_tables(work / "peer" / "delta"), "peer-merge",
                                                       CLOCK_TABLE, CLOCK_COLUMN),
                            capture_pid=connect.cpu_pid())
            for p, start in ((ours, start_ours), (peer, start_peer)):
                if p.name in jobs:
                    p.job, p.job_log = start(bootstrap, work, args), work / f"{p.name}-job.log"
                    pipelines.append(p)
            committed, cpu = run_phases(server, pipelines, args)
            report["load_end"] = load_average()
            for p in pipelines:
                _stop(p.job)
            _stop(shipper)
            connect.stop()
        report["figures"] = measure({p.name: p.visibility for p in pipelines}, committed, cpu)
        report["equal"] = compare_tables(server, {p.name: p.visibility.tables for p in pipelines})
    finally:
        for p in pipelines:
            _stop(p.job)
        _stop(shipper)
        if connect is not None:
            connect.stop()
        server.stop()
        if args.keep:
            print(f"work directory kept: {work}")
    print_report(report)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(report, indent=2, default=str))
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    ok = all(v.startswith("equal") for tables in report["equal"].values() for v in tables.values())
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

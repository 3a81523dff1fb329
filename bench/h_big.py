"""Issue #37 goal f: an h_big-style load end to end, the code before the issue's apply work
("old", a second checkout) against this checkout ("new"), in the same run.

    .venv/bin/python bench/h_big.py [--old-root /work/wt-old] [--rows 300000 --small 20000]
                                    [--rounds 1] [--only old|new] [--quick] [--keep]
    --quick: 20,000 rows + 2,000 small transactions (validation)

Each run (old, then new; --rounds 2 repeats the pair) has its own private MariaDB 10.11 (ROW,
MINIMAL images, annotate ON: oltp_sysbench.start_server), broker, work directory, and
`cdc-ship --server --snapshot` + `cdc-replicate` spawned from the run's checkout as a user starts
them (bench_support.spawn with that checkout on PYTHONPATH; the same job configuration as
bench/oltp_bench.py: trigger 1 s, targets from the source):

1 set-up   sbtest.sbtest1 (sysbench's table: id INT AUTO_INCREMENT PRIMARY KEY, k INT, c CHAR(120),
           pad CHAR(60), INDEX(k)) with one row (a one-row snapshot); shipper and job started; one
           UPDATE of that row, until the job applied it (the job is up: its Spark start-up is
           not in the figure).
2 load     ONE transaction inserting --rows rows (INSERT ... SELECT FROM seq_1_to_N, MariaDB's
           Sequence engine), then --small transactions of sysbench 1.0.20 `oltp_write_only`
           on that table (2 threads, unthrottled: per transaction an UPDATE of k, an UPDATE of c,
           a DELETE and an INSERT by id, 4 row changes).
3 figure   seconds from the load's start (the big INSERT sent) until the batch whose
           `_cdc_progress` row reached the server's binlog position at the load's end is visible
           (its target commits' mtimes; bench/oltp_delta.py); also from the big transaction's
           commit and from the small ones' end (the drain). The job's batches (records, seconds,
           when their commits came) are printed as bench/oltp_bench.py does.
4 equality the job stopped, the target against the server's SELECT * (pipelines/delta/table_equality.py).

Printed at the end: old s, new s, ratio old/new (goal >= 3), load averages, both commits, equality.
Not a test: a benchmark; it starts and stops its own servers, brokers, shippers and jobs.
"""
from __future__ import annotations

import argparse
import dataclasses
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from bench_support import (checkout_env, commit_hash, load_average, private_broker, start_shipper,  # noqa: E402
                           wait_shipper_following)
from oltp_bench import TOPIC, Run  # noqa: E402
from oltp_report import batch_timeline, job_batches  # noqa: E402
from oltp_sysbench import DB, start_server  # noqa: E402

TABLE = "sbtest1"
CREATE = (f"CREATE TABLE `{DB}`.`{TABLE}` (id INT NOT NULL AUTO_INCREMENT PRIMARY KEY, "
          "k INT NOT NULL DEFAULT 0, "
          "c CHAR(120) NOT NULL DEFAULT '', pad CHAR(60) NOT NULL DEFAULT '', KEY k_1 (k)) ENGINE=InnoDB")
SEED_ROW = f"INSERT INTO `{DB}`.`{TABLE}` (k, c, pad) VALUES (1, 'seed', 'seed')"
WARM_UP = f"UPDATE `{DB}`.`{TABLE}` SET k = k + 1 WHERE id = 1"
# sysbench-shaped values: k uniform over the table, c and pad hex groups joined by '-'
BIG = (f"INSERT INTO `{DB}`.`{TABLE}` (k, c, pad) SELECT 1 + FLOOR(RAND(seq) * {{rows}}), "
       "LEFT(REPEAT(CONCAT(MD5(seq), '-'), 4), 119), LEFT(REPEAT(CONCAT(MD5(-seq), '-'), 2), 59) "
       f"FROM `{DB}`.seq_1_to_{{rows}}")


class HBigRun(Run):
    """One checkout's run: oltp_bench's Run (job, shipper, waits, equality) on one table."""

    def __init__(self, args, work: Path, server, bootstrap: str, root: Path, label: str):
        super().__init__(args, work, server, bootstrap, root)
        self.label = label
        self.sysbench = dataclasses.replace(self.sysbench, script="oltp_write_only", tables=1,
                                            rows=args.rows + 1)

    def set_up(self) -> None:
        self.shipper = start_shipper(self.server, self.bootstrap, self.work, TOPIC, DB, self.root)
        started = self.start_job()
        wait_shipper_following(self.server, self.bootstrap, TOPIC, DB, self.shipper,
                               self.work / "cdc-ship.log", timeout=self.args.timeout)
        self.server.query(WARM_UP)
        self.warm_batch, visible = self.wait_covered(*self.server.master_status())
        self.figures.line("set-up", "cdc-ship --server --snapshot + cdc-replicate, one UPDATE",
                          "job up and the UPDATE visible (Spark start-up included)",
                          f"{visible - started:.1f} s")

    def load(self) -> dict:
        a = self.args
        t0 = time.time()
        self.server.query(BIG.format(rows=a.rows))
        committed = time.time()
        run = self.sysbench.run(0, threads=a.threads, events=a.small)
        ended = time.time()
        file, pos = self.server.master_status()
        last, visible = self.wait_covered(file, pos)
        cmd = f"INSERT ... SELECT FROM seq_1_to_{a.rows}; sysbench oltp_write_only --events={a.small}"
        self.figures.line("load", cmd, "load written",
                          f"big transaction {committed - t0:.1f} s; {run.transactions:,} "
                          f"small in {ended - committed:.1f} s ({run.tps:.0f}/s, "
                          f"{run.ignored_errors} ignored errors)")
        figures = {"from load start": visible - t0, "from big commit": visible - committed,
                   "drain after small end": visible - ended}
        for name, seconds in figures.items():
            self.figures.line("load", f"cdc-replicate ({self.label})", f"visible {name}", f"{seconds:.1f} s")
        batch_timeline(self.delta, job_batches(self.job_log), self.warm_batch + 1, last, self.label,
                       self.job_log)
        return figures


def one_run(args, root: Path, label: str, work: Path) -> dict:
    """A fresh server, broker, shipper and job from checkout `root`; its figures, loads, commit, equality."""
    work.mkdir(parents=True)
    print(f"\n=== {label}: {root} at {commit_hash(root)}, load {load_average()}, work {work}", flush=True)
    server = start_server(work / "mariadb")
    run = None
    try:
        server.query(CREATE)
        server.query(SEED_ROW)
        with private_broker(work / "kafka") as bootstrap:
            run = HBigRun(args, work, server, bootstrap, root, label)
            try:
                run.set_up()
                load_before = load_average()
                figures = run.load()
                load_after = load_average()
                equal = run.check_equal()
            finally:
                run.tear_down()
    finally:
        server.stop()
        if run is not None:
            run.figures.table()
    return {"label": label, "commit": commit_hash(root), "figures": figures,
            "load": f"{load_before} -> {load_after}", "equal": equal}


def report(results: list[dict]) -> None:
    print("\nh_big end to end (seconds from the load's start until its last transaction is visible):")
    for r in results:
        f = r["figures"]
        print(f"  {r['label']:3s} {r['commit']:12s} {f['from load start']:7.1f} s (from big commit "
              f"{f['from big commit']:.1f} s, drain {f['drain after small end']:.1f} s)  load {r['load']}  "
              f"equality {'OK' if r['equal'] else 'DIFFERENT'}")
    old = [r["figures"]["from load start"] for r in results if r["label"] == "old"]
    new = [r["figures"]["from load start"] for r in results if r["label"] == "new"]
    for i, (o, n) in enumerate(zip(old, new), 1):
        print(f"  round {i}: old {o:.1f} s, new {n:.1f} s, ratio old/new {o / n:.2f} (goal >= 3: "
              f"{'MET' if o / n >= 3 else 'NOT MET'})")


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--old-root", type=Path, default=Path("/work/wt-old"), help="checkout of the old code")
    ap.add_argument("--rows", type=int, default=300_000, help="rows of the one big transaction")
    ap.add_argument("--small", type=int, default=20_000, help="small transactions after it")
    ap.add_argument("--threads", type=int, default=2, help="sysbench --threads")
    ap.add_argument("--rounds", type=int, default=1, help="old-then-new pairs")
    ap.add_argument("--only", choices=("old", "new"), help="run one side only (no ratio)")
    ap.add_argument("--quick", action="store_true", help="20,000 rows + 2,000 small transactions")
    ap.add_argument("--timeout", type=float, default=3600.0, help="per wait for a job")
    ap.add_argument("--keep", action="store_true", help="keep the work directories (logs, Delta tables)")
    args = ap.parse_args(argv)
    args.tables = 1
    if args.quick:
        args.rows, args.small = 20_000, 2_000
    return args


def main(argv=None) -> int:
    args = parse_args(argv)
    os.environ.update(checkout_env())  # this process' Spark session (equality) runs this checkout
    base = Path(tempfile.mkdtemp(prefix="h-big-"))
    print(f"h_big: old {args.old_root} at {commit_hash(args.old_root)}, new {ROOT} at {commit_hash()}; "
          f"{args.rows:,} rows + {args.small:,} small transactions; load {load_average()}", flush=True)
    results = []
    try:
        for i in range(args.rounds):
            for label, root in (("old", args.old_root), ("new", ROOT)):
                if args.only not in (None, label):
                    continue
                results.append(one_run(args, root, label, base / f"{label}{i}"))
    finally:
        report(results)
        if args.keep:
            print(f"work directories kept: {base}")
        else:
            shutil.rmtree(base, ignore_errors=True)
    return 0 if results and all(r["equal"] for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())

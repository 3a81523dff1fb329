"""Codec throughput benchmark: our codec vs python-mysql-replication vs
mariadb-binlog on the corpus' big_trx files. Prints its figures; not a test.

    .venv/bin/python bench/codec_bench.py            # all three, median of 3 runs each
    .venv/bin/python bench/codec_bench.py --only ours --runs 5

Files: mariadb/big_trx/mdb-bin.000009 (ONE transaction, 200,000 row changes) and
mdb-bin.000010 (50,000 one-row transactions, 250,007 events).

* ours: a fresh interpreter per run (cold Table_map/codec caches) reads the file and decodes
  every event with libs.binlog.iter_events (CRC32 verified), touching every row value.
  Timed from reading the file to the last event (interpreter start-up and imports excluded).
* peer: python-mysql-replication 1.0.17 in a separate venv (.cache/bench-venv, created here),
  streaming the same file from a private MariaDB server this script starts (own datadir and
  socket under .cache/bench-mariadb, port --port) whose binlog directory holds copies of the
  two corpus files plus an index file: BinLogStreamReader(resume_stream=True, log_pos=4,
  blocking=False, only_events=rows events), every value touched (bench/peer_stream.py).
  The peer does not request Annotate_rows, so it receives fewer events than the file holds.
* mariadb-binlog: `mariadb-binlog --no-defaults -vv --base64-output=decode-rows FILE >/dev/null`,
  wall time of the process.
The server is stopped at the end (also on error). Wall-clock rates are the headline; CPU-time
rates (ours: the decoding process; peer: client + mariadbd; mariadb-binlog: the process) are
printed too because a busy shared machine inflates wall times unevenly.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path
from libs.runtime.paths import CORPUS_DIR

REPO = Path(__file__).resolve().parents[1]
CORPUS = Path(os.environ.get("BINLOG_CORPUS", str(CORPUS_DIR)))
FILES = {"big_trx": "mdb-bin.000009", "small_trx": "mdb-bin.000010"}
BENCH_VENV = REPO / ".cache" / "bench-venv"
PEER_REQS = ["mysql-replication==1.0.17", "PyMySQL==1.1.2"]
CORPUS_PEER = {  # corpus README section 5 (medians of 3, same kind of machine)
    "big_trx": {"rows_per_s": 16211, "events_per_s": 97},
    "small_trx": {"rows_per_s": 3034, "events_per_s": 12136},
}
CORPUS_MARIADB_BINLOG = {
    "big_trx": {"rows_per_s": 398406, "events_per_s": 2404},
    "small_trx": {"rows_per_s": 42662, "events_per_s": 213317},
}


# ---- ours ----------------------------------------------------------------------------------

def ours_once(path: str) -> dict:
    sys.path.insert(0, str(REPO))
    from libs.binlog import iter_events

    t0 = time.perf_counter()
    c0 = time.process_time()
    with open(path, "rb") as fh:
        data = fh.read()
    events = rows = rows_events = touched = 0
    name = os.path.basename(path)
    for ev in iter_events(data, file=name):
        events += 1
        body_rows = getattr(ev.body, "rows", None)
        if type(body_rows) is tuple:
            rows_events += 1
            for change in body_rows:
                rows += 1
                before, after = change.before, change.after
                if before:
                    for v in before.values():
                        touched += v is not None
                if after:
                    for v in after.values():
                        touched += v is not None
    seconds = time.perf_counter() - t0
    return {"seconds": seconds, "cpu_seconds": time.process_time() - c0, "events": events, "rows": rows,
            "rows_events": rows_events, "non_null_values": touched}


def run_ours(path: Path) -> dict:
    out = subprocess.run([sys.executable, __file__, "--ours-once", str(path)], check=True,
                         capture_output=True, text=True, cwd=REPO).stdout
    return json.loads(out.strip().splitlines()[-1])


# ---- mariadb-binlog ------------------------------------------------------------------------

def run_mariadb_binlog(path: Path, counts: dict) -> dict:
    exe = shutil.which("mariadb-binlog") or shutil.which("mysqlbinlog")
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    with open(os.devnull, "wb") as null:
        subprocess.run([exe, "--no-defaults", "-vv", "--base64-output=decode-rows", str(path)],
                       stdout=null, check=True)
    seconds = time.perf_counter() - t0
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
    return {"seconds": seconds, "cpu_seconds": cpu, "events": counts["events"],
            "rows": counts["rows"]}


# ---- peer: private MariaDB server + python-mysql-replication ------------------------------

def ensure_bench_venv() -> Path:
    py = BENCH_VENV / "bin" / "python"
    probe = [str(py), "-c", "import pymysqlreplication, pymysql"]
    if py.exists() and subprocess.run(probe, capture_output=True).returncode == 0:
        return py
    print(f"creating {BENCH_VENV} with {' '.join(PEER_REQS)}", file=sys.stderr)
    subprocess.run([sys.executable, "-m", "venv", str(BENCH_VENV)], check=True)
    subprocess.run([str(py), "-m", "pip", "install", "-q", *PEER_REQS], check=True)
    return py


class PrivateMariaDB:
    """mariadbd on its own datadir/socket/port; binlog dir = copies of the corpus files."""

    def __init__(self, root: Path, port: int, files: list[Path]):
        self.root, self.port, self.files = root, port, files
        self.datadir, self.binlog = root / "data", root / "binlog"
        self.socket, self.pidfile = root / "mdb.sock", root / "mdb.pid"
        self.proc: subprocess.Popen | None = None

    def start(self) -> None:
        if self.root.exists():
            shutil.rmtree(self.root)
        self.binlog.mkdir(parents=True)
        for f in self.files:  # copies named as the server wrote them, plus the index
            shutil.copyfile(f, self.binlog / f.name)
            os.chmod(self.binlog / f.name, 0o660)
        (self.binlog / "mdb-bin.index").write_text(
            "".join(f"{self.binlog / f.name}\n" for f in self.files))
        user = ["--user=root"] if os.geteuid() == 0 else []
        subprocess.run(["mariadb-install-db", "--no-defaults", f"--datadir={self.datadir}",
                        "--auth-root-authentication-method=normal", "--skip-test-db", *user],
                       check=True, capture_output=True)
        self.log = open(self.root / "mariadbd.err", "wb")
        self.proc = subprocess.Popen([
            "/usr/sbin/mariadbd", "--no-defaults", f"--datadir={self.datadir}", *user,
            f"--log-bin={self.binlog}/mdb-bin", f"--log-bin-index={self.binlog}/mdb-bin.index",
            "--server-id=1", "--binlog-format=ROW", "--binlog-checksum=CRC32",
            f"--socket={self.socket}", f"--port={self.port}", "--bind-address=127.0.0.1",
            f"--pid-file={self.pidfile}", "--max-allowed-packet=256M",
            "--innodb-buffer-pool-size=128M", "--skip-name-resolve",
            f"--log-error={self.root / 'mariadbd.err'}"],
            stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.time() + 60
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"mariadbd exited: {(self.root / 'mariadbd.err').read_text()[-2000:]}")
            ok = subprocess.run(["mariadb-admin", "--no-defaults", f"--socket={self.socket}",
                                 "-uroot", "ping"], capture_output=True)
            if ok.returncode == 0:
                return
            time.sleep(0.3)
        raise RuntimeError("mariadbd did not come up in 60 s")

    def stop(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def _proc_cpu(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def run_peer(py: Path, server: PrivateMariaDB, name: str) -> dict:
    s0 = _proc_cpu(server.proc.pid)
    out = subprocess.run([str(py), str(REPO / "bench" / "peer_stream.py"),
                          f"--socket={server.socket}", f"--file={name}"],
                         check=True, capture_output=True, text=True).stdout
    r = json.loads(out.strip().splitlines()[-1])
    r["server_cpu_seconds"] = _proc_cpu(server.proc.pid) - s0
    r["client_cpu_seconds"] = r["cpu_seconds"]
    r["cpu_seconds"] = r["client_cpu_seconds"] + r["server_cpu_seconds"]  # client + mariadbd
    return r


# ---- report --------------------------------------------------------------------------------

def median_run(fn, runs: int) -> dict:
    results = [fn() for _ in range(runs)]
    secs = [r["seconds"] for r in results]
    med = dict(results[secs.index(statistics.median_low(secs))])
    med["seconds"] = statistics.median(secs)
    med["all_seconds"] = [round(s, 3) for s in secs]
    med["rows_per_s"] = med["rows"] / med["seconds"]
    med["events_per_s"] = med["events"] / med["seconds"]
    cpus = [r["cpu_seconds"] for r in results]
    med["cpu_seconds"] = statistics.median(cpus)
    med["all_cpu_seconds"] = [round(c, 3) for c in cpus]
    med["cpu_rows_per_s"] = med["rows"] / med["cpu_seconds"]
    med["cpu_events_per_s"] = med["events"] / med["cpu_seconds"]
    return med


def measured(results: dict):
    """(file label, decoder, result) for every file and decoder that was run, in table order."""
    for key, fname in FILES.items():
        for who in ("ours", "peer", "mariadb-binlog"):
            r = results[key].get(who)
            if r is not None:
                yield f"{fname} ({key})", who, r


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--port", type=int, default=3417)
    ap.add_argument("--only", choices=("ours", "peer", "mariadb-binlog"), action="append")
    ap.add_argument("--json", help="also write the figures here")
    ap.add_argument("--ours-once", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.ours_once:
        print(json.dumps(ours_once(args.ours_once)))
        return
    which = set(args.only or ("ours", "peer", "mariadb-binlog"))
    paths = {k: CORPUS / "mariadb" / "big_trx" / f for k, f in FILES.items()}
    results: dict = {k: {} for k in FILES}

    if "ours" in which or "mariadb-binlog" in which:
        for key, path in paths.items():
            results[key]["ours"] = median_run(lambda: run_ours(path), args.runs)
    if "mariadb-binlog" in which:
        for key, path in paths.items():
            results[key]["mariadb-binlog"] = median_run(
                lambda: run_mariadb_binlog(path, results[key]["ours"]), args.runs)
    if "peer" in which:
        py = ensure_bench_venv()
        server = PrivateMariaDB(REPO / ".cache" / "bench-mariadb", args.port,
                                [paths["big_trx"], paths["small_trx"]])
        try:
            server.start()
            for key, path in paths.items():
                results[key]["peer"] = median_run(lambda: run_peer(py, server, path.name), args.runs)
        finally:
            server.stop()
    if "ours" not in which:
        for key in results:
            results[key].pop("ours", None)

    print(f"codec benchmark, median of {args.runs} runs (python {sys.version.split()[0]}, "
          f"{os.cpu_count()} CPUs)")
    print(f"{'file':<28}{'decoder':<16}{'seconds':>9}{'events':>9}{'rows':>8}"
          f"{'events/s':>11}{'rows/s':>10}  runs (s)")
    for label, who, r in measured(results):
        print(f"{label:<28}{who:<16}{r['seconds']:>9.3f}{r['events']:>9}"
              f"{r['rows']:>8}{r['events_per_s']:>11,.0f}{r['rows_per_s']:>10,.0f}  "
              f"{r['all_seconds']}")
    print()
    print("CPU time (load-independent; peer = client + mariadbd CPU during the stream):")
    print(f"{'file':<28}{'decoder':<16}{'cpu s':>9}{'events/s':>11}{'rows/s':>10}  runs (cpu s)")
    for label, who, r in measured(results):
        print(f"{label:<28}{who:<16}{r['cpu_seconds']:>9.3f}"
              f"{r['cpu_events_per_s']:>11,.0f}{r['cpu_rows_per_s']:>10,.0f}  "
              f"{r['all_cpu_seconds']}")
    print()
    for key, fname in FILES.items():
        ours = results[key].get("ours")
        if ours is None:
            continue
        for who in ("peer", "mariadb-binlog"):
            r = results[key].get(who)
            if r is None:
                continue
            print(f"{fname} ({key}): ours / {who}: rows/s x{ours['rows_per_s'] / r['rows_per_s']:.2f}, "
                  f"events/s x{ours['events_per_s'] / r['events_per_s']:.2f} (wall); "
                  f"rows/s x{ours['cpu_rows_per_s'] / r['cpu_rows_per_s']:.2f}, events/s "
                  f"x{ours['cpu_events_per_s'] / r['cpu_events_per_s']:.2f} (CPU)")
        print(f"{fname} ({key}): ours / corpus README peer: rows/s "
              f"x{ours['rows_per_s'] / CORPUS_PEER[key]['rows_per_s']:.2f}, events/s "
              f"x{ours['events_per_s'] / CORPUS_PEER[key]['events_per_s']:.2f}")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()

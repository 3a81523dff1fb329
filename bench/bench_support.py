"""Shared parts of the pipeline benchmarks (bench/stream_bench.py, bench/apply_bench.py).

Not a test helper: these scripts print figures. Everything is measured on this machine from
/proc (no psutil in the venv) and from the driver JVM through py4j.

    with private_broker(root) as bootstrap: ...          # the project's Kafka broker, free port
    sampler = Sampler(spark); sampler.start(); ...; sampler.stop()
    sampler.peaks(), sampler.core_busy(t0, t1), sampler.worker_cpu(t0, t1)
    spark_ui(spark, "/jobs"), job_seconds(job)            # the Spark UI REST API (ui=True)
    spawn(args, log[, root]), stop_process(proc), tree_cpu(pid), log_tail(log), commit_hash([root])
    start_shipper(server, bootstrap, work, topic, source), wait_shipper_following(...)
                                                          # cdc-ship --server --snapshot, as a user runs it
"""
from __future__ import annotations

import contextlib
import datetime as dt
import json
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CLK_TCK = os.sysconf("SC_CLK_TCK")
PAGE = os.sysconf("SC_PAGE_SIZE")


def spark_ui(spark, path: str):
    """JSON of the Spark UI's REST API for this application (`path`: "/jobs", "/stages", ...);
    the session must be built with ui=True."""
    sc = spark.sparkContext
    with urllib.request.urlopen(f"{sc.uiWebUrl}/api/v1/applications/{sc.applicationId}{path}") as response:
        return json.load(response)


def ui_time(record: dict, key: str) -> dt.datetime:
    """A timestamp of a spark_ui record ("submissionTime", "completionTime", ...), to the ms."""
    return dt.datetime.strptime(record[key][:23], "%Y-%m-%dT%H:%M:%S.%f")


def job_seconds(job: dict) -> float:
    """Wall seconds of a finished job of spark_ui(spark, "/jobs") (0 while it runs)."""
    if not job.get("completionTime"):
        return 0.0
    return (ui_time(job, "completionTime") - ui_time(job, "submissionTime")).total_seconds()


def load_average() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


@contextlib.contextmanager
def private_broker(data_dir: Path):
    """The project's own single-node broker (libs/local/kafka_broker, as `cdc-kafka start`) on a free
    port with its own data directory; stopped (our child only) on exit."""
    from libs.local.kafka_broker import free_port_pair, start, stop
    from pipelines.kafka import broker_config

    cfg = broker_config(free_port_pair(), str(data_dir))
    start(cfg)
    try:
        yield cfg.bootstrap
    finally:
        stop(cfg)


# -- processes the benchmarks start -------------------------------------------------------------
def checkout_env(root: Path = ROOT) -> dict[str, str]:
    """The environment under which a command, its Spark JVM and its Python workers import the
    code of checkout `root` (default: this one): the venv's editable install points at the main
    checkout, and a console script (cdc-replicate) does not put the working directory on sys.path."""
    path = os.environ.get("PYTHONPATH")
    return {**os.environ, "PYTHONUNBUFFERED": "1",
            "PYTHONPATH": str(root) + (os.pathsep + path if path else "")}


def spawn(args: list[str], log: Path, root: Path = ROOT) -> subprocess.Popen:
    """A command in its own session (its process group is ours to kill), output appended to
    `log`, running the code of checkout `root` (checkout_env; default: this one)."""
    with open(log, "ab") as out:
        return subprocess.Popen(args, cwd=root, stdout=out, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, env=checkout_env(root), start_new_session=True)


def stop_process(proc: subprocess.Popen | None, timeout: float = 60.0) -> None:
    """SIGTERM to the process we started (a job stops its query, cdc-ship flushes and exits),
    then SIGKILL to whatever is left of its process group (its Spark JVM and Python workers)."""
    if proc is None:
        return
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            pass
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    if proc.poll() is None:
        proc.wait(10)


def tree_cpu(pid: int) -> float:
    """CPU seconds of a process and its live descendants, each with its reaped children's."""
    total = 0
    for p in descendants(pid):
        try:
            f = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += sum(int(x) for x in f[11:15])  # utime stime cutime cstime
    return total / CLK_TCK


def log_tail(path: Path, lines: int = 25) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


def commit_hash(root: Path = ROOT) -> str:
    """HEAD's short hash of checkout `root`, +dirty when tracked files differ from it."""
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=root, capture_output=True,
                          text=True).stdout.strip()
    dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=root,
                           capture_output=True, text=True).stdout.strip()
    return head + ("+dirty" if dirty else "")


def start_shipper(server, bootstrap: str, work: Path, topic: str, source: str,
                  root: Path = ROOT) -> subprocess.Popen:
    """`cdc-ship --server --snapshot` of database `source` (its tables' rows, then its binlog)
    into `topic`, records keyed by `source`, running checkout `root`'s code; log in work/cdc-ship.log."""
    password = work / "replica-password"
    password.write_text(server.password + "\n")
    password.chmod(0o600)
    return spawn([sys.executable, "-m", "pipelines.ship", "--server", f"{server.host}:{server.port}",
                  "--user", server.user, "--password-file", str(password), "--bootstrap", bootstrap,
                  "--topic", topic, "--source", source, "--snapshot", "--include", rf"{source}\..*",
                  "--progress", "30"], work / "cdc-ship.log", root)


def wait_shipper_following(server, bootstrap: str, topic: str, source: str, proc: subprocess.Popen,
                           log: Path, timeout: float = 120.0) -> None:
    """Until the topic holds the snapshot and a record at or past the server's current position."""
    from libs.shipper.file_source import binlog_sort_key
    from libs.shipper.kafka_sink import last_record
    file, pos = server.master_status()
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"cdc-ship exited {proc.returncode}:\n{log_tail(log)}")
        last = last_record(bootstrap, topic, source)
        if last is not None and last.binlog_file and (binlog_sort_key(last.binlog_file), last.end_pos) >= (
                binlog_sort_key(file), pos):
            return
        time.sleep(0.5)
    raise SystemExit(f"cdc-ship not following after {timeout:.0f} s:\n{log_tail(log)}")


# -- /proc readers ------------------------------------------------------------------------------
def _children_map() -> dict[int, list[int]]:
    out: dict[int, list[int]] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry.name}/stat").read_text()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        out.setdefault(ppid, []).append(int(entry.name))
    return out


def descendants(pid: int) -> list[int]:
    tree, out, todo = _children_map(), [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        todo.extend(tree.get(p, ()))
    return out


def proc_info(pid: int) -> tuple[str, int, float] | None:
    """(kind, rss bytes, cpu seconds) of a process; kind: 'java', 'python-worker', 'python-driver'."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        cmd = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return None
    fields = stat.rsplit(")", 1)[1].split()
    cpu = (int(fields[11]) + int(fields[12])) / CLK_TCK  # utime + stime
    rss = int(fields[21]) * PAGE
    exe = os.path.basename(cmd[0].decode(errors="replace")) if cmd and cmd[0] else ""
    joined = b" ".join(cmd)
    if pid == os.getpid():
        kind = "python-driver"
    elif exe.startswith("java"):
        kind = "java"
    elif b"pyspark.daemon" in joined or b"pyspark.worker" in joined or exe.startswith("python"):
        kind = "python-worker"
    else:
        kind = exe or "other"
    return kind, rss, cpu


def core_jiffies() -> list[tuple[int, int]]:
    """(busy, total) jiffies of every core from /proc/stat."""
    out = []
    for line in Path("/proc/stat").read_text().splitlines():
        if line.startswith("cpu") and line[3].isdigit():
            v = [int(x) for x in line.split()[1:]]
            idle = v[3] + v[4]  # idle + iowait
            out.append((sum(v[:8]) - idle, sum(v[:8])))
    return out


@dataclass
class Sample:
    t: float
    cores: list[tuple[int, int]]
    procs: dict[int, tuple[str, int, float]]
    jvm_heap_used: int | None


@dataclass
class Sampler:
    """Polls, every `interval` s, per-core jiffies, RSS + CPU of this process and all its
    descendants (the Spark JVM and its Python workers) and the driver JVM's used heap."""

    spark: object = None
    interval: float = 0.25
    samples: list[Sample] = field(default_factory=list)

    def __post_init__(self):
        self._stop = threading.Event()
        self._kinds: dict[int, str] = {}
        self._thread = threading.Thread(target=self._run, daemon=True, name="bench-sampler")
        runtime = self.spark.sparkContext._jvm.java.lang.Runtime if self.spark is not None else None
        self._runtime = runtime.getRuntime() if runtime is not None else None

    def _heap(self) -> int | None:
        if self._runtime is None:
            return None
        try:
            return int(self._runtime.totalMemory() - self._runtime.freeMemory())
        except Exception:  # noqa: BLE001 - the session may be stopping
            return None

    def _run(self) -> None:
        while not self._stop.is_set():
            procs = {}
            for pid in descendants(os.getpid()):
                info = proc_info(pid)
                if info is None:
                    continue
                # sticky kind: an exiting worker (zombie) has no cmdline any more
                kind = (self._kinds.setdefault(pid, info[0]) if info[0] != "other"
                        else self._kinds.get(pid, "other"))
                procs[pid] = (kind, info[1], info[2])
            self.samples.append(Sample(time.time(), core_jiffies(), procs, self._heap()))
            self._stop.wait(self.interval)

    def start(self) -> "Sampler":
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()

    # -- figures -----------------------------------------------------------------------------
    def peaks(self, t0: float = 0.0, t1: float = float("inf")) -> dict[str, float]:
        """Peak RSS per process kind (max over single processes and of the kind's sum), MB."""
        out: dict[str, float] = {}
        for s in self.samples:
            if not t0 <= s.t <= t1:
                continue
            sums: dict[str, int] = {}
            for kind, rss, _ in s.procs.values():
                out[f"{kind} max RSS MB"] = max(out.get(f"{kind} max RSS MB", 0), rss / 2**20)
                sums[kind] = sums.get(kind, 0) + rss
            for kind, total in sums.items():
                out[f"{kind} sum RSS MB"] = max(out.get(f"{kind} sum RSS MB", 0), total / 2**20)
            if s.jvm_heap_used is not None:
                out["driver JVM heap used MB"] = max(out.get("driver JVM heap used MB", 0),
                                                     s.jvm_heap_used / 2**20)
        return out

    def _window(self, t0: float, t1: float) -> tuple[Sample, Sample] | None:
        inside = [s for s in self.samples if t0 <= s.t <= t1]
        return (inside[0], inside[-1]) if len(inside) >= 2 else None

    def core_busy(self, t0: float, t1: float) -> list[float]:
        """Busy share of every core between t0 and t1 (whole machine: other users included)."""
        w = self._window(t0, t1)
        if w is None:
            return []
        a, b = w
        return [(bb - ab) / max(1, bt - at) for (ab, at), (bb, bt) in zip(a.cores, b.cores)]

    def worker_cpu(self, t0: float, t1: float) -> dict[int, float]:
        """CPU seconds each Python worker (pid) used between t0 and t1 (> 0.05 s only)."""
        return {pid: cpu for pid, (kind, cpu) in self._cpu_by_pid(t0, t1).items()
                if kind == "python-worker" and cpu > 0.05}

    def _cpu_by_pid(self, t0: float, t1: float) -> dict[int, tuple[str, float]]:
        """(kind, CPU seconds) per process seen between t0 and t1; one that appeared in the
        window counts from 0."""
        inside = [s for s in self.samples if t0 <= s.t <= t1]
        if len(inside) < 2:
            return {}
        first: dict[int, float] = {}
        last: dict[int, tuple[str, float]] = {}
        for s in inside:
            for pid, (kind, _, cpu) in s.procs.items():
                first.setdefault(pid, cpu if s is inside[0] else 0.0)
                last[pid] = (kind, cpu)
        return {pid: (kind, cpu - first[pid]) for pid, (kind, cpu) in last.items()}

    def kind_cpu(self, t0: float, t1: float) -> dict[str, float]:
        """CPU seconds per process kind between t0 and t1."""
        out: dict[str, float] = {}
        for kind, cpu in self._cpu_by_pid(t0, t1).values():
            if cpu > 0.05:
                out[kind] = out.get(kind, 0.0) + cpu
        return out


def batch_windows(query) -> list[dict]:
    """Per micro-batch: id, input rows, start/end epoch seconds (from the query's progress)."""
    import datetime as dt

    out = []
    for p in query.recentProgress:
        start = dt.datetime.strptime(p["timestamp"], "%Y-%m-%dT%H:%M:%S.%fZ").replace(
            tzinfo=dt.timezone.utc).timestamp()
        seconds = p["durationMs"].get("triggerExecution", 0) / 1000
        out.append({"batch": p["batchId"], "rows": p["numInputRows"], "start": start,
                    "end": start + seconds, "seconds": seconds,
                    "sink_s": p["durationMs"].get("addBatch", 0) / 1000})
    return out

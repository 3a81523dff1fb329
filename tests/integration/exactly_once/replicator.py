"""cdc-replicate as a subprocess that can be SIGKILLed like a crashed machine, and read-only
peeks at what it left on disk (the Spark checkpoint and the Delta logs), for the kill schedule.

The job runs in its own session (process group). A kill SIGKILLs that group and every
descendant of its leader (tests/integration/process_tree.py: PySpark's worker daemon has a
group of its own), so the Python driver, its JVM and the Python workers die at the same
instant, with no shutdown hook, flush or cleanup of any of them.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from libs.tables.commit_marks import parse_mark
from libs.tables.system_tables import SYSTEM_TABLE_PREFIX
from tests.integration.process_tree import proc_stat, sigkill_tree
from tests.integration.short_jobs import short_job_env

CDC_REPLICATE = Path(sys.executable).parent / "cdc-replicate"  # the venv's console script
STARTED = "cdc-replicate: reading"  # printed by pipelines/replicate.py run() once the query started
IN_FLIGHT, CHANGE_LOG, TARGET, PROGRESS = "in flight", "_cdc_change_log", "target", "_cdc_progress"
STAGES = (IN_FLIGHT, CHANGE_LOG, TARGET, PROGRESS)
# A followed target's schema rewrite (pipelines/apply/schema_changes.py), committed with the
# batch's rows in the target's one write (pipelines/apply/modes/carried.py): a WRITE that also
# changes the table's metadata.
SCHEMA = "schema"
# A target table's batch write: a MERGE, or a whole-table overwrite of a small mirrored target
# (pipelines/apply/batch_writes.py _target_write), a WRITE commit like an append's.
TARGET_WRITES = ("MERGE", "WRITE")


def _numbered(directory: Path) -> list[int]:
    """Batch ids of a Spark checkpoint log directory (offsets/, commits/): files named N."""
    if not directory.is_dir():
        return []
    return sorted(int(p.name) for p in directory.iterdir() if p.name.isdigit())


def committed_txn_versions(table_dir: Path) -> dict[str, int]:
    """{app id: highest batch} from the JSON commits of a Delta log: Delta's txn actions
    (txnAppId/txnVersion, the target writes) and the commit marks of the appends
    (libs/tables/commit_marks.py, in commitInfo.userMetadata)."""
    out: dict[str, int] = {}
    log = table_dir / "_delta_log"
    if not log.is_dir():
        return out
    for commit in sorted(log.glob("[0-9]*.json")):  # not the hidden temporary/.crc files
        try:
            actions = [json.loads(line) for line in commit.read_text().splitlines() if line.strip()]
        except (OSError, json.JSONDecodeError):
            continue  # being written right now: this poll does not count it
        for txn in (a["txn"] for a in actions if "txn" in a):
            out[txn["appId"]] = max(out.get(txn["appId"], -1), int(txn["version"]))
        for info in (a["commitInfo"] for a in actions if "commitInfo" in a):
            if (marked := parse_mark(info.get("userMetadata"))) is not None:
                out[marked[0]] = max(out.get(marked[0], -1), marked[1])
    return out


def _group_members(pgid: int, command: str) -> list[int]:
    """Pids of the process group's `command` processes (/proc/PID/stat: comm, pgrp)."""
    return [int(stat.parent.name) for stat in Path("/proc").glob("[0-9]*/stat")
            if (read := proc_stat(stat)) is not None and read[0] == command and int(read[1][2]) == pgid]


def _python_threads(dump: list[str]) -> list[str]:
    """The SIGUSR1 dump's lines (libs/runtime/thread_dump.py), threads running this project's code
    (pipelines/, libs/) first."""
    threads: list[list[str]] = []
    for line in dump:
        if line.startswith(("Thread 0x", "Current thread 0x")):
            threads.append([line])
        elif line.startswith("  File ") and threads:
            threads[-1].append(line)
    ours = [t for t in threads if any("/pipelines/" in f or "/libs/" in f for f in t)]
    return [line for t in ours + [t for t in threads if t not in ours] for line in t]


def _dump_line(line: str) -> bool:
    """A line of a Python (libs/runtime/thread_dump.py) or jstack-style (JVM) thread dump."""
    return line.startswith(("Thread 0x", "Current thread 0x", "  File ", '"', "\tat ", "\t- ",
                            "   java.lang.Thread.State"))


def _jvm_thread(dump: list[str], name: str) -> list[str]:
    """The lines of the thread whose name contains `name` in a JVM thread dump."""
    for i, line in enumerate(dump):
        if line.startswith('"') and name in line:
            end = next((j for j in range(i + 1, len(dump)) if not dump[j].strip()), len(dump))
            return dump[i:end]
    return [f"(no thread named *{name}* in the dump)"]


def _operation(table_dir: Path, version: int) -> str:
    """The commit's operation (WRITE, MERGE, ...), or SCHEMA for a schema rewrite."""
    try:
        actions = [json.loads(line) for line in
                   (table_dir / "_delta_log" / f"{version:020d}.json").read_text().splitlines()
                   if line.strip()]
    except (OSError, json.JSONDecodeError):
        return "?"
    operation = next((a["commitInfo"].get("operation", "?") for a in actions if "commitInfo" in a), "?")
    return SCHEMA if is_schema_rewrite(actions) else operation


def is_target(table: str) -> bool:
    """A target table's directory (`<database>__<table>`, libs/targets/model.default_delta_table_name),
    not one of the job's `_cdc_*` tables (whose first append creates them: a WRITE with metadata too)."""
    return "__" in table and not table.startswith(SYSTEM_TABLE_PREFIX)


def is_schema_rewrite(actions: list[dict]) -> bool:
    """A commit's actions: a target's schema rewrite (a WRITE with a new schema), or, from an
    earlier release, its own commit under the schema txn app id (libs/tables/system_tables.schema_app_id)."""
    operation = next((a["commitInfo"].get("operation") for a in actions if "commitInfo" in a), None)
    return (operation == "WRITE" and any("metaData" in a for a in actions)) or any(
        a["txn"]["appId"].endswith(f":{SCHEMA}") for a in actions if "txn" in a)


@dataclass
class Replicator:
    work: Path
    args: list[str]  # --bootstrap ... --checkpoint ... (everything but --conf / --available-now)
    checkpoint: Path
    delta_root: Path
    runs: list[Path] = field(default_factory=list)
    # What else the test knows when a wait times out (the topic, the shipper, the workload).
    context: Callable[[], str] = lambda: ""
    # Why the job can get nothing new to read (the shipper exited, the workload failed), or
    # None: a wait stops at once on it instead of timing out on an idle job.
    feed_stopped: Callable[[], str | None] = lambda: None
    proc: subprocess.Popen | None = None
    _baselines: dict[int, dict[str, int]] = field(default_factory=dict)  # batch -> table versions

    def start(self, conf: Path, *extra: str) -> subprocess.Popen:
        planned, committed = self.batches()
        # a batch left in flight by the last kill is replayed first: its baseline is now
        self._baselines = {planned: self.table_versions()} if planned > committed else {}
        log = self.work / f"replicate-run{len(self.runs)}.log"
        self.runs.append(log)
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        with open(log, "wb") as out:
            self.proc = subprocess.Popen([str(CDC_REPLICATE), *self.args, "--conf", str(conf), *extra],
                                         stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
                                         env=short_job_env(env))  # (tests/integration/short_jobs.py)
        return self.proc

    def log_tail(self, lines: int = 40, dumps: bool = True) -> str:
        """The run's last lines; without the thread dumps SIGUSR1 / SIGQUIT wrote when `dumps` is False
        (a test polling the driver's stacks fills the log with them)."""
        if not self.runs:
            return "(no run)"
        text = self.runs[-1].read_text(errors="replace").splitlines()
        return "\n".join((text if dumps else [line for line in text if not _dump_line(line)])[-lines:])

    def check_alive(self) -> None:
        if self.proc.poll() is not None:
            raise AssertionError(f"cdc-replicate exited {self.proc.returncode} unexpectedly:\n"
                                 f"{self.log_tail()}")
        if (why := self.feed_stopped()) is not None:
            raise AssertionError(f"{why}:\n{self.diagnosis()}")

    def wait_started(self, timeout: float = 300.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self.check_alive()
            if STARTED in self.runs[-1].read_text(errors="replace"):
                return
            time.sleep(0.2)
        raise AssertionError(f"cdc-replicate did not start its query in {timeout:.0f}s:\n{self.diagnosis()}")

    def batches(self) -> tuple[int, int]:
        """(last planned batch id, last committed batch id); -1 when none."""
        query = self.checkpoint / "query"
        planned, committed = _numbered(query / "offsets"), _numbered(query / "commits")
        return (planned[-1] if planned else -1), (committed[-1] if committed else -1)

    def table_versions(self) -> dict[str, int]:
        """{Delta table directory name: latest commit version} under delta_root."""
        if not self.delta_root.is_dir():
            return {}
        out = {}
        for table in self.delta_root.iterdir():
            versions = [int(p.name[:-5]) for p in (table / "_delta_log").glob("[0-9]*.json")]
            if versions:
                out[table.name] = max(versions)
        return out

    def written_by_this_run(self, batch_id: int) -> list[str]:
        """"<table>:<operation>" of each commit made while `batch_id` was in flight in this run
        (operation from the commit's commitInfo: WRITE, MERGE, CREATE TABLE, ...).

        Told by commit versions, not by the batch markers (committed_txn_versions): the
        schedule must not lean on the very mechanism under test. Spark runs one batch at a time
        and writes offsets/N only after batch N-1 committed, so every commit newer than the
        versions seen when N was first seen in flight is N's."""
        base = self._baselines.get(batch_id)
        if base is None:
            return []
        out = []
        for table, latest in sorted(self.table_versions().items()):
            for version in range(base.get(table, -1) + 1, latest + 1):
                out.append(f"{table}:{_operation(self.delta_root / table, version)}")
        return out

    def _observe(self) -> tuple[int, int]:
        planned, committed = self.batches()
        if planned > committed:
            self._baselines.setdefault(planned, self.table_versions())
        return planned, committed

    def watch(self, seconds: float) -> None:
        """Sleep `seconds` while noting the baseline of every batch that goes in flight."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            self._observe()
            time.sleep(min(0.05, max(0.0, deadline - time.monotonic())))

    def wait_stage(self, after: int, stage: str, timeout: float = 600.0, also: str | None = None) -> int:
        """The first batch id > after that, in flight in this run, has made its `stage` write
        (replicator.STAGES, in the order a batch writes them, pipelines/apply/batch_writes.py:
        IN_FLIGHT needs nothing written, then CHANGE_LOG, TARGET (any target table's MERGE or
        overwrite), PROGRESS; SCHEMA: a target's schema rewrite), and, when `also` is SCHEMA, a
        target's schema rewrite too.
        A replayed batch whose `stage` write was made before the kill writes nothing new
        (idempotent skip), so the wait moves on to the next batch. Returns that batch id."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self.check_alive()
            planned, committed = self._observe()
            if planned > after and planned > committed:
                written = [w.split(":", 1) for w in self.written_by_this_run(planned)]
                rewrites = [table for table, op in written if op == SCHEMA and is_target(table)]
                if (stage == IN_FLIGHT or (stage == SCHEMA and rewrites) or any(
                        table == stage
                        or (stage == TARGET and is_target(table) and op in (*TARGET_WRITES, SCHEMA))
                        for table, op in written)) and (also is None or (also == SCHEMA and rewrites)):
                    return planned
            time.sleep(0.05)
        raise AssertionError(f"no batch after {after} reached {stage} in {timeout:.0f}s:\n{self.diagnosis()}")

    def diagnosis(self) -> str:
        """Why a wait failed (timed out, or the feed stopped), in a few lines a CI report keeps:
        where the checkpoint is and since when, the test's context (is there anything new to
        read?), the run's log tail, and where the job stands: the Python driver's threads
        (SIGUSR1, libs/runtime/thread_dump.py) and the JVM's stream execution thread
        (SIGQUIT thread dump)."""
        parts = []  # the stacks before the log: a CI report cuts a long message at its end
        log_tail = lambda: "log tail (thread dumps left out):\n" + self.log_tail(15, dumps=False)  # noqa: E731
        for part in (self._checkpoint_state, self.stacks, self.context, log_tail):
            try:
                parts.append(part())
            except Exception as exc:  # noqa: BLE001 - a diagnosis must not hide the failure it explains
                parts.append(f"({getattr(part, '__name__', 'part')} failed: {exc!r})")
        return "\n".join(p for p in parts if p)

    def _checkpoint_state(self) -> str:
        planned, committed = self.batches()
        query = self.checkpoint / "query"
        if planned < 0:
            return "checkpoint: no batch planned yet"
        age = lambda d, n: f"{time.time() - (query / d / str(n)).stat().st_mtime:.0f}s ago"  # noqa: E731
        ends = " ".join((query / "offsets" / str(planned)).read_text().splitlines()[2:])
        return (f"checkpoint: last planned batch {planned} ({age('offsets', planned)}, ends at {ends}), "
                + (f"last committed {committed} ({age('commits', committed)})" if committed >= 0
                   else "none committed"))

    def stacks(self, settle_s: float = 3.0) -> str:
        """The job's Python driver stacks and its JVM stream execution thread, as dumped into
        the run's log by SIGUSR1 (libs/runtime/thread_dump.py) and SIGQUIT (the JVM's thread dump)."""
        if self.proc is None or self.proc.poll() is not None:
            return ""
        log = self.runs[-1]
        start = log.stat().st_size
        os.kill(self.proc.pid, signal.SIGUSR1)
        for pid in _group_members(self.proc.pid, "java"):
            os.kill(pid, signal.SIGQUIT)
        time.sleep(settle_s)
        with open(log, "rb") as f:
            f.seek(start)
            dumped = f.read().decode(errors="replace").splitlines()
        jvm = _jvm_thread(dumped, "stream execution thread")
        return "\n".join(["jvm stream execution thread:", *jvm[:30],
                          "python driver threads (ours first):", *_python_threads(dumped)[:60]])

    def kill(self) -> None:
        """SIGKILL the process group and every descendant of its leader; return once none is left."""
        sigkill_tree(self.proc)

    def delta_commits_of(self, batch_id: int) -> list[str]:
        """Delta tables under delta_root whose writes of micro-batch `batch_id` are committed,
        by any run, as their batch markers record them (Delta's txn actions, commit marks)."""
        if not self.delta_root.is_dir():
            return []
        return sorted(d.name for d in self.delta_root.iterdir()
                      if any(v >= batch_id for v in committed_txn_versions(d).values()))

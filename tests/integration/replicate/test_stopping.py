"""Issue #39 items 3 and 4: how cdc-replicate ends when asked to, or when its driver is killed.

A real broker holds the row_full corpus file (404 events), read 40 records a micro-batch, so a
run has many batches. A signal lands while a batch's foreachBatch runs:
  * SIGINT: the batch finishes and commits, then one line `stopped after batch N`, exit 0;
  * SIGTERM twice: the running batch is abandoned, one line `stopped during batch N`, exit 130;
  * kill -9 of the Python driver alone while it waits for the JVM's Delta append of the batch:
    the JVM is gone within a second and commits nothing after the kill (pipelines/job/driver_tie.py;
    before it, the JVM finished that append after its driver was gone);
then a `--available-now` run prints its batch lines and one closing line, exit 0, and the change
records equal the server decoder's transactions, none twice (exactly once across all of it).
Nothing beyond the batch lines and that one line: no Traceback, no Java frame, no Py4J error.
"""
from __future__ import annotations

import collections
import contextlib
import ctypes
import os
import re
import signal
import time
from pathlib import Path

import pytest

from libs.runtime.paths import CORPUS_DIR, REPO_ROOT
from libs.tables.system_tables import CHANGES, QUARANTINE
from pipelines.job.driver_tie import HALT_STATUS
from pipelines.ship import main as cdc_ship
from tests.integration.exactly_once.replicator import IN_FLIGHT, STARTED, Replicator
from tests.integration.process_tree import alive, descendants, proc_stat
from tests.integration.replicate.binlog_oracle import read_oracle
from tests.integration.replicate.corpus_files import our_transactions

pytestmark = pytest.mark.integration

ROW_FULL = CORPUS_DIR / "mariadb/row_full/mdb-bin.000001"
CONF = "max_offsets_per_trigger: 40\ntrigger_seconds: 0.5\ntables: {from_source: false}  # change records\n"
DRAIN_CONF = CONF.replace("40", "100000")  # the rest in one batch
BATCH_LINE = "cdc-replicate: batch "
JVM_GONE_S = 1.0
PR_SET_CHILD_SUBREAPER = 36  # linux/prctl.h


def _job(kafka_broker, topic, tmp_path, monkeypatch) -> tuple[Replicator, Path]:
    monkeypatch.setenv("PYTHONPATH", str(REPO_ROOT))  # the console script runs this checkout's code
    assert cdc_ship(["--from-file", str(ROW_FULL), "--bootstrap", kafka_broker.bootstrap, "--topic", topic,
                     "--source", "row_full", "--progress", "3600"]) == 0
    conf = tmp_path / "job.yaml"
    conf.write_text(CONF)
    delta, ckpt = tmp_path / "delta", tmp_path / "ckpt"
    return Replicator(tmp_path, ["--bootstrap", kafka_broker.bootstrap, "--topic", topic,
                                 "--delta-root", str(delta), "--checkpoint", str(ckpt)], ckpt, delta), conf


# a stack line (libs/runtime/thread_dump.py)
IN_SINK = re.compile(r'/pipelines/stages/sink\.py", line \d+ in ')
IN_DELTA_APPEND = re.compile(r'/pipelines/delta/delta_tables\.py", line \d+ in append')  # the JVM writes now


def _mid_batch(job: Replicator, doing: re.Pattern = IN_SINK, poll_s: float = 0.3) -> tuple[int, int]:
    """(id of a batch of this run whose foreachBatch is `doing` that, the run's log size then).
    Told by the driver's own stacks (SIGUSR1, libs/runtime/thread_dump.py), not by
    timing: on a loaded machine a batch's planning takes seconds between its offsets and its sink."""
    job.wait_started()
    batch = job.wait_stage(job.batches()[1], IN_FLIGHT, timeout=300)
    log = job.runs[-1]
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline:
        job.check_alive()  # a dead job is one line now, not ten minutes of polling a zombie
        size = log.stat().st_size
        os.kill(job.proc.pid, signal.SIGUSR1)
        time.sleep(poll_s)
        with open(log, "rb") as f:
            f.seek(size)
            dumped = f.read().decode(errors="replace")
        planned, committed = job.batches()
        if doing.search(dumped) and planned > committed:
            return planned, log.stat().st_size
        if committed >= batch:  # that batch ended meanwhile: the next one
            batch = job.wait_stage(committed, IN_FLIGHT, timeout=300)
    raise AssertionError(f"no foreachBatch seen running:\n{job.diagnosis()}")


def _closing_lines(job: Replicator, after: int | None = None) -> list[str]:
    """The run's lines that are not batch lines, after its start line (or after byte `after`:
    the stacks _mid_batch asked for); asserts no trace at all among them."""
    text = job.runs[-1].read_bytes().decode(errors="replace")
    lines = text[after:].splitlines() if after is not None else text.split(STARTED, 1)[1].splitlines()[1:]
    for noise in ("Traceback", "\tat ", "Exception", "Error"):
        assert not any(noise in line for line in lines), "\n".join(lines)[-4000:]
    return [line for line in lines if not line.startswith(BATCH_LINE)]


def _drain_and_check(spark, job: Replicator, conf: Path) -> None:
    conf.write_text(DRAIN_CONF)
    drain = job.start(conf, "--available-now")
    assert drain.wait(timeout=600) == 0, job.log_tail()
    last = job.batches()[1]
    assert _closing_lines(job) == [f"cdc-replicate: done after batch {last} (--available-now: the topic read "
                                   f"to where it ended at the start)"]
    assert job.runs[-1].read_text().splitlines()[-2].startswith(f"{BATCH_LINE}{last}: "), job.log_tail()
    changes = [r.asDict() for r in spark.read.format("delta").load(str(job.delta_root / CHANGES))
               .select("trx_id", "trx_end_pos", "gtid", "change_seq", "database", "table", "op", "statement")
               .collect()]
    assert [k for k, n in collections.Counter((c["trx_id"], c["change_seq"]) for c in changes).items()
            if n > 1] == []
    expected = {t.end: (t.gtid, t.changes) for t in read_oracle(str(ROW_FULL)).transactions if t.changes}
    assert our_transactions(changes) == expected
    assert spark.read.format("delta").load(str(job.delta_root / QUARANTINE)).count() == 0


def test_signals_and_a_killed_driver_end_the_job_and_the_restart_is_exactly_once(
        spark, kafka_broker, topic, tmp_path, monkeypatch):
    # one job through the three stops, then one drain: each cold job run costs ~20 s of the suite
    job, conf = _job(kafka_broker, topic, tmp_path, monkeypatch)

    proc = job.start(conf)
    running, logged = _mid_batch(job)
    proc.send_signal(signal.SIGINT)
    assert proc.wait(timeout=300) == 0, job.log_tail()
    planned, committed = job.batches()
    assert committed == running  # the batch in flight finished
    assert planned in (running, running + 1)  # the next one, if planned, began no work (the restart runs it)
    assert _closing_lines(job, logged) == [f"cdc-replicate: stopped after batch {running}"]

    proc = job.start(conf)
    running, logged = _mid_batch(job)
    proc.send_signal(signal.SIGTERM)
    time.sleep(0.05)
    proc.send_signal(signal.SIGTERM)  # the second: abandon the batch now
    assert proc.wait(timeout=60) == 130, job.log_tail()
    assert job.batches() == (running, running - 1)
    assert _closing_lines(job, logged) == [f"cdc-replicate: stopped during batch {running} "
                                           f"(abandoned: a restart runs it again)"]

    _subreaper(True)
    try:
        _kill_the_driver(job, conf)
    finally:
        _subreaper(False)
    _drain_and_check(spark, job, conf)


def _jvm_of(driver: int) -> int:
    jvms = [pid for pid in descendants(driver)
            if (read := proc_stat(Path(f"/proc/{pid}/stat"))) and read[0] == "java"]
    assert len(jvms) == 1, jvms
    return jvms[0]


def _subreaper(on: bool) -> None:
    """This process adopts its orphaned descendants (Linux PR_SET_CHILD_SUBREAPER): the killed
    driver's JVM becomes our child, so its exit status can be read."""
    assert ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, int(on), 0, 0, 0) == 0


def _reap(pid: int, timeout_s: float) -> int | None:
    """The exit code of an adopted process once it ended (None: still running after timeout_s)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        time.sleep(0.01)
    return None


def _kill_the_driver(job: Replicator, conf: Path) -> None:
    """A killed driver takes its JVM with it at once: no Delta commit after the kill."""
    proc = job.start(conf)
    # the driver waits in its Py4J call of a Delta append: the JVM is writing the batch right now
    running, _ = _mid_batch(job, IN_DELTA_APPEND, poll_s=0.2)
    jvm, tree, versions = _jvm_of(proc.pid), descendants(proc.pid), job.table_versions()
    os.kill(proc.pid, signal.SIGKILL)  # the Python driver only, as the kill -9 did
    killed = time.monotonic()
    proc.wait(timeout=10)
    status = _reap(jvm, 30)
    gone_after = time.monotonic() - killed
    time.sleep(2.0)  # anything the JVM's threads would still have committed
    after = job.table_versions()
    for pid in tree - {jvm}:  # the Python workers leave once the JVM is gone; leave none behind
        if alive(pid):
            os.kill(pid, signal.SIGKILL)
        with contextlib.suppress(ChildProcessError):  # not adopted: its own parent reaps it
            _reap(pid, 5)
    late = {t: (versions.get(t), v) for t, v in after.items() if versions.get(t) != v}
    # halted (Runtime.halt's status), not a graceful System.exit(0) that lets a running write finish
    assert (status, gone_after < JVM_GONE_S, late) == (HALT_STATUS, True, {}), (
        f"the driver's JVM ended with status {status}, {gone_after:.2f} s after its driver; Delta commits "
        f"after the kill (table: versions before, after): {late}")
    assert job.batches() == (running, running - 1)

"""Shared by the shipper integration tests: run cdc-ship, wait for the topic, compare files."""
from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from libs.shipper.file_source import binlog_sort_key
from libs.shipper.kafka_sink import last_record

ROOT = Path(__file__).resolve().parents[3]


def password_file(db) -> str:
    """The server's replication password in a file only its owner reads (--password-file)."""
    path = Path(db.base_dir) / "replica-password"
    path.write_text(db.password + "\n")
    path.chmod(0o600)
    return str(path)


def start_shipper(*args: str, env: dict[str, str] | None = None,
                  module: str = "pipelines.ship") -> subprocess.Popen:
    """cdc-ship in a subprocess (so it can be SIGTERMed / SIGKILLed like in production).

    Its output (a progress line a second) goes to a file, read with shipper_output(): a pipe
    nobody reads while the test runs fills up (64 KiB, ~8 minutes of lines) and then blocks
    cdc-ship in the middle of its stream."""
    with tempfile.NamedTemporaryFile(prefix="cdc-ship-", suffix=".log", delete=False) as log:
        proc = subprocess.Popen([sys.executable, "-m", module, *args, "--progress", "1"],
                                cwd=ROOT, stdout=log, stderr=subprocess.STDOUT,
                                env={**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})})
    proc.log_path = Path(log.name)
    return proc


def shipper_output(proc: subprocess.Popen, lines: int | None = None) -> str:
    """What cdc-ship printed so far (its last `lines` lines)."""
    text = proc.log_path.read_text(errors="replace")
    return text if lines is None else "\n".join(text.splitlines()[-lines:])


def wait_shipped(bootstrap: str, topic: str, source: str, file: str, end_pos: int, *,
                 proc: subprocess.Popen | None = None, timeout: float = 60.0,
                 epoch: int = 0) -> None:
    """Until the source's topic holds everything up to file:end_pos (the last record ends there
    or lies in a later file) of the server at `epoch`: after a failover the new server's files
    may be numbered below the old one's, so the epoch orders them first (libs/contracts/position.py)."""
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        last = last_record(bootstrap, topic, source)
        if last is not None and (last.epoch, binlog_sort_key(last.binlog_file), last.end_pos) >= (
                epoch, binlog_sort_key(file), end_pos):
            return
        if proc is not None and proc.poll() is not None:
            raise AssertionError(f"cdc-ship exited {proc.returncode}: {shipper_output(proc)}")
        time.sleep(0.3)
    got = None if last is None else (last.binlog_file, last.end_pos)
    raise AssertionError(f"topic {topic} never reached {file}:{end_pos} (last: {got})")


def stop_shipper(proc: subprocess.Popen, timeout: float = 30.0) -> tuple[int, str]:
    """SIGTERM (cdc-ship flushes and exits 0); (exit code, everything it printed)."""
    proc.terminate()
    proc.wait(timeout=timeout)
    output = shipper_output(proc)
    proc.log_path.unlink(missing_ok=True)
    return proc.returncode, output

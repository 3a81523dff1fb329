"""Shared by the shipper integration tests: run cdc-ship, wait for the topic, compare files."""
from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from libs.shipper.file_source import binlog_sort_key
from libs.shipper.kafka_sink import last_record

ROOT = Path(__file__).resolve().parents[3]


def start_shipper(*args: str) -> subprocess.Popen:
    """cdc-ship in a subprocess (so it can be SIGTERMed / SIGKILLed like in production)."""
    return subprocess.Popen([sys.executable, "-m", "pipelines.ship", *args, "--progress", "1"],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONUNBUFFERED": "1"})


def wait_shipped(bootstrap: str, topic: str, source: str, file: str, end_pos: int, *,
                 proc: subprocess.Popen | None = None, timeout: float = 60.0) -> None:
    """Until the source's topic holds everything up to file:end_pos (the last record ends there
    or lies in a later file)."""
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        last = last_record(bootstrap, topic, source)
        if last is not None and (binlog_sort_key(last.binlog_file), last.end_pos) >= (
                binlog_sort_key(file), end_pos):
            return
        if proc is not None and proc.poll() is not None:
            raise AssertionError(f"cdc-ship exited {proc.returncode}: {proc.stderr.read()}")
        time.sleep(0.3)
    got = None if last is None else (last.binlog_file, last.end_pos)
    raise AssertionError(f"topic {topic} never reached {file}:{end_pos} (last: {got})")


def stop_shipper(proc: subprocess.Popen, timeout: float = 30.0) -> tuple[int, str]:
    proc.terminate()  # SIGTERM: flush and exit 0
    _out, err = proc.communicate(timeout=timeout)
    return proc.returncode, err

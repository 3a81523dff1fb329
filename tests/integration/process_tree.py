"""Kill a job like a crashed machine kills it: all its processes at the same instant.

A job started with start_new_session=True has a process group of its own, but killing that group
is not enough for cdc-replicate: PySpark's worker daemon moves itself and its workers to a group
of their own (pyspark/daemon.py setpgid). They outlived a killed group by up to a second (until
the daemon read EOF from the dead JVM), time in which a worker could still write the
assembler's spill files. Seen at every kill of the SIGKILL test: the daemon and 2 workers.
Linux only (/proc).
"""
from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path


def proc_stat(stat: Path) -> tuple[str, list[str]] | None:
    """(command, the fields after it: state, ppid, pgrp, ...) of a /proc/PID/stat file; None
    once the process is gone."""
    try:
        text = stat.read_text()
    except OSError:
        return None
    return text[text.index("(") + 1:text.rindex(")")], text[text.rindex(")") + 2:].split()


def descendants(root: int) -> set[int]:
    """Pids of every process below `root` in the process tree."""
    parent = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        if (read := proc_stat(stat)) is not None:
            parent[int(stat.parent.name)] = int(read[1][1])
    out, frontier = set(), {root}
    while frontier:
        frontier = {pid for pid, ppid in parent.items() if ppid in frontier} - out
        out |= frontier
    return out


def alive(pid: int) -> bool:
    read = proc_stat(Path(f"/proc/{pid}/stat"))
    return read is not None and read[1][0] != "Z"  # a zombie is dead, only not yet reaped


def sigkill_tree(leader: subprocess.Popen, timeout: float = 30.0) -> None:
    """SIGKILL the process group led by `leader` (started with start_new_session=True) and every
    descendant of the leader, whatever its group; return once none is left."""
    pgid = leader.pid
    doomed = descendants(pgid)
    os.killpg(pgid, signal.SIGKILL)
    for pid in doomed:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    leader.wait(timeout)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            if not any(alive(pid) for pid in doomed):
                return
        time.sleep(0.1)
    raise AssertionError(f"process group {pgid} or a descendant still alive {timeout:.0f} s after SIGKILL")

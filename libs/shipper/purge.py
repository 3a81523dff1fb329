"""Purged binlogs (pure): warn before the server purges what the shipper has not shipped yet,
and say plainly what is lost when it has.

A server purges its oldest binlog files (PURGE BINARY LOGS, expire_logs_days /
binlog_expire_logs_seconds, max_binlog_total_size): the file the shipper reads is at risk when
it is among the oldest `warn_files` files and is not the one the server is writing (that one is
never purged). When the file is gone the topic cannot continue without a gap; a new snapshot of
the tables (cdc-ship --resnapshot) is the way on.
"""
from __future__ import annotations

import sys
import time
from typing import Callable, TextIO

from libs.binlog.file_names import binlog_sort_key

from libs.source.errors import PurgedBinlogError

RESNAPSHOT_WAY = ("way on: cdc-ship --resnapshot with the same --include/--exclude (publishes a "
                  "new consistent snapshot of the tables through the topic, then follows the "
                  "binlog from the snapshot's position)")


def purge_risk(logs: list[tuple[str, int]], file: str, warn_files: int) -> str | None:
    """The warning when `file` is among the `warn_files` oldest of `logs` (SHOW BINARY LOGS) and
    not the newest; None otherwise (also when `file` is not listed: nothing to warn about)."""
    names = [name for name, _ in logs]
    if file not in names or file == names[-1]:
        return None
    index = names.index(file)
    if index >= warn_files:
        return None
    behind = len(names) - 1 - index
    return (f"the server's oldest binlog is {names[0]} and the shipper still reads {file} "
            f"({behind} file(s) behind the newest, {names[-1]}): the next purge removes what it "
            f"has not shipped")


def is_purged(logs: list[tuple[str, int]], file: str) -> bool:
    """`file` sorts before the server's oldest binlog (so it was there once and is gone)."""
    names = [name for name, _ in logs]
    return not names or (file not in names and binlog_sort_key(file) < binlog_sort_key(names[0]))


def purged_error(logs: list[tuple[str, int]], server: str, source: str, *, file: str | None,
                 pos: int, gtid: str | None) -> PurgedBinlogError:
    oldest = logs[0][0] if logs else "(none)"
    if gtid is not None:
        what = f"the transactions after GTID state {gtid} are no longer in its binlog"
    else:
        what = f"binlog {file} is gone, so are its events from position {pos} on"
    return PurgedBinlogError(f"server {server} purged what the topic still needs: {what} (oldest "
                             f"binlog on the server: {oldest}); {RESNAPSHOT_WAY}",
                             source=source, file=file, pos=pos if file is not None else None)


class PurgeWatch:
    """Prints purge_risk's warning as one line, at most once per `interval_s`; `risk` keeps the
    latest (the progress line shows it), `warnings` counts the lines printed."""

    def __init__(self, source: str, warn_files: int, interval_s: float, *,
                 out: TextIO | None = None, clock: Callable[[], float] = time.monotonic):
        self.source, self.warn_files, self.interval_s = source, warn_files, interval_s
        self.out, self.clock = out, clock
        self.risk: str | None = None
        self.warnings = 0
        self._warned_at: float | None = None

    def check(self, logs: list[tuple[str, int]], file: str | None) -> str | None:
        self.risk = purge_risk(logs, file, self.warn_files) if file is not None else None
        now = self.clock()
        if self.risk and (self._warned_at is None or now - self._warned_at >= self.interval_s):
            # sys.stderr looked up now, not at import: a caller may have redirected it
            print(f"cdc-ship {self.source}: warning: {self.risk}", file=self.out or sys.stderr,
                  flush=True)
            self._warned_at, self.warnings = now, self.warnings + 1
        return self.risk

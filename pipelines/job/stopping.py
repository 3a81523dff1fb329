"""How cdc-replicate ends on its own terms (issue #39 item 4; README "Stopping the job").

SIGINT (Ctrl-C) or SIGTERM asks the job to stop: the batch in progress finishes and commits, or a
batch that had not started its work is abandoned before it writes anything (a restart runs it
again from the same offsets: DESIGN.md "Exactly once"); the query stops between batches, and
the job prints one line, `cdc-replicate: stopped after batch N`, and exits 0. A second signal
abandons the running batch at once: one line, exit 130. The process then ends without a graceful
JVM shutdown (pipelines/job/driver_tie.py halts the JVM), so nothing of that batch is committed after
the line; what it had committed is skipped by the restart's replay (Delta txn ids, commit marks).

The handlers only set a flag: PySpark's own SIGINT handler makes a Py4J call from inside the
signal handler while the main thread waits in one (`RuntimeError: reentrant call`), and a
query stopped in the middle of foreachBatch prints Spark's and Py4J's traces.
"""
from __future__ import annotations

import os
import signal
import sys
import threading
from typing import Callable

from libs.runtime.stops import JobStopped

ABANDONED_STATUS = 130  # as a shell reports a process ended by SIGINT
SIGNALS = (signal.SIGINT, signal.SIGTERM)


class StopRequested(JobStopped):
    """Raised by the sink at the start of a batch once a stop was asked: nothing of it written."""

    def __init__(self) -> None:
        super().__init__("stop requested before the batch began")


class StopSignals:
    """SIGINT / SIGTERM -> `requested`; a second one -> `abandon` (prints its line, ends the
    process). Installed only in the main thread (Python delivers signals there)."""

    def __init__(self, prog: str, abandon: Callable[[str], None] | None = None):
        self.prog = prog
        self.requested = threading.Event()
        self.running: Callable[[], int | None] = lambda: None  # the batch being written (the sink's)
        self._abandon = abandon or _exit_abandoned
        self._previous: dict = {}

    def install(self) -> "StopSignals":
        if threading.current_thread() is threading.main_thread():
            for sig in SIGNALS:  # again after a SparkContext replaced SIGINT's with its own
                self._previous.setdefault(sig, signal.getsignal(sig))
                signal.signal(sig, self._on_signal)
        return self

    def restore(self) -> None:
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)
        self._previous.clear()

    def _on_signal(self, signum, _frame) -> None:
        if not self.requested.is_set():
            self.requested.set()
            return
        running = self.running()  # no Py4J call in a handler: the main thread may be in one
        self._abandon(f"{self.prog}: stopped " + ("between batches" if running is None else
                      f"during batch {running} (abandoned: a restart runs it again)"))

    def check(self, _batch_id: int = -1) -> None:
        """The sink's call at the start of a batch: once a stop is asked, no batch begins."""
        if self.requested.is_set():
            raise StopRequested()


def _exit_abandoned(line: str) -> None:
    print(line, file=sys.stderr, flush=True)
    os._exit(ABANDONED_STATUS)  # no Python or JVM shutdown: the JVM halts (pipelines/job/driver_tie.py)


def stopped_line(prog: str, last_committed: int | None) -> str:
    """The one line of a job stopped by a signal."""
    where = "before its first batch" if last_committed is None else f"after batch {last_committed}"
    return f"{prog}: stopped {where}"


def await_query(query, signals: StopSignals, poll_s: float = 0.2) -> None:
    """Wait for the query to end; once a stop is asked, stop it when no trigger runs. Raises the
    query's StreamingQueryException when it failed (also the sink's StopRequested)."""
    while not query.awaitTermination(poll_s):
        if signals.requested.is_set() and not query.status["isTriggerActive"]:
            query.stop()  # between triggers the stream thread only sleeps: nothing interrupted


def last_committed_batch(query) -> int | None:
    """The newest batch id in the query's checkpoint commit log (this run's or an earlier one's)."""
    latest = query._jsq.streamingQuery().commitLog().getLatestBatchId()
    return int(latest.get()) if latest.isDefined() else None


def wait_listener_done(terminated: threading.Event, timeout_s: float = 30.0) -> bool:
    """Wait until the progress listener saw the query end: Spark delivers a query's last
    progress to Python listeners after the query ended, and removing the listener (or ending
    the process) before that prints the listener bus's Py4J traces and loses the last batch line."""
    return terminated.wait(timeout_s)

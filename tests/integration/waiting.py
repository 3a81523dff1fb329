"""Waiting in an integration test for what a job or a server does in its own time."""
from __future__ import annotations

import time


def wait_until(predicate, timeout: float, what: str, every: float = 0.3) -> None:
    """Poll `predicate` every `every` s until it holds; an AssertionError naming `what` after
    `timeout` s (a bound for a loaded machine, not a timing)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(every)
    raise AssertionError(f"timed out waiting for {what}")

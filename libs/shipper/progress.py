"""Progress on stderr every few seconds: events/s, where the shipper is, lag in bytes and in
seconds, or "caught up" when a heartbeat after the last event said the server had logged nothing
more (libs/contracts/heartbeat.py): an idle source's age of its last event grows, its lag does not."""
from __future__ import annotations

import sys
import time
from typing import Callable, TextIO


class Progress:
    """Call event() per shipped event; report() prints at most every `interval_s` seconds.
    `lag_bytes` is asked only when a line is printed (it may query the server); `note`, asked
    after it, adds a word of state to the line when it returns text (e.g. a purge risk)."""

    def __init__(self, source: str, *, interval_s: float = 5.0, out: TextIO = sys.stderr,
                 lag_bytes: Callable[[], int | None] = lambda: None,
                 note: Callable[[], str | None] = lambda: None, clock=time.monotonic):
        self.source, self.interval_s, self.out, self.lag_bytes = source, interval_s, out, lag_bytes
        self.note = note
        self.clock = clock
        self.total = 0
        self._window = 0
        self._last = clock()
        self.last_file: str | None = None
        self.last_pos = 0
        self.last_event_ts = 0
        # for the metrics (libs/shipper/ship_metrics.py): kept here, read when a scrape asks
        self.commit_to_kafka_s: float | None = None  # publish time - the last event's timestamp
        self.last_lag_bytes: int | None = None       # as of the last line printed
        self.caught_up_as_of: float | None = None    # Unix time of the last heartbeat published
        self.caught_up = False  # a heartbeat came after the last event shipped

    def event(self, file: str, pos: int, frame: bytes) -> None:
        self.total += 1
        self._window += 1
        self.caught_up = False
        self.last_file, self.last_pos = file, pos + len(frame)
        ts = int.from_bytes(frame[0:4], "little")
        # The lag is read from the clock only when the binlog's timestamp second changes: the
        # events of one second (a transaction's share its start time) are published within
        # moments of each other, and time.time() per event was ~30% of this call. So the gauge
        # is as of the first event of the last second published (a transaction published over
        # several seconds shows its first event's lag).
        if ts and ts != self.last_event_ts:
            self.last_event_ts = ts
            self.commit_to_kafka_s = max(0.0, time.time() - ts)

    def heartbeat(self, at: float, file: str | None = None, pos: int | None = None) -> None:
        """A heartbeat record was published: the shipper held everything the server had at `at`,
        up to `file`:`pos` (known from the resume point even before this run shipped an event)."""
        self.caught_up_as_of, self.caught_up = at, True
        if file is not None and pos is not None:
            self.last_file, self.last_pos = file, pos

    def report(self, *, force: bool = False) -> None:
        now = self.clock()
        if not force and now - self._last < self.interval_s:
            return
        rate = self._window / max(now - self._last, 1e-9)
        lag_b = self.last_lag_bytes = self.lag_bytes()
        lag_s = max(0, int(time.time()) - self.last_event_ts) if self.last_event_ts else None
        note = self.note()
        at = (self.last_file, self.last_pos) if self.last_file is not None else None
        print(progress_line(self.source, rate, self.total, at, lag_b, lag_s, self.caught_up, note),
              file=self.out, flush=True)
        self._window, self._last = 0, now


def progress_line(source: str, rate: float, total: int, at: tuple[str, int] | None,
                  lag_bytes: int | None, lag_s: int | None, caught_up: bool,
                  note: str | None = None) -> str:
    """The progress line. `at`: the position after the last event (None before any); `lag_s`:
    the age of the last event's commit; `caught_up` (a heartbeat after it) replaces that age,
    which only says how long the source has been idle."""
    head = f"cdc-ship {source}: {rate:,.0f} events/s, {total:,} shipped, "
    if at is None and not caught_up:
        where = "waiting for the first event"
    else:
        where = (f"at {at[0]}:{at[1]}, " if at is not None else "") + (
            f"lag {'?' if lag_bytes is None else f'{lag_bytes:,}'} bytes, "
            + ("caught up" if caught_up else f"{'?' if lag_s is None else lag_s} s"))
    return head + where + (f", {note}" if note else "")

"""libs/shipper/progress.py Progress.event: the commit -> Kafka lag of the shipper's metrics,
read from the clock once per timestamp second of the binlog, not per event."""
import io
import struct

from libs.shipper import progress as progress_module
from libs.shipper.progress import Progress


def frame(ts: int) -> bytes:
    return struct.pack("<IBIIIH", ts, 2, 1, 23, 0, 0) + b"\0" * 4


class Clock:
    def __init__(self, *readings: float):
        self.readings, self.calls = list(readings), 0

    def __call__(self) -> float:
        self.calls += 1
        return self.readings.pop(0)


def test_the_lag_is_read_when_the_timestamp_second_changes_only(monkeypatch):
    clock = Clock(105.0, 109.5)
    monkeypatch.setattr(progress_module.time, "time", clock)
    p = Progress("s", out=io.StringIO())
    lags = []
    for ts in (100, 100, 100, 0, 101, 101):  # 0: an artificial event (no commit time)
        p.event("bin.000001", 4, frame(ts))
        lags.append(p.commit_to_kafka_s)
    assert lags == [5.0, 5.0, 5.0, 5.0, 8.5, 8.5]  # as of the first event of each second
    assert clock.calls == 2 and p.last_event_ts == 101 and p.total == 6


def test_a_producer_clock_behind_the_servers_shows_no_negative_lag(monkeypatch):
    monkeypatch.setattr(progress_module.time, "time", Clock(99.0))
    p = Progress("s", out=io.StringIO())
    p.event("bin.000001", 4, frame(100))
    assert p.commit_to_kafka_s == 0.0

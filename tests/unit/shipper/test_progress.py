"""libs/shipper/progress.py Progress.event: the commit -> Kafka lag of the shipper's metrics,
read from the clock once per timestamp second of the binlog, not per event."""
import io
import struct

from libs.shipper import progress as progress_module
from libs.shipper.progress import Progress, progress_line


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


# -- the line's text (issue #39 item 7) -------------------------------------------------------------
def test_before_any_event_the_line_says_it_waits_not_at_none():
    line = progress_line("s", 0.0, 0, None, None, None, False)
    assert line == "cdc-ship s: 0 events/s, 0 shipped, waiting for the first event"


def test_a_shipper_behind_shows_the_age_of_its_last_event():
    line = progress_line("s", 1234.4, 5000, ("bin.000002", 1200), 4096, 7, False, "at risk of purge")
    assert line == ("cdc-ship s: 1,234 events/s, 5,000 shipped, at bin.000002:1200, lag 4,096 bytes, 7 s, "
                    "at risk of purge")


def test_a_heartbeat_after_the_last_event_says_caught_up_instead_of_a_growing_age():
    line = progress_line("s", 0.0, 5000, ("bin.000002", 1200), 0, 300, True)
    assert line == "cdc-ship s: 0 events/s, 5,000 shipped, at bin.000002:1200, lag 0 bytes, caught up"


def lines_of(events_and_beats) -> list[str]:
    """Progress fed a sequence of ("event", ts) / ("beat", file, pos); one forced line after each."""
    out = io.StringIO()
    p = Progress("s", out=out, lag_bytes=lambda: 0)
    for item in events_and_beats:
        if item[0] == "event":
            p.event("bin.000001", 100, frame(item[1]))
        else:
            p.heartbeat(1.0, item[1], item[2])
        p.report(force=True)
    return out.getvalue().splitlines()


def test_caught_up_lasts_until_the_next_event():
    lines = lines_of([("event", 1000), ("beat", "bin.000001", 123), ("event", 1001)])
    assert [line.rsplit(", ", 1)[1] for line in lines] == [
        lines[0].rsplit(", ", 1)[1], "caught up", lines[2].rsplit(", ", 1)[1]]
    assert lines[0].endswith(" s") and lines[2].endswith(" s")
    assert "at bin.000001:123," in lines[1]  # the heartbeat's position: everything up to it is shipped


def test_a_heartbeat_before_any_event_names_the_resume_position():
    [line] = lines_of([("beat", "bin.000007", 4)])
    assert line.endswith("at bin.000007:4, lag 0 bytes, caught up")


def test_a_fresh_shipper_reports_waiting_for_the_first_event():
    out = io.StringIO()
    Progress("s", out=out, lag_bytes=lambda: 10).report(force=True)
    assert out.getvalue() == "cdc-ship s: 0 events/s, 0 shipped, waiting for the first event\n"

"""libs/runtime/lag_gauge.py: a lag gauge that grows while a batch runs, falls to the batch's real lag
when it commits, and to 0 once a heartbeat says the source caught up (issue #39 item 5)."""
import pytest

from libs.runtime.lag_gauge import LagGauge, caught_up_sources

T = 1_764_000_000.0  # 2025-11-24T16:00:00Z, epoch s


def test_the_gauge_grows_during_a_long_batch_then_falls_to_its_real_lag_then_to_0_when_caught_up():
    gauge = LagGauge()
    gauge.read(7, {"s": T - 30})  # batch 7 starts at T; its oldest commit is 30 s old
    at_1, at_5 = gauge.values(T + 1)["s"], gauge.values(T + 5)["s"]
    assert at_5 > at_1 and (at_1, at_5) == (31, 35)
    assert gauge.values(T + 106)["s"] == 136  # still growing: nothing of the batch is in Delta
    gauge.visible(7, T + 106)
    assert gauge.values(T + 155)["s"] == 136  # the batch's real lag, not one that keeps growing
    gauge.read(8, {"s": T + 150})  # a batch of the source's heartbeat
    gauge.visible(8, T + 156, caught_up={"s"}.__contains__)
    assert gauge.values(T + 200)["s"] == 0


# Each row: what happened (in order), the time read, the gauge's values then.
SCRIPTS = {
    "nothing read yet: no sample": ([], T, {}),
    "a running batch: now - its oldest": ([("read", 1, {"a": T - 4, "b": T - 1})], T + 1, {"a": 5, "b": 2}),
    "two reads of one batch: the oldest wins": (
        [("read", 1, {"a": T - 4}), ("read", 1, {"a": T - 9})], T, {"a": 9}),
    "committed: visible - oldest, whatever now is": (
        [("read", 1, {"a": T - 4}), ("visible", 1, T + 2, None, ())], T + 600, {"a": 6}),
    "the writer's own lag wins over visible - oldest": (
        [("read", 1, {"a": T - 4}), ("visible", 1, T + 2, {"a": 5.5}, ())], T + 600, {"a": 5.5}),
    "a key only the writer measured (no read told)": ([("visible", 1, T, {"a": 3.0}, ())], T + 9, {"a": 3.0}),
    "the next batch read before the last one's end was told: it stays pending": (
        [("read", 1, {"a": T - 4}), ("read", 2, {"a": T + 1}), ("visible", 1, T + 2, None, ())], T + 3,
        {"a": 2}),
    "a batch that never commits: its lag keeps growing": (
        [("read", 1, {"a": T - 4}), ("read", 2, {"b": T})], T + 3_600, {"a": 3_604, "b": 3_600}),
    "a later batch's end makes earlier ones visible too": (
        [("read", 1, {"a": T - 4}), ("read", 2, {"b": T}), ("visible", 2, T + 1, None, ())], T + 50,
        {"a": 5, "b": 1}),
    "caught up: 0, also for a key the batch did not read": (
        [("read", 1, {"a": T - 4}), ("visible", 1, T, None, ()), ("read", 2, {"b": T}),
         ("visible", 2, T + 1, None, ("a", "b"))], T + 50, {"a": 0, "b": 0}),
    "caught up, but a later batch already read more: that one's lag": (
        [("read", 1, {"a": T - 4}), ("read", 2, {"a": T + 1}), ("visible", 1, T + 2, None, ("a",))], T + 4,
        {"a": 3}),
    "caught up, then a batch read more: it grows again": (
        [("read", 1, {"a": T}), ("visible", 1, T, None, ("a",)), ("read", 2, {"a": T + 10})], T + 12,
        {"a": 2}),
    "a producer clock ahead of the job's: never negative": (
        [("read", 1, {"a": T + 5}), ("read", 2, {"b": T + 5}), ("visible", 2, T + 1, None, ())], T,
        {"a": 0, "b": 0}),
}


@pytest.mark.parametrize("steps, now, expected", SCRIPTS.values(), ids=SCRIPTS.keys())
def test_gauge_script(steps, now, expected):
    gauge = LagGauge()
    for step in steps:
        if step[0] == "read":
            gauge.read(step[1], step[2])
        else:
            _, batch_id, at, lags, caught_up = step
            gauge.visible(batch_id, at, lags, caught_up=set(caught_up).__contains__)
    assert gauge.values(now) == expected


@pytest.mark.parametrize("heartbeats, newest, caught_up", [
    ({"s": 20}, {}, {"s"}),                    # a batch of heartbeats only
    ({"s": 20}, {"s": 19}, {"s"}),             # the heartbeat came after the batch's last commit
    ({"s": 20}, {"s": 20}, {"s"}),             # in the same microsecond: nothing logged after it
    ({"s": 20}, {"s": 21}, set()),             # the source logged on: what followed may be unread
    ({}, {"s": 21}, set()),                    # no heartbeat: nothing says it is caught up
    ({"s": 20, "t": 5}, {"t": 6}, {"s"}),
])
def test_caught_up_sources(heartbeats, newest, caught_up):
    assert caught_up_sources(heartbeats, newest) == caught_up

"""pipelines/job/job_metrics.py's lag gauges as a scrape reads them (issue #39 item 5): fed the way
the sink, the apply stage and the streaming listener feed them, with a clock the test moves. No
Spark session: JobMetrics is plain Python on the driver."""
import datetime as dt

from libs.apply.lag import INPUT_METRICS
from libs.stages.counters import SourceCounters
from pipelines.job.job_metrics import JobMetrics

T = 1_764_000_000.0  # 2025-11-24T16:00:00Z, epoch s
TABLE = ("s", "d.t")


class Clock:
    def __init__(self, now: float):
        self.now = now

    def __call__(self) -> float:
        return self.now


def gauges(metrics: JobMetrics) -> dict[str, dict[tuple, float]]:
    """The two lag gauges of a scrape: name -> label values -> value."""
    out = {}
    for family in metrics.families():
        if family.name in ("cdc_kafka_to_delta_lag_seconds", "cdc_commit_to_delta_lag_seconds"):
            out[family.name] = {tuple(s.labels.values()): s.value for s in family.samples}
    return out


def kafka(metrics):
    return gauges(metrics)["cdc_kafka_to_delta_lag_seconds"].get(("s",))


def commit(metrics):
    return gauges(metrics)["cdc_commit_to_delta_lag_seconds"].get(TABLE)


def counters(oldest_kafka_s: float) -> SourceCounters:
    return SourceCounters("s", 0, 0, 0, 0, int(oldest_kafka_s * 1000))


def progress(batch_id: int, start: float, duration_s: float, oldest_kafka_s: float) -> dict:
    """The listener's progress of a trigger that started at `start` (epoch s)."""
    stamp = (dt.datetime.fromtimestamp(start, dt.timezone.utc).isoformat(timespec="milliseconds")
             .replace("+00:00", "Z"))
    return {"batchId": batch_id, "timestamp": stamp,
            "durationMs": {"triggerExecution": int(duration_s * 1000)},
            "observedMetrics": {INPUT_METRICS: {"records": 5, "oldest_kafka_ms": int(oldest_kafka_s * 1000),
                                                "newest_kafka_ms": int(oldest_kafka_s * 1000)}}}


def test_a_scrape_during_a_long_batch_reads_a_growing_lag_then_the_batch_s_real_lag_then_0(capsys):
    clock = Clock(T)
    metrics = JobMetrics(clock=clock)
    # batch 0 starts at T: its records reached Kafka from T - 20, its oldest commit is at T - 30
    metrics.read(0, [counters(T - 20)])
    metrics.tables_read(0, {TABLE: int((T - 30) * 1e6)})
    clock.now = T + 1
    at_1 = kafka(metrics), commit(metrics)
    clock.now = T + 5
    at_5 = kafka(metrics), commit(metrics)
    assert at_5[0] > at_1[0] and at_5[1] > at_1[1]
    assert at_1 == (21, 31) and at_5 == (25, 35)
    # it commits at T + 100 (the apply stage measured 130 s); the trigger ends at T + 101
    clock.now = T + 100
    metrics.batch(0, {TABLE: 130.0}, {}, {}, counters=[counters(T - 20)],
                  newest_commits={"s": int((T - 2) * 1e6)})
    metrics.progress(progress(0, T, 101, T - 20))
    clock.now = T + 149  # long after: the real lags, not growing, not the lag of when the batch began
    assert (kafka(metrics), commit(metrics)) == (121, 130)
    # batch 1: the source's heartbeat only, caught up as of T + 148
    metrics.read(1, [counters(T + 148)])
    metrics.batch(1, {}, {"s": int((T + 148) * 1e6)}, {}, counters=[counters(T + 148)])
    metrics.progress(progress(1, T + 149, 0.2, T + 148))
    clock.now = T + 160
    assert (kafka(metrics), commit(metrics)) == (0, 0)
    assert "batch 0: 5 records in 101.0 s, Kafka -> Delta 121.0 s" in capsys.readouterr().err


def test_a_batch_that_committed_changes_after_its_heartbeat_is_not_caught_up():
    clock = Clock(T)
    metrics = JobMetrics(clock=clock)
    metrics.read(0, [counters(T - 3)])
    metrics.tables_read(0, {TABLE: int((T - 4) * 1e6)})
    clock.now = T + 2
    metrics.batch(0, {TABLE: 6.0}, {"s": int((T - 5) * 1e6)}, {}, newest_commits={"s": int((T - 4) * 1e6)})
    metrics.progress(progress(0, T, 2, T - 3))
    clock.now = T + 30
    assert (kafka(metrics), commit(metrics)) == (5, 6)


def test_an_idle_trigger_s_progress_does_not_end_the_batch_that_runs():
    """A progress for a batch id the sink never reported (no batch ran) ends nothing."""
    clock = Clock(T)
    metrics = JobMetrics(clock=clock)
    metrics.read(3, [counters(T - 1)])
    metrics.progress({"batchId": 3, "timestamp": "2025-11-24T16:00:00.000Z", "durationMs": {},
                      "observedMetrics": {}})
    clock.now = T + 9
    assert kafka(metrics) == 10


def test_applied_changes_count_per_table_how_each_batch_applied_them():
    metrics = JobMetrics(clock=Clock(T))
    metrics.applied({"d__t": 900}, {"d__t": 100, "d__k": 7})
    metrics.applied({}, {"d__k": 3})
    family = next(f for f in metrics.families() if f.name == "cdc_applied_changes")
    samples = {tuple(s.labels.values()): s.value for s in family.samples if s.name.endswith("_total")}
    assert samples == {("d__t", "folded"): 900, ("d__t", "replayed"): 100, ("d__k", "replayed"): 10}

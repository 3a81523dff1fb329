"""libs/apply/lag.py: the Kafka -> Delta lag of a trigger from its progress, the commit -> Delta lag
per table from the changes a batch applied."""
import pytest

from tests.change_builders import change_of
from libs.apply.lag import INPUT_METRICS, commit_lags, kafka_to_delta_lag_s, oldest_commits, visible_at_ms

START_MS = 1_764_000_000_000  # 2025-11-24T16:00:00Z


def progress(duration_ms, records, oldest_ms):
    return {"timestamp": "2025-11-24T16:00:00.000Z", "durationMs": {"triggerExecution": duration_ms},
            "observedMetrics": {INPUT_METRICS: {"records": records, "oldest_kafka_ms": oldest_ms,
                                                "newest_kafka_ms": oldest_ms}}}


def test_the_rows_are_visible_when_the_trigger_ends():
    assert visible_at_ms(progress(1500, 1, 0)) == START_MS + 1500


@pytest.mark.parametrize("duration_ms, records, oldest_ms, lag", [
    (1_000, 10, START_MS - 2_000, 3.0),     # waited 2 s in Kafka, 1 s to apply
    (61_000, 25, START_MS - 500, 61.5),     # a stalled apply
    (1_000, 0, None, None),                 # an empty trigger: nothing waited
    (1_000, 3, START_MS + 5_000, 0.0),      # a producer clock ahead of the job's: never negative
])
def test_kafka_to_delta_lag(duration_ms, records, oldest_ms, lag):
    assert kafka_to_delta_lag_s(progress(duration_ms, records, oldest_ms)) == lag


def test_a_progress_without_observed_metrics_has_no_lag():
    assert kafka_to_delta_lag_s({"timestamp": "2025-11-24T16:00:00Z", "durationMs": {}}) is None


def test_commit_lag_per_table_is_from_its_oldest_applied_commit():
    changes = [
        change_of("insert", source="s1", database="d", table="t", commit_ts=10_000_000),
        change_of("insert", source="s1", database="d", table="t", commit_ts=12_000_000),
        change_of("insert", source="s1", database="d", table="u", commit_ts=19_500_000),
        change_of("insert", source="s2", database="d", table="t", commit_ts=15_000_000),
        change_of("ddl", source="s1", database="d", table="", commit_ts=1),       # database-level DDL
    ]
    assert commit_lags(changes, 20.0) == {("s1", "d.t"): 10.0, ("s1", "d.u"): 0.5, ("s2", "d.t"): 5.0}
    assert oldest_commits(changes) == {("s1", "d.t"): 10_000_000, ("s1", "d.u"): 19_500_000,
                                       ("s2", "d.t"): 15_000_000}
    # the executors' part, summed up by Spark: its oldest per table joins the driver's
    more = {("s1", "d.t"): 11_000_000, ("s1", "d.u"): 9_000_000, ("s3", "d.v"): 18_000_000}
    assert oldest_commits(changes, more) == {("s1", "d.t"): 10_000_000, ("s1", "d.u"): 9_000_000,
                                             ("s2", "d.t"): 15_000_000, ("s3", "d.v"): 18_000_000}
    assert commit_lags(changes, 20.0, more)[("s3", "d.v")] == 2.0

"""Lag of the replication, from what a micro-batch knows (issue #20 item 2). Pure: the Spark
listener and the apply stage hand in plain values (pipelines/job/job_metrics.py).

  Kafka -> Delta   a batch's rows are visible in Delta when its trigger ends (foreachBatch has
                   committed): progress.timestamp (the trigger's start) + durationMs.triggerExecution,
                   minus the oldest Kafka timestamp among the batch's records (observed metrics
                   INPUT_METRICS, set on the Kafka source by pipelines/replicate.py).
                   Per source: the same end, minus the oldest Kafka timestamp among the source's
                   records, which the assemble stage reports (libs/stages/counters.py); the gauge
                   that grows while a batch runs is libs/runtime/lag_gauge.py.
  commit -> Delta  per source and table: the time the batch's writes were committed minus the
                   oldest source commit time among the changes it applied to that table.
"""
from __future__ import annotations

import datetime as dt
from collections import Counter
from typing import Any, Iterable, Mapping, NamedTuple

from libs.contracts.change import Change
from libs.contracts.table_names import table_key

INPUT_METRICS = "cdc_input"  # the observed metrics' name in the query progress
OLDEST_KAFKA_MS, NEWEST_KAFKA_MS, RECORDS = "oldest_kafka_ms", "newest_kafka_ms", "records"


def visible_at_ms(progress: Mapping[str, Any]) -> int:
    """When the batch's rows became visible in Delta: its trigger's start + its duration (ms)."""
    start = dt.datetime.fromisoformat(progress["timestamp"].replace("Z", "+00:00"))
    return int(start.timestamp() * 1000) + int(progress["durationMs"].get("triggerExecution", 0))


def kafka_to_delta_lag_s(progress: Mapping[str, Any]) -> float | None:
    """Seconds from the batch's oldest Kafka record to its rows being visible in Delta; None for
    a batch without records (nothing waited)."""
    observed = (progress.get("observedMetrics") or {}).get(INPUT_METRICS) or {}
    oldest = observed.get(OLDEST_KAFKA_MS)
    if not observed.get(RECORDS) or oldest is None:
        return None
    return max(0.0, (visible_at_ms(progress) - int(oldest)) / 1000)


def oldest_commits(changes: Iterable[Change], more: Mapping[tuple[str, str], int] | None = None
                   ) -> dict[tuple[str, str], int]:
    """(source, table_key) -> its oldest commit (epoch micros) among `changes` and `more` (the
    same, of changes not given one by one: pipelines/apply/batch_split.ExecutorSplit.oldest)."""
    oldest: dict[tuple[str, str], int] = {}
    for key, micros in (more or {}).items():
        oldest[key] = min(oldest.get(key, micros), micros)
    for c in changes:
        if c.commit_ts is None or not c.table:
            continue
        # two tables never one (libs/contracts/table_names.py)
        key = (c.source, table_key(c.database, c.table))
        oldest[key] = min(oldest.get(key, c.commit_ts), c.commit_ts)
    return oldest


def commit_lags(changes: Iterable[Change], visible_at_s: float,
                more: Mapping[tuple[str, str], int] | None = None) -> dict[tuple[str, str], float]:
    """(source, table_key) -> seconds from its oldest applied commit (epoch micros) to visible_at_s."""
    return {key: max(0.0, visible_at_s - micros / 1e6)
            for key, micros in oldest_commits(changes, more).items()}


class AppliedBatch(NamedTuple):
    """What the last batch applied, for the job's metrics (pipelines/job/job_metrics.py)."""

    commit_lags: dict[tuple[str, str], float] = {}  # (source, db.table) -> commit -> visible, s
    quarantined: Counter = Counter()  # source -> changes the replay quarantined
    folded: Counter = Counter()  # delta table -> row changes applied per row in Arrow (libs/apply/fold.py)
    replayed: Counter = Counter()  # delta table -> row changes replayed change by change (libs/replay)

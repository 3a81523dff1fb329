"""cdc-replicate's lag and counts where Spark users look (issue #20 item 2): the streaming
query's progress (observed metrics on the Kafka input: records, oldest/newest Kafka time), a
progress line per micro-batch on stderr, and Prometheus metrics (libs/runtime/metrics.py) when a
metrics port is configured.

`JobMetrics` is fed by four calls, all on the driver (a lock keeps a scrape consistent): the
foreachBatch sink says what a batch has read, once its first aggregate has counted it (`read`:
the oldest Kafka time per source), the apply stage says which tables it touches before it writes
(`tables_read`: the oldest commit per table), the sink reports what the committed batch applied
(`batch`: caught_up_as_of and quarantined counts per source, the assembler's counters), and a
StreamingQueryListener reports the trigger's progress (`progress`: the batch's rows are visible
when the trigger ends; the sink's report of the same batch id arrived before it, as the sink
runs inside the trigger). The lag gauges are read at scrape time (libs/runtime/lag_gauge.py): they grow
while a batch runs and fall to the batch's real lag when it commits (issue #39 item 5)."""
from __future__ import annotations

import json
import sys
import threading
import time
from collections import Counter
from typing import Callable, Iterable, Mapping, TextIO

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.streaming import StreamingQueryListener

from libs.apply.lag import (
    INPUT_METRICS, NEWEST_KAFKA_MS, OLDEST_KAFKA_MS, RECORDS, kafka_to_delta_lag_s, visible_at_ms,
)
from libs.runtime.lag_gauge import LagGauge, caught_up_sources
from libs.runtime.metrics import labelled, metric
from libs.runtime.step_clock import BatchCost, StepClock, step_line, with_other
from libs.stages.counters import SourceCounters


def observe_input(kafka_df: DataFrame) -> DataFrame:
    """The Kafka records of each batch, counted and timed, in the query's progress."""
    ts = F.unix_millis(F.col("timestamp"))
    return kafka_df.observe(INPUT_METRICS, F.count(F.lit(1)).alias(RECORDS),
                            F.min(ts).alias(OLDEST_KAFKA_MS), F.max(ts).alias(NEWEST_KAFKA_MS))


class JobMetrics:
    def __init__(self, out: TextIO | None = None, clock: Callable[[], float] = time.time):
        self.out = out  # where the progress line per batch goes (None: stderr as it is then)
        self.clock = clock  # epoch seconds: a scrape's now, a batch's commit
        self._lock = threading.Lock()
        self.batches = 0
        self.records = 0
        self.kafka_to_delta_s: float | None = None  # the last batch's, for its progress line
        self.kafka_lag: LagGauge[str] = LagGauge()  # source -> Kafka -> Delta
        self.commit_lag: LagGauge[tuple[str, str]] = LagGauge()  # (source, db.table) -> commit -> Delta
        # batch id -> what the sink reported of it (sources caught up, its cost), until its progress
        self._reported: dict[int, tuple[set[str], BatchCost]] = {}
        self.assembler: dict[str, SourceCounters] = {}  # the last counts of each source
        self.caught_up_as_of: dict[str, float] = {}
        self.quarantined: Counter = Counter()
        self.applied_changes: Counter = Counter()  # (delta table, "folded" | "replayed") -> row changes
        self.listener: StreamingQueryListener | None = None  # the one feeding progress(), once added
        self.steps = StepClock()  # the running batch's split, timed by the sink and the applier
        self.step_seconds: Counter = Counter()  # step -> seconds, every batch (with "other")
        self.spark_jobs = 0  # the Spark jobs the batches started (pipelines/job/batch_jobs.py)

    def read(self, batch_id: int, counters: Iterable[SourceCounters]) -> None:
        """The running batch's records, counted: the oldest Kafka time of each source's."""
        with self._lock:
            self.kafka_lag.read(batch_id, {c.source: c.oldest_kafka_ms / 1000 for c in counters
                                           if c.oldest_kafka_ms is not None})

    def tables_read(self, batch_id: int, oldest_commits: Mapping[tuple[str, str], int]) -> None:
        """The running batch's changes per (source, db.table): the oldest commit (epoch micros)
        of each, before the apply stage writes them (pipelines/apply/applier.py)."""
        with self._lock:
            self.commit_lag.read(batch_id, {key: micros / 1e6 for key, micros in oldest_commits.items()})

    def batch(self, batch_id: int, commit_lags: Mapping[tuple[str, str], float],
              caught_up_micros: Mapping[str, int], quarantined: Mapping[str, int],
              counters: Iterable[SourceCounters] = (),
              newest_commits: Mapping[str, int] | None = None,
              cost: BatchCost = BatchCost()) -> None:
        """What a committed batch applied (called by the sink, pipelines/stages/sink.py).
        `commit_lags`: the apply stage's own, measured when its writes committed;
        `newest_commits`: source -> the newest commit (epoch micros) the batch read of it;
        `cost`: its seconds per step and its Spark jobs (libs/runtime/step_clock.py BatchCost),
        for its progress line."""
        caught_up = caught_up_sources(caught_up_micros, newest_commits or {})
        with self._lock:
            self.commit_lag.visible(batch_id, self.clock(), commit_lags,
                                    caught_up=lambda key: key[0] in caught_up)
            self._reported[batch_id] = (caught_up, cost)
            self.caught_up_as_of.update({s: at / 1e6 for s, at in caught_up_micros.items()})
            self.quarantined.update(quarantined)
            self.assembler.update({c.source: c for c in counters})  # totals: the latest replaces

    def applied(self, folded: Mapping[str, int], replayed: Mapping[str, int]) -> None:
        """How a committed batch's row changes were applied, per Delta table: folded per row in
        Arrow (libs/apply/fold.py) or replayed change by change (libs/replay)."""
        with self._lock:
            self.applied_changes.update({(t, "folded"): n for t, n in folded.items()})
            self.applied_changes.update({(t, "replayed"): n for t, n in replayed.items()})

    def progress(self, progress: Mapping) -> None:
        """A trigger's StreamingQueryProgress (as its JSON dict)."""
        observed = (progress.get("observedMetrics") or {}).get(INPUT_METRICS) or {}
        lag = kafka_to_delta_lag_s(progress)
        with self._lock:
            self.batches += 1
            self.records += int(observed.get(RECORDS) or 0)
            if lag is not None:
                self.kafka_to_delta_s = lag
            batch_id = progress["batchId"]
            trigger_s = progress["durationMs"].get("triggerExecution", 0) / 1000
            reported = self._reported.get(batch_id)  # None: no batch ran (an idle trigger)
            cost = reported[1] if reported else BatchCost()
            steps, jobs = with_other(cost.steps, trigger_s), cost.jobs
            self.step_seconds.update(steps)
            self.spark_jobs += jobs or 0
            if reported is not None:  # a batch that ran and committed
                self.kafka_lag.visible(batch_id, visible_at_ms(progress) / 1000,
                                       caught_up=reported[0].__contains__)
                for done in [b for b in self._reported if b <= batch_id]:
                    del self._reported[done]
        if observed.get(RECORDS):
            print(f"cdc-replicate: batch {batch_id}: {observed[RECORDS]:,} records in {trigger_s:.1f} s, "
                  f"Kafka -> Delta {lag:.1f} s; {'' if jobs is None else f'{jobs} Spark jobs; '}"
                  f"steps (s): {step_line(steps)}",
                  file=self.out or sys.stderr, flush=True)

    def families(self) -> list:
        with self._lock:
            now = self.clock()
            return [
                metric("counter", "cdc_batches", "Micro-batches run", self.batches),
                metric("counter", "cdc_input_records", "Kafka records read", self.records),
                labelled("gauge", "cdc_kafka_to_delta_lag_seconds",
                         "Now minus the oldest Kafka record of the source read but not yet visible in Delta; "
                         "none pending: the last batch's (0 once caught up)",
                         ("source",), {(s,): v for s, v in self.kafka_lag.values(now).items()}),
                labelled("gauge", "cdc_commit_to_delta_lag_seconds",
                         "Now minus the oldest source commit of the table read but not yet visible in Delta; "
                         "none pending: the last batch's (0 once caught up)",
                         ("source", "table"), self.commit_lag.values(now)),
                labelled("gauge", "cdc_caught_up_as_of_seconds",
                         "Unix time up to which everything the source logged is in Delta (heartbeats)",
                         ("source",), {(s,): v for s, v in self.caught_up_as_of.items()}),
                labelled("counter", "cdc_quarantined", "Frames and changes kept in _cdc_quarantine",
                         ("source",), {(s,): v for s, v in self.quarantined.items()}),
                labelled("counter", "cdc_batch_step_seconds",
                         "Wall seconds of the batches' steps on the driver (libs/runtime/step_clock.py); "
                         "other: the triggers' time outside them", ("step",),
                         {(step,): v for step, v in self.step_seconds.items()}),
                metric("counter", "cdc_batch_spark_jobs",
                       "Spark jobs submitted while the batches ran (pipelines/job/batch_jobs.py)",
                       self.spark_jobs),
                labelled("counter", "cdc_applied_changes",
                         "Row changes applied to the Delta table, folded per "
                         "row in Arrow or replayed change by change", ("table", "how"),
                         dict(self.applied_changes)),
                *self._assembler_families(),
            ]

    def _assembler_families(self) -> list:
        """The assemble stage's counts (libs/stages/counters.py): totals kept in its checkpointed
        state, so they survive a restart."""
        def by_source(field: str) -> dict:
            return {(s,): getattr(c, field) for s, c in self.assembler.items()}
        return [
            labelled("counter", "cdc_ignorable_events", "Ignorable events skipped (WL#4033)",
                     ("source",), by_source("ignorable_events")),
            labelled("counter", "cdc_dummy_events", "MariaDB dummy events skipped", ("source",),
                     by_source("dummy_events")),
            labelled("counter", "cdc_spilled_bytes", "Bytes of open transactions written to the spill store",
                     ("source",), by_source("spilled_bytes_total")),
            labelled("gauge", "cdc_spill_held_bytes",
                     "Bytes in the spill store held by open and XA-prepared transactions",
                     ("source",), by_source("spill_bytes")),
        ]


class ProgressListener(StreamingQueryListener):
    """Hands each progress of the query named `name` to JobMetrics.progress."""

    def __init__(self, metrics: JobMetrics, name: str):
        self.metrics, self.name = metrics, name
        # Set when Spark has delivered a query's end, after every progress of it: only then may
        # the listener be removed and the process end (pipelines/job/stopping.py wait_listener_done).
        self.terminated = threading.Event()

    def onQueryStarted(self, event) -> None:
        pass

    def onQueryProgress(self, event) -> None:
        progress = json.loads(event.progress.json)
        if progress.get("name") == self.name:
            self.metrics.progress(progress)

    def onQueryIdle(self, event) -> None:
        pass

    def onQueryTerminated(self, event) -> None:
        self.terminated.set()

"""cdc-replicate's lag and counts where Spark users look (issue #20 item 2): the streaming
query's progress (observed metrics on the Kafka input: records, oldest/newest Kafka time), a
progress line per micro-batch on stderr, and Prometheus metrics (libs/metrics.py) when a
metrics port is configured.

`JobMetrics` is fed from two sides: the foreachBatch sink reports what the batch applied
(`batch`: commit -> Delta lag per table, caught_up_as_of and quarantined counts per source, the
assembler's counters and oldest Kafka time per source), and a StreamingQueryListener reports the
trigger's progress (`progress`: Kafka -> Delta lag, which needs the trigger's end; the sink's
report of the same batch id arrived before it, as the sink runs inside the trigger). Both run on
the driver; a lock keeps a scrape consistent."""
from __future__ import annotations

import json
import sys
import threading
from collections import Counter
from typing import Iterable, Mapping, TextIO

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.streaming import StreamingQueryListener

from libs.lag import INPUT_METRICS, NEWEST_KAFKA_MS, OLDEST_KAFKA_MS, RECORDS, kafka_to_delta_lag_s, source_lags
from libs.metrics import labelled, metric
from libs.source_counters import SourceCounters


def observe_input(kafka_df: DataFrame) -> DataFrame:
    """The Kafka records of each batch, counted and timed, in the query's progress."""
    ts = F.unix_millis(F.col("timestamp"))
    return kafka_df.observe(INPUT_METRICS, F.count(F.lit(1)).alias(RECORDS),
                            F.min(ts).alias(OLDEST_KAFKA_MS), F.max(ts).alias(NEWEST_KAFKA_MS))


class JobMetrics:
    def __init__(self, out: TextIO | None = None):
        self.out = out  # where the progress line per batch goes (None: stderr as it is then)
        self._lock = threading.Lock()
        self.batches = 0
        self.records = 0
        self.kafka_to_delta_s: float | None = None  # the last batch's, for its progress line
        self.kafka_to_delta_by_source: dict[str, float] = {}
        self.assembler: dict[str, SourceCounters] = {}  # the last counts of each source
        self._oldest_ms: dict[int, dict[str, int | None]] = {}  # batch id -> source -> oldest Kafka ms
        self.commit_to_delta_s: dict[tuple[str, str], float] = {}
        self.caught_up_as_of: dict[str, float] = {}
        self.quarantined: Counter = Counter()
        self.listener: StreamingQueryListener | None = None  # the one feeding progress(), once added

    def batch(self, commit_lags: Mapping[tuple[str, str], float], caught_up_micros: Mapping[str, int],
              quarantined: Mapping[str, int], counters: Iterable[SourceCounters] = (),
              batch_id: int | None = None) -> None:
        """What a committed batch applied (called by the sink, pipelines/replicate_batch.py)."""
        with self._lock:
            self.commit_to_delta_s.update(commit_lags)
            self.caught_up_as_of.update({s: at / 1e6 for s, at in caught_up_micros.items()})
            self.quarantined.update(quarantined)
            counters = list(counters)
            self.assembler.update({c.source: c for c in counters})  # totals: the latest replaces
            if batch_id is not None:
                self._oldest_ms[batch_id] = {c.source: c.oldest_kafka_ms for c in counters}

    def progress(self, progress: Mapping) -> None:
        """A trigger's StreamingQueryProgress (as its JSON dict)."""
        observed = (progress.get("observedMetrics") or {}).get(INPUT_METRICS) or {}
        lag = kafka_to_delta_lag_s(progress)
        with self._lock:
            self.batches += 1
            self.records += int(observed.get(RECORDS) or 0)
            if lag is not None:
                self.kafka_to_delta_s = lag
            oldest = self._oldest_ms.pop(progress["batchId"], {})
            for done in [b for b in self._oldest_ms if b < progress["batchId"]]:  # a sink that failed: never reported
                del self._oldest_ms[done]
            self.kafka_to_delta_by_source.update(source_lags(progress, oldest))
        if observed.get(RECORDS):
            print(f"cdc-replicate: batch {progress['batchId']}: {observed[RECORDS]:,} records in "
                  f"{progress['durationMs'].get('triggerExecution', 0) / 1000:.1f} s, "
                  f"Kafka -> Delta {lag:.1f} s", file=self.out or sys.stderr, flush=True)

    def families(self) -> list:
        with self._lock:
            return [
                metric("counter", "cdc_batches", "Micro-batches run", self.batches),
                metric("counter", "cdc_input_records", "Kafka records read", self.records),
                labelled("gauge", "cdc_kafka_to_delta_lag_seconds",
                         "Last batch with records of the source: visible in Delta minus its oldest Kafka record's time",
                         ("source",), {(s,): v for s, v in self.kafka_to_delta_by_source.items()}),
                labelled("gauge", "cdc_commit_to_delta_lag_seconds",
                         "Last batch that changed the table: visible in Delta minus its oldest source commit",
                         ("source", "table"), dict(self.commit_to_delta_s)),
                labelled("gauge", "cdc_caught_up_as_of_seconds",
                         "Unix time up to which everything the source logged is in Delta (heartbeats)",
                         ("source",), {(s,): v for s, v in self.caught_up_as_of.items()}),
                labelled("counter", "cdc_quarantined", "Frames and changes kept in _cdc_quarantine",
                         ("source",), {(s,): v for s, v in self.quarantined.items()}),
                *self._assembler_families(),
            ]

    def _assembler_families(self) -> list:
        """The assemble stage's counts (libs/source_counters.py): totals kept in its checkpointed
        state, so they survive a restart."""
        def by_source(field: str) -> dict:
            return {(s,): getattr(c, field) for s, c in self.assembler.items()}
        return [
            labelled("counter", "cdc_ignorable_events", "Ignorable events skipped (WL#4033)",
                     ("source",), by_source("ignorable_events")),
            labelled("counter", "cdc_dummy_events", "MariaDB dummy events skipped", ("source",), by_source("dummy_events")),
            labelled("counter", "cdc_spilled_bytes", "Bytes of open transactions written to the spill store",
                     ("source",), by_source("spilled_bytes_total")),
            labelled("gauge", "cdc_spill_held_bytes", "Bytes in the spill store held by open and XA-prepared transactions",
                     ("source",), by_source("spill_bytes")),
        ]


class ProgressListener(StreamingQueryListener):
    """Hands each progress of the query named `name` to JobMetrics.progress."""

    def __init__(self, metrics: JobMetrics, name: str):
        self.metrics, self.name = metrics, name

    def onQueryStarted(self, event) -> None:
        pass

    def onQueryProgress(self, event) -> None:
        progress = json.loads(event.progress.json)
        if progress.get("name") == self.name:
            self.metrics.progress(progress)

    def onQueryIdle(self, event) -> None:
        pass

    def onQueryTerminated(self, event) -> None:
        pass

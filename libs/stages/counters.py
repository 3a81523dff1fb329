"""The assemble stage's counts of one source, carried to the driver as an assembled record of kind
`counters` (schemas/assembled_record.avsc), one per source and micro-batch. No Spark.

The assembler counts ignorable events (WL#4033), dummy events and spilled bytes in its state,
which lives on an executor; the driver's metrics (pipelines/job/job_metrics.py) only see what a batch
returns. The counts are the state's cumulative totals, not the batch's increments: a batch Spark
retries starts again from the previous state and reports the same totals, and a restarted job
goes on from its checkpointed state, so the counters never count twice and never restart at 0.
The record also carries the oldest Kafka timestamp of the source's records in the batch: the
start of its Kafka -> Delta lag (libs/apply/lag.py)."""
from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Mapping

from libs.contracts.assembled import RecordKind
from libs.stream.assembler import AssemblerState, SpillStore


@dataclass(frozen=True)
class SourceCounters:
    source: str
    ignorable_events: int
    dummy_events: int
    spilled_bytes_total: int
    spill_bytes: int
    oldest_kafka_ms: int | None

    @classmethod
    def of(cls, state: AssemblerState, store: SpillStore, oldest_kafka_ms: int | None) -> "SourceCounters":
        """The counts after a batch: `state` is the new state, `store` the spill store it refers to."""
        held = sum(store.size(state.source, key) for key in state.spill_keys())
        return cls(state.source, state.counters["ignorable_skipped"], state.counters["dummies_skipped"],
                   state.counters["spilled_bytes"], held, oldest_kafka_ms)

    def record(self) -> dict:
        return {"kind": RecordKind.COUNTERS.value, **asdict(self)}

    @classmethod
    def from_record(cls, row: Mapping) -> "SourceCounters":
        """From a `counters` record (a dict, or a Row with these names)."""
        return cls(row["source"], int(row["ignorable_events"]), int(row["dummy_events"]),
                   int(row["spilled_bytes_total"]), int(row["spill_bytes"]),
                   None if row["oldest_kafka_ms"] is None else int(row["oldest_kafka_ms"]))

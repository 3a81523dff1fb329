"""Where a micro-batch's wall time goes, step by step (issue #57: "measure the split of the
time" before cutting it). The sink and the apply stage each time their steps on the driver's
batch thread; Spark is lazy, so a step's seconds are those of the jobs its first action runs
(the first aggregate of a batch reads Kafka, decodes the frames and assembles the transactions:
"assemble"). The job prints a batch's split on its progress line and sums it per step for
Prometheus (pipelines/job/job_metrics.py).

Steps do not nest: each second of the batch thread is counted once, under one step. What the
trigger spends outside them (offsets, the state store's commit) is the trigger's duration minus
their sum ("other", `with_other`)."""
from __future__ import annotations

import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Callable, Iterator, Mapping

# The steps in the order a batch runs them (pipelines/stages/sink.py, pipelines/apply/).
STEPS = ("assemble", "prepare", "decode", "quarantine",     # the sink's
         "split", "collect", "replay",                       # the applier's, nothing written
         "change_log", "targets", "progress", "maintenance")  # its writes (batch_writes.py)
OTHER = "other"


class StepClock:
    """Seconds per step of the running batch: `with clock.step("decode"): ...`; `take()`
    returns them and starts the next batch's."""

    def __init__(self, now: Callable[[], float] = time.perf_counter):
        self._now = now
        self._seconds: dict[str, float] = {}

    @contextmanager
    def step(self, name: str) -> Iterator[None]:
        if name not in STEPS:
            raise ValueError(f"unknown batch step {name!r} (libs/runtime/step_clock.py STEPS)")
        started = self._now()
        try:
            yield
        finally:
            self._seconds[name] = self._seconds.get(name, 0.0) + self._now() - started

    def take(self) -> dict[str, float]:
        seconds, self._seconds = self._seconds, {}
        return seconds


@dataclass(frozen=True)
class BatchCost:
    """What a batch cost the driver, for its progress line and Prometheus: its seconds per step
    (a StepClock's `take()`) and the Spark jobs submitted meanwhile (pipelines/job/batch_jobs.py;
    None: not readable in this Spark)."""

    steps: Mapping[str, float] = field(default_factory=dict)
    jobs: int | None = None


def with_other(seconds: Mapping[str, float], trigger_s: float) -> dict[str, float]:
    """The steps in STEPS order, and `other`: the trigger's seconds not in any step (never
    below 0: the trigger's duration is Spark's own clock, in milliseconds)."""
    out = {name: seconds[name] for name in STEPS if name in seconds}
    out[OTHER] = max(0.0, trigger_s - sum(out.values()))
    return out


def step_line(seconds: Mapping[str, float]) -> str:
    """'assemble 1.2, decode 0.4, ..., other 0.1' (seconds, one decimal; steps under 0.05 s left out)."""
    return ", ".join(f"{name} {value:.1f}" for name, value in seconds.items() if value >= 0.05)

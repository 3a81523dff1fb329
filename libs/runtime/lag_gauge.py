"""A lag gauge that tells the lag now, not the last batch's (issue #39 item 5). Pure: the job's
metrics (pipelines/job/job_metrics.py) hand in what a batch has read and when it became visible.

The lag of a key (a source, or a source's table) at time `now`:

    a running batch has read records of the key   now - the oldest time among them (grows while
                                                  the batch runs: that record is not in Delta yet)
    else, the last batch that read the key         visible - its oldest time (the batch's real lag)
    else, a heartbeat said the source caught up    0 (everything it had logged is in Delta)

"Read" is known when the batch's records are counted (the sink's first aggregate, or the apply
stage's split of the changes per table), "visible" when the batch has committed. Pending reads
are kept per batch id: the streaming listener may tell batch N's end after batch N+1 has read.
A batch that never commits (the job stopped) leaves its reads pending: the gauge keeps growing.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Generic, Hashable, Mapping, TypeVar

K = TypeVar("K", bound=Hashable)


@dataclass
class LagGauge(Generic[K]):
    # batch id -> key -> oldest time read, epoch s
    pending: dict[int, dict[K, float]] = field(default_factory=dict)
    # key -> lag of its last visible batch, s (0: caught up)
    settled: dict[K, float] = field(default_factory=dict)

    def read(self, batch_id: int, oldest: Mapping[K, float]) -> None:
        """Batch `batch_id` has read records of these keys, the oldest of each at that time (epoch s)."""
        mine = self.pending.setdefault(batch_id, {})
        for key, at in oldest.items():
            mine[key] = min(mine.get(key, at), at)

    def visible(self, batch_id: int, at: float, lags: Mapping[K, float] | None = None,
                caught_up: Callable[[K], bool] = lambda key: False) -> None:
        """Batch `batch_id` (and every earlier one) is visible in Delta since `at` (epoch s).
        `lags`: the batch's real lags where its writer measured them itself (they win);
        `caught_up`: keys a heartbeat of the batch says are caught up (their lag becomes 0)."""
        oldest: dict[K, float] = {}
        for done in sorted(b for b in self.pending if b <= batch_id):
            for key, t in self.pending.pop(done).items():
                oldest[key] = min(oldest.get(key, t), t)
        self.settled.update({key: max(0.0, at - t) for key, t in oldest.items()})
        self.settled.update(lags or {})
        self.settled.update({key: 0.0 for key in self.settled if caught_up(key)})

    def values(self, now: float) -> dict[K, float]:
        """key -> its lag at `now` (seconds, never negative: a producer's clock may run ahead)."""
        out = dict(self.settled)
        running: dict[K, float] = {}
        for reads in self.pending.values():
            for key, t in reads.items():
                running[key] = min(running.get(key, t), t)
        out.update({key: max(0.0, now - t) for key, t in running.items()})
        return out


def caught_up_sources(heartbeats: Mapping[str, int], newest_commits: Mapping[str, int | None]) -> set[str]:
    """Sources whose heartbeat in the batch (epoch micros, _cdc_progress.caught_up_as_of) is at or
    after the newest commit the batch read of them (epoch micros): once the batch is visible,
    nothing the source had logged is missing from Delta. A commit after the heartbeat means the
    source went on logging: what followed it may not have been read yet."""
    return {source for source, at in heartbeats.items()
            if newest_commits.get(source) is None or at >= newest_commits[source]}

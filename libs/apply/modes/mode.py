"""What a kind of target decides (issue #55 item 3): one TargetMode per way a target keeps the
source's rows. The write path asks the target's mode (select.py mode_of) and holds no test of
its own on `history` or `delete`; a new kind of target (for example append-only) is one more
module here and its Spark half in pipelines/apply/modes/.

    current.py      history: current, delete: hard (the default): the table is the source's rows
    soft_delete.py  delete: soft: a deleted row stays, flagged (README "Soft deletes")
    scd2.py         history: scd2: one row per committed version (README "History targets")
"""
from __future__ import annotations

from typing import Any, Iterable, Mapping, Protocol, Sequence

from libs.contracts.change import Change
from libs.replay.engine import ReplayResult
from libs.targets.model import Target


class TargetMode(Protocol):
    name: str
    columns: str | None
    """The Avro schema (schemas/) of the columns it keeps after `_lineage`; None: none."""
    live: tuple[str, bool] | None
    """The rows the replay may see: those whose `live[0]` column is `live[1]`; None: every row."""
    folds: bool
    """Its batch may be folded per row identity in Arrow (libs/apply/fold.py)."""
    on_executors: bool
    """Its changes may be replayed, and its snapshot rows made, on the executors."""
    mirrors: bool
    """The driver may keep its rows between batches (libs/apply/target_mirror.py)."""
    keyed_copies: bool
    """A big table of it may be kept as a keyed copy (libs/apply/keyed_copy.py): its rows are
    the replay's whole view, none kept apart."""
    takes_job_delete: bool
    """The job's tables.delete applies where its declaration leaves `delete` unset."""

    def replay(self, target: Target, current_rows: Iterable[Mapping[str, Any]],
               changes: Sequence[Change], *, mode: str) -> ReplayResult:
        """The batch's changes of one table replayed onto the rows it read (libs/replay)."""
        ...

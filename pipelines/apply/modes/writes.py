"""The Spark half of the target modes (libs/apply/modes/ is the pure half): per mode, the plan
of a replayed batch and its one write, and the parts of the shared writes that differ by mode
(a MERGE's clauses, a mirror's update, what a carried or started-anew table keeps). The shared
write path (pipelines/apply/batch_writes.py, schema_changes.py) asks writes_of(target) and tests
no mode itself; a new mode is one module here beside its pure half.

An online schema change's carry (carried.py) is the one write shape that combines with each mode
(a current, soft or SCD2 target can change its schema): it asks the target's mode for its part."""
from __future__ import annotations

from typing import Any, Callable, Protocol, Sequence

from pyspark.sql import DataFrame, SparkSession

from libs.apply.modes.current import CURRENT
from libs.apply.modes.scd2 import SCD2
from libs.apply.modes.select import mode_of
from libs.apply.modes.soft_delete import SOFT_DELETE
from libs.contracts.change import Change
from libs.replay.engine import ReplayResult
from libs.tables.table_location import TableLocation
from libs.targets.model import Target
from pipelines.apply.known_targets import MirroredWrites
from pipelines.apply.modes.current import CurrentWrites
from pipelines.apply.modes.scd2 import HistoryWrites
from pipelines.apply.modes.soft_delete import SoftDeleteWrites
from pipelines.apply.modes.target_write import TargetWrite
from pipelines.apply.target_writes import TablePlan


class ModeWrites(Protocol):
    # May a batch be one commit of deletion vectors at its rows' known positions
    # (pipelines/apply/position_writes.py, writes.deletion_vector_commits)?
    writes_at_positions: bool

    def plan(self, target: Target, path: TableLocation, result: ReplayResult, read_rows: Sequence,
             changes: Sequence[Change], carried: Any = None) -> TablePlan:
        """The batch's replayed rows of one target as its one write's plan."""
        ...

    def target_write(self, mirrored: MirroredWrites, spark: SparkSession, plan: TablePlan) -> TargetWrite:
        """The plan's ONE Delta write (the batch's writer wraps it in the txn)."""
        ...

    def carried_columns(self, table: DataFrame, target: Target) -> DataFrame:
        """A table being carried to a new schema, with the mode's own columns."""
        ...

    def new_column(self, value, target: Target):
        """The fill of a column added while carried."""
        ...

    def refuse_carry(self, where: str, anew_over_rows: bool, replaces_rows: bool) -> None:
        """Raises when a carry would break the mode's promise (the table started anew in other
        columns over stored rows; a copy replacing the stored rows)."""
        ...


class RowModeWrites(ModeWrites, Protocol):
    """A mode whose rows may be MERGEd from the executors and mirrored (mode.on_executors, mirrors)."""

    def merge(self, spark: SparkSession, source: DataFrame, names: Sequence[str], path: TableLocation | str,
              scope=None, truncated: dict[str, Any] | None = None) -> None: ...

    def snapshot_rows_write(self, spark: SparkSession, part) -> Callable: ...


WRITES: dict[str, ModeWrites] = {CURRENT.name: CurrentWrites(), SOFT_DELETE.name: SoftDeleteWrites(),
                                 SCD2.name: HistoryWrites()}


def writes_of(target: Target) -> ModeWrites:
    return WRITES[mode_of(target).name]

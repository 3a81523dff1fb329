"""A mirrored target's write as a whole-table overwrite (libs/apply/target_mirror.py): the
driver keeps a small target's rows between batches, applies the batch's rows to them, and
replaces the table with them when it is small (config.target_overwrite_max_rows) and still at
the mirror's version. It gives the same table as the MERGE, without the MERGE's planning and
its scan/rewrite jobs (~1.5 s -> ~0.6 s per small table, bench/merge_vs_overwrite.py)."""
from __future__ import annotations

from typing import Callable

import pyarrow as pa
from pyspark.sql import SparkSession

from libs.apply.target_mirror import MirrorOverflow, TargetMirror
from libs.tables.table_location import TableLocation
from pipelines.apply.known_targets import KnownTargets
from pipelines.apply.target_writes import TablePlan, mirrored_upserts, whole_table
from pipelines.delta.delta_tables import writer
from pipelines.delta.delta_txn import replaceable


class MirroredWrites:
    def __init__(self, known: KnownTargets, overwrite_max_rows: int):
        self.known = known
        self.overwrite_max_rows = overwrite_max_rows  # 0: always MERGE, even a table left empty

    def forget(self, plan: TablePlan) -> None:
        """The target's mirror dropped: the batch writes it otherwise than from the mirror."""
        self.known.mirrors.pop(plan.path, None)

    def advance(self, plan: TablePlan, rows: pa.Table, created: bool,
                apply: Callable[[TargetMirror, list, list], None]) -> tuple[TargetMirror | None, int | None]:
        """The target's mirror with the batch's rows applied by its mode's `apply(mirror,
        upserts, deletes)` (taken out of the known mirrors: back in only once it equals the
        commit, keep()), and the Delta version it was at before them."""
        mirror = self.known.mirrors.pop(plan.path, None)
        if mirror is None:
            return None, None
        # A table absent at the batch's start and created just now by us is empty at version
        # 0, as the (empty) mirror is.
        base = 0 if mirror.version is None and created else mirror.version
        try:
            apply(mirror, mirrored_upserts(plan, rows), plan.deletes)
        except MirrorOverflow:
            self.known.unmirrored.add(plan.path)
            return None, None
        return mirror, base

    def overwrite(self, spark: SparkSession, plan: TablePlan, mirror: TargetMirror | None,
                  base: int | None):
        """The whole-table overwrite of the target from its mirror, or None (a MERGE then)."""
        cap = self.overwrite_max_rows
        if mirror is None or base is None or cap == 0 or len(mirror) > cap:
            return None
        table = whole_table(spark, mirror.whole_rows(), plan.target)
        # Asked last, right before the write: a foreign commit after this check and before the
        # overwrite's own snapshot (its planning, milliseconds) would still be replaced; one
        # after that snapshot fails the overwrite in Delta's conflict check (it read every file).
        if not replaceable(spark, plan.path, base):
            return None
        return writer(table, "overwrite")

    def keep(self, path: TableLocation | str, mirror: TargetMirror | None, base: int | None,
             version: int) -> None:
        """The mirror back in, at the commit's version, if it equals the commit: nothing else
        committed since its version."""
        if mirror is not None and base is not None and version == base + 1:
            mirror.version = version
            self.known.mirrors[path] = mirror

"""What the applier knows of its target tables, kept from batch to batch in one process: which
exist (no CREATE per batch), whose schema was checked against its declaration, the last batch it
wrote to each, and each small table's mirror (libs/apply/target_mirror.py). Nothing here is needed for
correctness after a restart: each piece is asked of Delta again when it is missing.

MirroredWrites: a mirrored target's write as a whole-table overwrite. The driver keeps a small
target's rows between batches, applies the batch's rows to them, and replaces the table with them
when it is small (config.target_overwrite_max_rows) and still at the mirror's version. It gives
the same table as the MERGE, without the MERGE's planning and its scan/rewrite jobs (~1.5 s ->
~0.6 s per small table, bench/merge_vs_overwrite.py)."""
from __future__ import annotations

from functools import partial
from typing import Callable

import pyarrow as pa
from pyspark.sql import SparkSession

import pipelines.apply.tables as D
from libs.tables.system_tables import table_app_id
from libs.tables.table_location import TableLocation
from libs.apply.keyed_copy import KeyedCopy, NotAnswered
from libs.apply.target_mirror import MirrorOverflow, TargetMirror
from libs.replay import ROW_ID_COLUMN
from libs.targets.model import Target
from pipelines.apply.target_writes import TablePlan, mirrored_upserts, whole_table
from pipelines.apply.touched_rows import (FILE_COLUMN, ROW_INDEX_COLUMN, PinnedRead, ReadPositions,
                                          load_mirror)
from pipelines.apply.write_features import enable_deletion_vectors
from pipelines.delta.delta_tables import writer
from pipelines.delta.delta_txn import committed_version, replaceable, table_version


class KnownTargets:
    def __init__(self, app_id: str, mirror_max_rows: int, deletion_vectors: bool = True,
                 position_commits: bool = False, position_max_rows: int = 0, copy_max_rows: int = 0):
        self.app_id = app_id
        self.deletion_vectors = deletion_vectors  # WritesSettings.deletion_vectors
        self.position_commits = position_commits  # WritesSettings.deletion_vector_commits
        self.position_max_rows = position_max_rows  # WritesSettings.position_index_max_rows
        self.mirror_max_rows = mirror_max_rows  # config.target_mirror_max_rows; 0: no mirror
        self.copy_max_rows = copy_max_rows  # config.target_copy_max_rows: a KeyedCopy as the mirror
        self.ready: set[TableLocation] = set()  # known to exist
        self.schema_checked: set[TableLocation] = set()  # existing tables whose schema matches the mapping
        # path -> the last batch this process wrote there: a later batch id cannot be committed
        # yet (batch ids only grow), so its Delta txn lookup (a snapshot read) is skipped.
        self.written: dict[TableLocation, int] = {}
        # path -> every row of the target as of its Delta version: the batch's touched rows
        # without a Delta read (a TargetMirror, or a KeyedCopy of a bigger keyed table).
        # Paths in `unmirrored` outgrew the caps.
        self.mirrors: dict[TableLocation, TargetMirror | KeyedCopy] = {}
        self.unmirrored: set[TableLocation] = set()
        # path -> (delta_table, batch_id) of the last retried batch found committed on the
        # target already: its version is then read back from the log (batch_versions.py)
        self.found_committed: dict[TableLocation, tuple[str, int]] = {}
        # path -> its rows' positions and live files (pipelines/apply/position_writes.py
        # PositionTable), None: too big to index in this process
        self.positions: dict[TableLocation, object] = {}
        # path -> the positions of the rows this batch's replay read of an unmirrored table, at
        # the version pinned for its read (position_commits only); replaced by each batch's
        # reader(), taken by its write (pipelines/apply/position_writes.py position_write)
        self.read_positions: dict[TableLocation, ReadPositions] = {}
        # path -> its live files (pipelines/delta/dv_commit.py DvTable) for the DV commits at
        # read positions, kept from batch to batch while only ours commit
        self.dv_tables: dict[TableLocation, object] = {}

    def forget(self, path: TableLocation) -> None:
        """Nothing kept of a table about to be removed (pipelines/apply/shadow_writes.py)."""
        for cache in (self.ready, self.schema_checked, self.unmirrored):
            cache.discard(path)
        self.mirrors.pop(path, None)
        self.written.pop(path, None)
        self.found_committed.pop(path, None)  # its version is not asked of a removed table
        self.positions.pop(path, None)
        self.read_positions.pop(path, None)
        self.dv_tables.pop(path, None)

    def exists(self, spark: SparkSession, path: TableLocation) -> bool:
        return path in self.ready or D.is_delta_table(spark, path)

    def check_schema(self, spark: SparkSession, path: TableLocation, target: Target) -> None:
        """An existing table's schema against its declaration (D.check_target_schema), and its
        write path's table features (pipelines/apply/write_features.py), once per table and process."""
        D.check_target_schema(spark, path, target)
        if self.deletion_vectors and enable_deletion_vectors(spark, path):
            self.mirrors.pop(path, None)  # the upgrade is a commit: the mirror's version is behind
        self.schema_checked.add(path)

    def ensure(self, spark: SparkSession, path: TableLocation, target: Target) -> bool:
        """The table created if absent; True when this call created it (empty, at version 0)."""
        if path in self.ready:
            return False
        created = D.ensure_target(spark, path, target, self.deletion_vectors)
        self.ready.add(path)
        return created

    def already_committed(self, spark: SparkSession, path: TableLocation, target: Target,
                          batch_id: int) -> bool:
        """Did Delta commit this batch on the target already (a batch replayed after a crash)?
        Asked of the Delta log unless this process itself wrote an earlier batch there."""
        if self.written.get(path, batch_id) < batch_id:
            return False
        committed = committed_version(spark, path, table_app_id(self.app_id, target.delta_table))
        if committed is None or committed < batch_id:
            return False
        self.found_committed[path] = (target.delta_table, batch_id)
        return True

    def reader(self, spark: SparkSession, path: TableLocation, target: Target, mirrors: bool,
               touched: Callable, *, starts_anew: bool = False, positions: bool = False) -> Callable | None:
        """How the replay reads the rows a batch touches in the stored table: from its mirror
        (when its mode `mirrors`), by `touched(spark, path, target, lookups)` from Delta, or None:
        no table yet, or the batch starts it anew (a truncate first). An existing table's schema
        is checked against its declaration first, once per process. With position_commits, an
        unmirrored path table is read at a version pinned here, once for all the batch's reads
        of it, and its rows' positions kept in read_positions (ReadPositions), when its mode writes
        at positions (`positions`); a keyed copy's rows come with the positions it holds."""
        self.read_positions.pop(path, None)  # (the last batch's, if its write did not take them)
        if path not in self.ready and path not in self.schema_checked and D.is_delta_table(spark, path):
            self.check_schema(spark, path, target)
        if starts_anew:
            self.mirrors.pop(path, None)
            return None
        pinned = self.position_commits and positions and not path.is_catalog
        mirror = self.mirror(spark, path, target, pinned) if mirrors else None  # (an SCD2 one: every version)
        if mirror is not None:
            if mirror.version is None:
                return None
            if pinned and isinstance(mirror, KeyedCopy) and mirror.positioned:
                held = self.read_positions[path] = ReadPositions(mirror.version)
                read = partial(touched, spark, PinnedRead(path, mirror.version), target)
                return held.reader(partial(_select_placed, mirror, read))
            return partial(_select, mirror, partial(touched, spark, path, target))
        if not self.exists(spark, path):
            return None
        version = table_version(spark, path) if pinned else None
        if version is None:
            return partial(touched, spark, path, target)
        held = self.read_positions[path] = ReadPositions(version)
        return held.reader(partial(touched, spark, PinnedRead(path, version), target))

    def mirror(self, spark: SparkSession, path: TableLocation, target: Target,
               positions: bool = False) -> TargetMirror | KeyedCopy | None:
        """The table's mirror when it equals the table's latest Delta version; else a fresh one
        (the whole table read at that version: a keyed copy past mirror_max_rows, with its rows'
        positions when `positions`) unless the table is too big (then None: reads per batch for
        the rest of this process)."""
        if self.mirror_max_rows == 0 or path in self.unmirrored:
            return None
        version = table_version(spark, path)
        mirror = self.mirrors.get(path)
        if mirror is not None and mirror.version == version:
            return mirror
        self.mirrors.pop(path, None)
        try:
            mirror = load_mirror(spark, path, target, version, self.mirror_max_rows, self.copy_max_rows,
                                 positions)
        except MirrorOverflow:
            self.unmirrored.add(path)
            return None
        self.mirrors[path] = mirror
        return mirror


def _select(mirror: TargetMirror | KeyedCopy, read: Callable, lookups) -> list:
    """The replay's read from the table's mirror, or from Delta for a lookup a keyed copy does
    not answer (by whole image); both are of the same version (KnownTargets.mirror)."""
    try:
        return mirror.select(lookups)
    except NotAnswered:
        return read(lookups)


def _select_placed(copy: KeyedCopy, read: Callable, lookups) -> list:
    """_select of a positioned copy, each row with its position (POSITION_COLUMNS, as a
    PinnedRead's rows: `read` is one at the copy's version, for a lookup the copy does not answer)."""
    try:
        rows = copy.select(lookups)
    except NotAnswered:
        return read(lookups)
    for row in rows:
        row[FILE_COLUMN], row[ROW_INDEX_COLUMN] = copy.position_of(row[ROW_ID_COLUMN]) or (None, None)
    return rows


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
        except MirrorOverflow:  # loaded again for the next batch, if the caps allow (KnownTargets.mirror)
            return None, None
        return mirror, base

    def overwrite(self, spark: SparkSession, plan: TablePlan, mirror: TargetMirror | None,
                  base: int | None):
        """The whole-table overwrite of the target from its mirror, or None (a MERGE then)."""
        cap = self.overwrite_max_rows
        if mirror is None or base is None or cap == 0 or not mirror.holds_whole_rows or len(mirror) > cap:
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
        committed since its version, and a keyed copy's positions are those of the commit (it
        was a DV commit that placed its rows: libs/apply/keyed_copy.py)."""
        if mirror is not None and base is not None and version == base + 1 and not mirror.positions_behind:
            mirror.version = version
            self.known.mirrors[path] = mirror

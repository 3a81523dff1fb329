"""What the applier knows of its target tables, kept from batch to batch in one process: which
exist (no CREATE per batch), whose schema was checked against its declaration, the last batch it
wrote to each, and each small table's mirror (libs/apply/target_mirror.py). Nothing here is needed for
correctness after a restart: each piece is asked of Delta again when it is missing."""
from __future__ import annotations

from pyspark.sql import SparkSession

import pipelines.apply.tables as D
from libs.tables.system_tables import table_app_id
from libs.tables.table_location import TableLocation
from libs.apply.target_mirror import MirrorOverflow, TargetMirror
from libs.targets.model import Target
from pipelines.apply.touched_rows import load_mirror
from pipelines.apply.write_features import enable_deletion_vectors
from pipelines.delta.delta_txn import committed_version, table_version


class KnownTargets:
    def __init__(self, app_id: str, mirror_max_rows: int, deletion_vectors: bool = True):
        self.app_id = app_id
        self.deletion_vectors = deletion_vectors  # WritesSettings.deletion_vectors
        self.mirror_max_rows = mirror_max_rows  # config.target_mirror_max_rows; 0: no mirror
        self.ready: set[TableLocation] = set()  # known to exist
        self.schema_checked: set[TableLocation] = set()  # existing tables whose schema matches the mapping
        # path -> the last batch this process wrote there: a later batch id cannot be committed
        # yet (batch ids only grow), so its Delta txn lookup (a snapshot read) is skipped.
        self.written: dict[TableLocation, int] = {}
        # path -> every row of the target as of its Delta version: the batch's touched rows
        # without a Delta read. Paths in `unmirrored` outgrew the cap.
        self.mirrors: dict[TableLocation, TargetMirror] = {}
        self.unmirrored: set[TableLocation] = set()
        # path -> (delta_table, batch_id) of the last retried batch found committed on the
        # target already: its version is then read back from the log (batch_versions.py)
        self.found_committed: dict[TableLocation, tuple[str, int]] = {}

    def forget(self, path: TableLocation) -> None:
        """Nothing kept of a table about to be removed (pipelines/apply/shadow_writes.py)."""
        for cache in (self.ready, self.schema_checked, self.unmirrored):
            cache.discard(path)
        self.mirrors.pop(path, None)
        self.written.pop(path, None)
        self.found_committed.pop(path, None)  # its version is not asked of a removed table

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

    def mirror(self, spark: SparkSession, path: TableLocation, target: Target) -> TargetMirror | None:
        """The table's mirror when it equals the table's latest Delta version; else a fresh one
        (the whole table read at that version) unless the table is too big (then None: reads
        per batch for the rest of this process)."""
        if self.mirror_max_rows == 0 or path in self.unmirrored:
            return None
        version = table_version(spark, path)
        mirror = self.mirrors.get(path)
        if mirror is not None and mirror.version == version:
            return mirror
        self.mirrors.pop(path, None)
        try:
            mirror = load_mirror(spark, path, target, version, self.mirror_max_rows)
        except MirrorOverflow:
            self.unmirrored.add(path)
            return None
        self.mirrors[path] = mirror
        return mirror

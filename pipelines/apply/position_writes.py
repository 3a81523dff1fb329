"""A current target's batch written without a scan of the table (writes.deletion_vector_commits,
issue #57 item 3): ONE Delta commit (pipelines/delta/dv_commit.py) of deletion vectors at the
positions of the stored rows the batch updates or deletes, the upserts' new images appended, and
the same SetTransaction (txn app id, batch id) as the MERGE's (pipelines/delta/delta_txn.py), so
KnownTargets.already_committed and batch_versions.py see it as they see the MERGE.

The positions of a table the driver does not mirror: those of the replay's own read of the rows
the batch touches, at a Delta version pinned for the batch (KnownTargets.reader, pipelines/apply/
touched_rows.py ReadPositions): the commit is made against the table's live files at that version
(a DvTable kept in KnownTargets.dv_tables), and only while it is still the latest (else the
MERGE); no index, no confirm read (_read_position_write). A table held as a keyed copy
(libs/apply/keyed_copy.py, config.target_copy_max_rows) is such a read: the copy holds its rows'
positions at its version, and the commit tells it where the new images went (PositionCommit._place).

The positions of a small mirrored table (or one the batch found absent): a PositionIndex
(libs/apply/position_index.py) per table in KnownTargets, read once
from `_metadata.file_path` / `_metadata.row_index` at a pinned version (collected to the driver,
up to writes.position_index_max_rows rows, ~50 bytes each), refreshed
after each commit from the commit's new files only, and read again whenever the table's latest
version is not the index's (another writer, a compaction, a MERGE fallback) or a commit of ours
landed after another writer's (Delta lets through one that adds no file and removes none ours
read, e.g. a DELETE of other whole files).

An index is checked before each commit, so that a wrong one (a bug, a damaged entry) gives the
MERGE, never a wrong table: it must hold as many rows as the table's files (their stats); the row
at each position the batch changes must have its `_row_id` (a read of those files' `_row_id`
column, one job); each such position must be a live row of its file (the commit, against the
file's deletion vector: pipelines/delta/dv_commit.py).

Anything unusual makes the write the MERGE (position_write returns None, or the commit falls
back): the setting off, another mode, a catalog table, a carried / replaced / appended plan, a
table without deletion vectors (or with Change Data Feed or row tracking, which a DV commit
would not keep), an index too big, a delete of a row the index does not know, a new row the
replay did not look up by key (libs/apply/unread_rows.py: a keyless table's insert), an index that
fails its check, a JVM error while planning (also a runtime without delta-spark 4.0.0's classes,
e.g. Databricks': py4j then raises TypeError), a table that moved before the commit. Both give
the same table.
"""
from __future__ import annotations

import logging
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Callable, Iterator

import numpy as np
import pyarrow as pa
from py4j.protocol import Py4JError
from pyspark.errors import PySparkException
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

import pipelines.apply.tables as D
from libs.apply.keyed_copy import KeyedCopy
from libs.apply.position_index import DuplicateRowId, PositionIndex, Positions
from libs.apply.unread_rows import looked_up_by_key
from libs.replay import ROW_ID_COLUMN
from libs.tables.table_location import TableLocation
from pipelines.apply.known_targets import KnownTargets
from pipelines.apply.target_writes import TablePlan
from pipelines.apply.touched_rows import ReadPositions
from pipelines.apply.write_features import DELETION_VECTORS
from pipelines.delta.arrow_frames import arrow_table
from pipelines.delta.delta_tables import located, property_on, snapshot
from pipelines.delta.delta_txn import (CHANGE_DATA_FEED_PROPERTY, LAST_COMMIT_VERSION_CONF, TXN_APP_ID_CONF,
                                       TXN_VERSION_CONF)
from pipelines.delta.dv_commit import DvTable, PositionsWrong

log = logging.getLogger(__name__)

# A DV commit writes no change data files and keeps no row ids: such tables stay with the MERGE.
REFUSING_PROPERTIES = (CHANGE_DATA_FEED_PROPERTY, "delta.enableRowTracking")
PHYSICAL_NAME_KEY = "delta.columnMapping.physicalName"
# TypeError: a JVM class that is not there (py4j makes its name a JavaPackage, not callable)
PLANNING_ERRORS = (Py4JError, PySparkException, DuplicateRowId, KeyError, PositionsWrong, TypeError)


class IndexRefused(RuntimeError):
    """The table cannot be indexed now (it moved while read)."""


@dataclass
class PositionTable:
    """A table's live files as of its index's version (DvTable), and the index."""

    table: DvTable
    index: PositionIndex
    row_id_column: str  # `_row_id`'s name in the data files (its physical name under column mapping)


def position_write(known: KnownTargets, spark: SparkSession, plan: TablePlan,
                   merge: Callable[[], Callable], mirror: Any = None) -> Callable | None:
    """The plan's one write as a DV commit, or None: the caller's own choice of write (module
    docstring). `merge()` makes the MERGE the commit falls back to when the table moved;
    `mirror`: the table's mirror with the batch applied (a positioned keyed copy is told where
    the commit stored its rows). Asked only with known.position_commits
    (writes.deletion_vector_commits) on."""
    location = located(plan.path)
    if location.is_catalog:  # (a carried, replaced or appended plan has its own write before this)
        return None
    read = known.read_positions.pop(location, None)  # this batch's read of the table (if any)
    if read is not None:
        copy = mirror if isinstance(mirror, KeyedCopy) and mirror.positioned else None
        return _read_position_write(known, spark, plan, read, merge, copy)
    try:
        held = _positions(known, spark, location)
        if held is None:
            return None
        upserts = [u[ROW_ID_COLUMN] for u in plan.upserts]
        deletes = [d[ROW_ID_COLUMN] for d in plan.deletes]
        touched = held.index.touched(upserts, deletes)
        if touched is None:
            log.debug("%s: rows the position index cannot place; MERGE", location)
            return None
        confirm(spark, held, held.index.placed([*upserts, *deletes]))
        new_rows = new_images(spark, plan) if plan.upserts else None
    except PLANNING_ERRORS as e:
        known.positions.pop(location, None)
        log.debug("%s: no position write (%s); MERGE", location, type(e).__name__)
        return None
    return PositionCommit(spark, known, location, held, touched, new_rows, [*upserts, *deletes], merge)


def _read_position_write(known: KnownTargets, spark: SparkSession, plan: TablePlan, read: ReadPositions,
                         merge: Callable[[], Callable], copy: KeyedCopy | None) -> Callable | None:
    """The DV commit at the positions the replay's own read gave (an unmirrored table, or the
    keyed `copy` it read: no index, no confirm read), against the table's live files at the
    read's version; None: the MERGE.

    Every stored row an upsert or delete changes was read here: the replay finds the rows it
    updates or deletes, and the rows an insert collides with, only among the rows its reader
    handed it (libs/replay/engine.py TableState; one it did not read is a 1032, see
    libs/apply/merge_scope.py), and `read.complete` says each of those came with its position.
    Any other upsert carries a row id the replay made for one of this batch's changes
    (make_row_id(source, trx_id, change_seq)), which no stored row carries: a batch is committed
    on a table once (KnownTargets.already_committed, the commit's own txn check). So an upsert
    without a read position is a new row, appended, when the replay looked it up by key (libs/
    apply/unread_rows.py: else, e.g. a keyless table's insert, MERGE); a delete without one is
    not expected: MERGE."""
    location = located(plan.path)
    try:
        table = _dv_table(known, spark, location, read.version)
        if table is None or not read.complete or read.conflicting:
            return None
        upserts = [u[ROW_ID_COLUMN] for u in plan.upserts]
        deletes = [d[ROW_ID_COLUMN] for d in plan.deletes]
        if any(row_id not in read.at for row_id in deletes):
            log.debug("%s: a delete of a row not read; MERGE", location)
            return None
        if not all(looked_up_by_key(plan.target, u) for u in plan.upserts if u[ROW_ID_COLUMN] not in read.at):
            log.debug("%s: a new row not looked up by key; MERGE", location)
            return None
        changed = [row_id for row_id in [*upserts, *deletes] if row_id in read.at]
        paths = table.paths_by_url()
        touched: dict[str, list[int]] = {}
        for row_id in changed:
            url, row_index = read.at[row_id]
            touched.setdefault(paths[url], []).append(int(row_index))
        new_rows = new_images(spark, plan) if plan.upserts else None
    except PLANNING_ERRORS as e:
        known.dv_tables.pop(location, None)
        log.debug("%s: no position write (%s); MERGE", location, type(e).__name__)
        return None
    return PositionCommit(spark, known, location, None, touched, new_rows, changed, merge, table, copy)


def _dv_table(known: KnownTargets, spark: SparkSession, location: TableLocation,
              version: int) -> DvTable | None:
    """The table's live files at `version` if that is its latest version and it takes DV commits
    (_eligible), else None. Kept in known.dv_tables: a DvTable follows our own commits."""
    latest = _eligible(spark, location)
    if latest is None or int(latest.version()) != version:  # moved since the read (or refused)
        return None
    table = known.dv_tables.get(location)
    if not isinstance(table, DvTable) or table.version != version:
        known.dv_tables.pop(location, None)
        table = DvTable(spark, location.path)
        table.load_files()
        if table.version != version:
            return None
        known.dv_tables[location] = table
    return table


def new_images(spark: SparkSession, plan: TablePlan) -> DataFrame:
    """The upserts' new images: the rows a MERGE would insert or update to (its assignments are
    every target column of the source row), one partition."""
    schema = D.target_schema(plan.target)
    return spark.createDataFrame(arrow_table(plan.upserts, schema), schema).coalesce(1)


@dataclass
class PositionCommit:
    """write(path) for the batch's writer, inside its Delta txn (delta_txn sets the app id and
    version this commit's SetTransaction carries)."""

    session: SparkSession  # the TargetWrite's: its confs hold the txn
    known: KnownTargets
    location: TableLocation
    held: PositionTable | None  # the index the positions came from (None: the replay's read)
    touched: dict[str, list[int]]  # AddFile.path -> row indexes to delete
    new_rows: DataFrame | None
    removed: list[str]  # the row ids whose stored position the commit ends (if any)
    merge: Callable[[], Callable]
    # the live files at the version the positions are of (the commit's read version): the index's
    # (held.table) unless given
    table: DvTable | None = None
    copy: KeyedCopy | None = None  # the copy the positions came from: told where its rows went

    def __post_init__(self) -> None:
        if self.table is None:
            self.table = self.held.table

    def __call__(self, path: Any) -> None:
        session = self.session
        app_id, batch_id = session.conf.get(TXN_APP_ID_CONF), int(session.conf.get(TXN_VERSION_CONF))
        deletes = {p: np.asarray(rows, dtype=np.int64) for p, rows in self.touched.items()}
        read_version = self.table.version
        try:
            with active(session):
                outcome = self.table.commit(deletes, self.new_rows, app_id, batch_id)
        except Exception as e:  # noqa: BLE001 - the commit not made: the MERGE makes it
            self._forget()
            if (self.table.committed_version(app_id) or -1) >= batch_id:
                return  # made after all (e.g. a post-commit hook failed): its version from the log
            log.debug("%s: position commit not made (%s); MERGE", self.location, type(e).__name__)
            self.merge()(path)
            return
        if outcome.version is None:  # the batch committed already (Delta's txn check)
            return
        session.conf.set(LAST_COMMIT_VERSION_CONF, str(outcome.version))  # for BatchWrites._commit
        if outcome.version != read_version + 1:  # Delta put it after another writer's commit(s)
            self._forget()  # whose rows the index has not seen
            return
        if self.held is not None:
            self._refresh(outcome)
        if self.copy is not None:
            self._place(outcome)

    def _forget(self) -> None:
        self.known.positions.pop(self.location, None)
        self.known.dv_tables.pop(self.location, None)

    def _place(self, outcome) -> None:
        """The copy told where the commit stored the batch's new images (its new files' rows);
        on any failure it stays behind and is loaded again (known_targets.py MirroredWrites.keep)."""
        try:
            if not outcome.new_files:
                self.copy.place([], [], [])
                return
            row_id = _physical_name(self.table.log.unsafeVolatileSnapshot(), ROW_ID_COLUMN)
            adds = [outcome.added[file] for file in outcome.new_files]
            rows = _files_read(self.session, self.table, adds, row_id).toArrow()
            self.copy.place(rows.column("r").to_pylist(), rows.column("f").to_pylist(),
                            rows.column("i").to_pylist())
        except Exception as e:  # noqa: BLE001 - committed; the copy is loaded again next batch
            log.debug("%s: keyed copy not placed (%s)", self.location, type(e).__name__)

    def _refresh(self, outcome) -> None:
        """The index after the commit: its removed rows out, its new files' rows in."""
        try:
            self.held.index.apply_commit(outcome.version, self.removed,
                                         new_positions(self.session, self.held, outcome))
            if len(self.held.index) > self.known.position_max_rows:  # outgrew the bound: MERGEs from now on
                self.known.positions[self.location] = None
        except Exception as e:  # noqa: BLE001 - committed; the index is read again next batch
            self.known.positions.pop(self.location, None)
            log.debug("%s: position index not refreshed (%s)", self.location, type(e).__name__)


@contextmanager
def active(spark: SparkSession) -> Iterator[None]:
    """`spark` the JVM thread's active session for the enclosed calls: Delta's transaction reads
    its confs and records lastCommitVersionInSession in the active session, which is not the
    writing thread's own (spark.newSession(), batch_writes.py) unless made so."""
    sessions = getattr(spark.sparkContext._jvm, "org.apache.spark.sql.classic.SparkSession")
    before = sessions.getActiveSession()
    sessions.setActiveSession(spark._jsparkSession)
    try:
        yield
    finally:
        if before.isDefined():
            sessions.setActiveSession(before.get())
        else:
            sessions.clearActiveSession()


def _positions(known: KnownTargets, spark: SparkSession, location: TableLocation) -> PositionTable | None:
    """The table's index at its latest version (read again when stale), None when it has none."""
    if location in known.positions and known.positions[location] is None:
        return None  # too big for this process
    latest = _eligible(spark, location)
    if latest is None:
        return None
    held = known.positions.get(location)
    if isinstance(held, PositionTable) and held.index.valid_at(int(latest.version())):
        return held
    known.positions.pop(location, None)
    try:
        held = read_positions(spark, location.path, known.position_max_rows)
    except IndexRefused:
        return None
    known.positions[location] = held
    return held


def _eligible(spark: SparkSession, location: TableLocation):
    """The table's latest snapshot if a DV commit may write it (deletion vectors on, no property
    a DV commit would not keep), else None."""
    latest = snapshot(spark, location)
    if not property_on(latest, DELETION_VECTORS) or any(
            property_on(latest, name) for name in REFUSING_PROPERTIES):
        return None
    return latest


def read_positions(spark: SparkSession, path: str, max_rows: int) -> PositionTable | None:
    """The table's live files and every row's position, both at one version; None above `max_rows`
    rows. Raises IndexRefused when the table moved between the two reads."""
    if max_rows <= 0:
        return None
    table = DvTable(spark, path)
    table.load_files()
    latest = table.log.update(False, table.scala.none(), table.scala.none())
    if int(latest.version()) != table.version:
        raise IndexRefused(path)
    row_id = _physical_name(latest, ROW_ID_COLUMN)
    read = spark.read.format("delta").option("versionAsOf", table.version).load(path)
    rows = _positions_read(read, ROW_ID_COLUMN).limit(max_rows + 1).toArrow()
    if rows.num_rows > max_rows:
        return None
    return PositionTable(table, PositionIndex(table.version, _positions_of(rows, table.paths_by_url())),
                         row_id)


def confirm(spark: SparkSession, held: PositionTable, placed: dict[str, tuple[str, int]]) -> None:
    """PositionsWrong unless the index holds as many rows as the table's files do (their stats:
    so no stored row the batch upserts is missing from it, taken for a new row and stored twice),
    and the row at each of the `placed` positions (row id -> (file, row index): the stored rows
    the batch changes) has that `_row_id`: a read of the `_row_id` column of those files only.
    KeyError: a file that is not one of the table's."""
    live = held.table.live_rows()
    if live != len(held.index):
        raise PositionsWrong(f"index of {len(held.index)} rows, the table's files hold {live}")
    if not placed:
        return
    files = {file: held.table.files[file] for file, _ in placed.values()}
    found = _file_positions(spark, held, files, list(placed))
    at = set(zip(found.row_ids.to_pylist(), [found.file_names[f] for f in found.files.tolist()],
                 found.row_indexes.tolist()))
    wrong = [row_id for row_id, (file, row) in placed.items() if (row_id, file, row) not in at]
    if wrong:
        raise PositionsWrong(f"{len(wrong)} rows not at their indexed positions, e.g. {wrong[0]!r}")


def new_positions(spark: SparkSession, held: PositionTable, outcome) -> Positions:
    """The positions of the rows of a commit's new files (their parquet read, nothing else)."""
    if not outcome.new_files:
        return Positions([], [], [])
    return _file_positions(spark, held, {file: outcome.added[file] for file in outcome.new_files})


def _file_positions(spark: SparkSession, held: PositionTable, adds: dict[str, Any],
                    row_ids: list[str] | None = None) -> Positions:
    """The positions of the rows in the files of `adds` (AddFile.path -> AddFile), deleted ones
    too (their parquet read), only those of `row_ids` when given."""
    urls = {held.table.file_url(add): file for file, add in adds.items()}
    read = _files_read(spark, held.table, adds.values(), held.row_id_column)
    if row_ids is not None:
        read = read.where(F.col("r").isin(row_ids))
    return _positions_of(read.toArrow(), urls)


def _files_read(spark: SparkSession, table: DvTable, adds, row_id: str) -> DataFrame:
    """(r, f, i) of every row in the table's files `adds` (AddFiles; deleted rows too): their
    parquet read, `row_id` the `_row_id` column's name in the files."""
    files = [str(add.absolutePath(table.log).toString()) for add in adds]
    return _positions_read(spark.read.format("parquet").load(files), row_id)


def _positions_read(read: DataFrame, row_id: str) -> DataFrame:
    return read.select(F.col(f"`{row_id}`").alias("r"), F.col("_metadata.file_path").alias("f"),
                       F.col("_metadata.row_index").alias("i"))


def _positions_of(rows: pa.Table, urls: dict[str, str]) -> Positions:
    """Collected (r, f, i) rows as Positions, column-wise (no Python object per row), files named
    by AddFile.path (KeyError: a file the table's files do not hold)."""
    files = rows.column("f").combine_chunks().dictionary_encode()
    names = [urls[url] for url in files.dictionary.to_pylist()]
    return Positions(rows.column("r"), files.indices.to_numpy(zero_copy_only=False),
                     rows.column("i").to_numpy(), names)


def _physical_name(table_snapshot, name: str) -> str:
    """A column's name in the data files: its physical name when the table maps columns."""
    metadata = table_snapshot.metadata().schema().apply(name).metadata()
    return metadata.getString(PHYSICAL_NAME_KEY) if metadata.contains(PHYSICAL_NAME_KEY) else name

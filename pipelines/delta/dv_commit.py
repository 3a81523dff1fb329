"""One Delta commit for rows whose positions are known: deletion vectors + appended new images +
SetTransaction, with no join against the table and no scan of its data (issue #57 item 3,
research/write-path-design.md §3.1). Experimental: drives delta-spark 4.0.0 internals through
py4j (spark._jvm; the Scala values: pipelines/delta/py4j_scala.py), no compiled shim.
bench/dv_commit_probe.py exercises it against MERGE.

Delta 4.0.0 classes used (paths in delta-io/delta at tag v4.0.0, spark/src/main/scala/org/apache/
spark/sql/delta/...):
  DeltaLog.forTable(spark, path) / startTransaction()        DeltaLog.scala
  OptimisticTransaction.txnVersion(appId) / trackFilesRead / updateSetTransaction /
    commit(actions, op)                                      OptimisticTransaction.scala
  TransactionalWrite.writeFiles(df)                          files/TransactionalWrite.scala
  Snapshot.allFiles                                          Snapshot.scala
  AddFile.removeRows(dv, updateStats, dataChange) / removeWithTimestamp / absolutePath
                                                             actions/actions.scala
  DeletionVectorDescriptor.onDiskWithRelativePath            actions/DeletionVectorDescriptor.scala
  RoaringBitmapArray (addAll, merge, serializeAsByteArray), RoaringBitmapArrayFormat.Portable
                                                             deletionvectors/RoaringBitmapArray.scala
  StoredBitmap.create(dv, tablePath).load(store)             deletionvectors/StoredBitmap.scala
  HadoopFileSystemDVStore(conf).createWriter / generateFileNameInTable / pathWithFileSystem
                                                             storage/dv/DeletionVectorStore.scala
  DeltaOperations.Update(None)                               DeltaOperations.scala
The same steps DELETE/UPDATE/MERGE with DVs take (commands/DMLWithDeletionVectorsHelper.scala:
DeletionVectorWriter.storeBitmapAndGenerateResult, DMLWithDeletionVectorsHelper.
processUnmodifiedData), minus their Spark jobs: the bitmaps are built on the driver from known
row indexes, and the touched files' AddFiles (with their stats) come from a driver-side catalog
instead of a join with the snapshot's state.
"""
from __future__ import annotations

import time
import uuid
from dataclasses import dataclass, field
from typing import Any, Mapping

import numpy as np

from pipelines.delta.py4j_scala import Scala

DELTA = "org.apache.spark.sql.delta"


class TableMoved(RuntimeError):
    """The table has commits this catalog (and the caller's position index) has not seen."""


class PositionsWrong(RuntimeError):
    """Row indexes that are not live rows of their file (out of its range, deleted already, given
    twice), or a file whose row count the log does not hold: a position index that is wrong or
    cannot be checked. Nothing is committed."""


@dataclass
class DvCommit:
    version: int | None  # None: skipped, the app id already committed this txn version
    added: dict[str, Any] = field(default_factory=dict)  # AddFile.path -> AddFile of the commit
    new_files: list[str] = field(default_factory=list)  # paths of the appended (written) files
    removed: list[str] = field(default_factory=list)  # paths that left the table (fully deleted)
    dv_files: int = 0
    dv_bytes: int = 0
    seconds: dict[str, float] = field(default_factory=dict)


class DvTable:
    """A Delta table at a path, its live files (AddFile with stats, by AddFile.path) as of
    `version`, and the JVM objects that write its deletion vectors."""

    def __init__(self, spark, path: str):
        self.spark, self.jvm, self.path = spark, spark.sparkContext._jvm, path
        self.scala = Scala(self.jvm)
        self.log = self.jvm.org.apache.spark.sql.delta.DeltaLog.forTable(spark._jsparkSession, path)
        self.data_path = self.log.dataPath()
        self.store = getattr(self.jvm, f"{DELTA}.storage.dv.HadoopFileSystemDVStore")(
            self.log.newDeltaHadoopConf())
        self.files: dict[str, Any] = {}
        self.version = -1
        self._url_of: dict[str, str] = {}  # AddFile.path -> file_url, of the files asked about so far

    def load_files(self) -> None:
        """The live files of the latest snapshot (one Spark job over the log's cached state)."""
        snapshot = self.log.update(False, self.scala.none(), self.scala.none())
        self.files = {add.path(): add for add in snapshot.allFiles().collectAsList()}
        self.version = int(snapshot.version())

    def live_rows(self) -> int | None:
        """The table's rows as its files' stats count them (physical rows less deletion vectors'),
        None when a file has no stats."""
        live = [_live_rows(add) for add in self.files.values()]
        return None if None in live else sum(live)

    def file_url(self, add) -> str:
        """How Spark spells the file in `_metadata.file_path` (url-encoded absolute path)."""
        return self.jvm.org.apache.spark.paths.SparkPath.fromPath(add.absolutePath(self.log)).urlEncoded()

    def paths_by_url(self) -> dict[str, str]:
        """The live files' AddFile.path by file_url (as `_metadata.file_path` names them). A file's
        url (JVM calls) is made once: after our own commit only its new files are asked."""
        url_of = self._url_of
        for path in url_of.keys() - self.files.keys():
            del url_of[path]
        for path, add in self.files.items():
            if path not in url_of:
                url_of[path] = self.file_url(add)
        return {url: path for path, url in url_of.items()}

    def committed_version(self, app_id: str) -> int | None:
        version = self.log.update(False, self.scala.none(), self.scala.none()).transactions().get(app_id)
        return int(version.get()) if version.isDefined() else None

    def commit(self, deletes: Mapping[str, np.ndarray], new_rows, app_id: str, txn_version: int,
               *, dv_prefix: str = "") -> DvCommit:
        """ONE commit: for each file in `deletes` (AddFile.path -> row indexes in that file) a
        new DV (OR-ed with its current one) as an AddFile/RemoveFile pair of the same path; the
        DataFrame `new_rows` (None: nothing) appended by the transaction's writeFiles; and
        SetTransaction(app_id, txn_version). Skipped when the app id committed txn_version."""
        jvm, scala, seconds = self.jvm, self.scala, {}
        started = time.perf_counter()
        txn = self.log.startTransaction()
        transaction_object = scala.module(f"{DELTA}.OptimisticTransaction")
        if int(txn.txnVersion(app_id)) >= txn_version:  # also registers the app id as read
            return DvCommit(version=None)
        if int(txn.readVersion()) != self.version:
            raise TableMoved(f"table at {txn.readVersion()}, catalog at {self.version}")
        transaction_object.setActive(txn)
        try:
            outcome = DvCommit(version=None)
            touched = [self.files[path] for path in deletes]
            txn.trackFilesRead(scala.seq(touched))
            now = int(time.time() * 1000)
            actions = self._deletion_vectors(zip(touched, deletes.items()), outcome, now, dv_prefix)
            seconds["dv"] = time.perf_counter() - started
            if new_rows is not None:
                mark = time.perf_counter()
                written = scala.items(txn.writeFiles(new_rows._jdf))
                seconds["write"] = time.perf_counter() - mark
                actions += _appended(written, outcome)
            txn.updateSetTransaction(app_id, txn_version, scala.some(now))
            operation = getattr(jvm, f"{DELTA}.DeltaOperations$Update")(scala.none())
            mark = time.perf_counter()
            outcome.version = int(txn.commit(scala.seq(actions), operation))
            seconds["commit"] = time.perf_counter() - mark
        finally:
            transaction_object.clearActive()
        self._advance(outcome)
        seconds["total"] = time.perf_counter() - started
        outcome.seconds = seconds
        return outcome

    def _advance(self, outcome: DvCommit) -> None:
        """The live files after the commit. Delta puts a commit after others that it found no
        conflict with (e.g. another writer's removal of whole files this one did not touch):
        their files are not known here, so none are, until load_files (a commit before it raises
        TableMoved)."""
        if outcome.version != self.version + 1:
            self.files, self.version = {}, -1
            return
        for path in outcome.removed:
            self.files.pop(path, None)
        self.files.update(outcome.added)
        self.version = outcome.version

    def _deletion_vectors(self, touched, outcome: DvCommit, now: int, dv_prefix: str) -> list:
        """The actions for the touched files ((AddFile, (path, row indexes)) each): its
        RemoveFile when every row is gone, else the pair AddFile.removeRows gives (the file with
        its new DV, the RemoveFile of the old). Recorded in `outcome` (added, removed, DV files
        and bytes). Nothing written unless every row index is checked first (_new_bitmaps)."""
        jvm, scala = self.jvm, self.scala
        fmt = jvm.org.apache.spark.sql.delta.deletionvectors.RoaringBitmapArrayFormat.Portable()
        descriptor = jvm.org.apache.spark.sql.delta.actions.DeletionVectorDescriptor
        dv_file, actions = _DvFile(jvm, self.store, self.data_path, dv_prefix), []
        for add, path, bitmap, cardinality, physical in self._new_bitmaps(touched):
            if physical == cardinality:
                actions.append(add.removeWithTimestamp(now, True))  # every row gone
                outcome.removed.append(path)
                continue
            data = bitmap.serializeAsByteArray(fmt)
            file_id, offset = dv_file.write(data)
            outcome.dv_bytes += len(data)
            dv = descriptor.onDiskWithRelativePath(file_id, dv_prefix, len(data), cardinality,
                                                   scala.some(offset), scala.none())
            pair = add.removeRows(dv, True, True)  # updateStats: tightBounds=false
            actions += [pair._1(), pair._2()]
            outcome.added[path] = pair._1()
        outcome.dv_files = dv_file.close()
        return actions

    def _new_bitmaps(self, touched) -> list[tuple]:
        """(AddFile, path, its new DV bitmap, the bitmap's cardinality, the file's physical rows)
        per touched file: its current DV OR-ed with the row indexes. PositionsWrong unless every
        row index is a live row of its file: one out of the file's rows, deleted already or given
        twice means the caller's positions are not the table's; a file with no row count in the
        log cannot be checked."""
        out = []
        for add, (path, rows) in touched:
            rows = np.asarray(rows, dtype=np.int64)
            physical = add.numPhysicalRecords()
            physical = int(physical.get()) if physical.isDefined() else None
            if physical is None or len(rows) == 0 or rows.min() < 0 or rows.max() >= physical:
                raise PositionsWrong(f"{path}: row indexes outside the file's rows (or no row count)")
            bitmap = self._bitmap(add)
            before = int(bitmap.cardinality())
            bitmap.addAll(self.scala.long_seq(rows))
            cardinality = int(bitmap.cardinality())
            if cardinality - before != len(rows):
                raise PositionsWrong(f"{path}: {len(rows) - cardinality + before} row indexes not live rows")
            out.append((add, path, bitmap, cardinality, physical))
        return out

    def _bitmap(self, add) -> Any:
        """The file's current DV as a RoaringBitmapArray (empty when it has none)."""
        existing = add.deletionVector()
        if existing is None:
            return self.jvm.org.apache.spark.sql.delta.deletionvectors.RoaringBitmapArray()
        stored = self.jvm.org.apache.spark.sql.delta.deletionvectors.StoredBitmap.create(
            existing, self.data_path)
        return stored.load(self.store)


class _DvFile:
    """One DV file per commit, every touched file's DV in it: opened at the first DV written."""

    def __init__(self, jvm, store, data_path, dv_prefix: str):
        self.jvm, self.store, self.data_path, self.dv_prefix = jvm, store, data_path, dv_prefix
        self.writer, self.file_id = None, None

    def write(self, data) -> tuple[Any, int]:
        """The serialized bitmap appended: (the file's UUID, the DV's offset in it)."""
        if self.writer is None:
            self.file_id = self.jvm.java.util.UUID.fromString(str(uuid.uuid4()))
            table_fs = self.store.pathWithFileSystem(self.data_path)
            self.writer = self.store.createWriter(
                self.store.generateFileNameInTable(table_fs, self.file_id, self.dv_prefix))
        dv_range = self.writer.write(data)
        return self.file_id, int(dv_range.offset())

    def close(self) -> int:
        """The DV files written: 0 or 1."""
        if self.writer is None:
            return 0
        self.writer.close()
        return 1


def _live_rows(add) -> int | None:
    logical = add.numLogicalRecords()
    return int(logical.get()) if logical.isDefined() else None


def _appended(written: list, outcome: DvCommit) -> list:
    """writeFiles' actions, its AddFiles recorded in `outcome` as added and new."""
    for action in written:
        if action.getClass().getSimpleName() == "AddFile":
            outcome.added[action.path()] = action
            outcome.new_files.append(action.path())
    return written

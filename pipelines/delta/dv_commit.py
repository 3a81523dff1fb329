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

    def load_files(self) -> None:
        """The live files of the latest snapshot (one Spark job over the log's cached state)."""
        snapshot = self.log.update(False, self.scala.none(), self.scala.none())
        self.files = {add.path(): add for add in snapshot.allFiles().collectAsList()}
        self.version = int(snapshot.version())

    def file_url(self, add) -> str:
        """How Spark spells the file in `_metadata.file_path` (url-encoded absolute path)."""
        return self.jvm.org.apache.spark.paths.SparkPath.fromPath(add.absolutePath(self.log)).urlEncoded()

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
        for path in outcome.removed:
            self.files.pop(path, None)
        self.files.update(outcome.added)
        self.version = outcome.version
        seconds["total"] = time.perf_counter() - started
        outcome.seconds = seconds
        return outcome

    def _deletion_vectors(self, touched, outcome: DvCommit, now: int, dv_prefix: str) -> list:
        """The actions for the touched files ((AddFile, (path, row indexes)) each): nothing for a
        file whose rows were already deleted, its RemoveFile when every row is gone, else the
        pair AddFile.removeRows gives (the file with its new DV, the RemoveFile of the old).
        Recorded in `outcome` (added, removed, DV files and bytes)."""
        jvm, scala = self.jvm, self.scala
        fmt = jvm.org.apache.spark.sql.delta.deletionvectors.RoaringBitmapArrayFormat.Portable()
        descriptor = jvm.org.apache.spark.sql.delta.actions.DeletionVectorDescriptor
        dv_file, actions = _DvFile(jvm, self.store, self.data_path, dv_prefix), []
        for add, (path, rows) in touched:
            bitmap = self._bitmap(add)
            before = int(bitmap.cardinality())
            bitmap.addAll(scala.long_seq(np.asarray(rows)))
            cardinality = int(bitmap.cardinality())
            if cardinality == before:
                continue  # rows already deleted: the file is unchanged
            physical = add.numPhysicalRecords()
            if physical.isDefined() and int(physical.get()) == cardinality:
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


def _appended(written: list, outcome: DvCommit) -> list:
    """writeFiles' actions, its AddFiles recorded in `outcome` as added and new."""
    for action in written:
        if action.getClass().getSimpleName() == "AddFile":
            outcome.added[action.path()] = action
            outcome.new_files.append(action.path())
    return written

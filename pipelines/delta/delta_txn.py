"""Delta-log helpers for idempotent writes (DESIGN.md "Exactly once"): what a table has
committed, and the session confs that make one write idempotent per (app id, batch id).

A target's MERGE or whole-table overwrite carries Delta's (txnAppId, txnVersion) as the session
confs spark.databricks.delta.write.txnAppId/txnVersion (set, then unset); Delta skips a write
whose app id already committed that version or a later one, and `committed_version` reads it
back, so a retried batch does not even replay a table it already wrote. Appends carry a commit
mark instead (pipelines/delta/marked_appends.py: Delta's txn check costs a state reconstruction per
commit, which a MERGE pays anyway and an append does not). App ids: libs/tables/system_tables.py.
"""
from __future__ import annotations

from contextlib import contextmanager
from typing import Collection, Iterator

from pyspark.sql import SparkSession

from libs.tables.table_location import TableLocation
from pipelines.delta.delta_tables import exists, property_on, snapshot

TXN_APP_ID_CONF = "spark.databricks.delta.write.txnAppId"
TXN_VERSION_CONF = "spark.databricks.delta.write.txnVersion"
MATERIALIZE_SOURCE_CONF = "spark.databricks.delta.merge.materializeSource"
LAST_COMMIT_VERSION_CONF = "spark.databricks.delta.lastCommitVersionInSession"
CHANGE_DATA_FEED_PROPERTY = "delta.enableChangeDataFeed"


def is_delta_table(spark: SparkSession, path: TableLocation | str) -> bool:
    return exists(spark, path)


def committed_version(spark: SparkSession, path: TableLocation | str, app_id: str) -> int | None:
    """The last txnVersion Delta committed for txnAppId `app_id` on the table (None: never)."""
    if not is_delta_table(spark, path):
        return None
    version = _latest_snapshot(spark, path).transactions().get(app_id)
    return int(version.get()) if version.isDefined() else None


def table_version(spark: SparkSession, path: TableLocation | str) -> int | None:
    """The table's latest Delta version (None: no Delta table at `path`). One listing of the
    log when nothing changed since this JVM last saw it (DeltaLog instances are cached)."""
    if isinstance(path, TableLocation) and path.is_catalog and not exists(spark, path):
        return None  # (a path's snapshot says version -1; a name not in the catalog has none)
    version = int(_latest_snapshot(spark, path).version())
    return version if version >= 0 else None


def commit_of_txn(spark: SparkSession, path: TableLocation | str, app_ids: Collection[str],
                  txn_version: int) -> int | None:
    """The newest Delta version whose commit carries Delta's txn action (an app id of
    `app_ids`, `txn_version`), None when no commit does: how a retried batch learns the
    version its earlier attempt committed on a table (issue #40, pipelines/apply/batch_versions.py).
    The log is read newest commit first, down to a commit of one of `app_ids` with an older txn
    version (an app id's txn versions only grow) or the oldest commit the log keeps."""
    if not is_delta_table(spark, path):
        return None
    table_snapshot = _latest_snapshot(spark, path)
    log = table_snapshot.deltaLog()
    for version in range(int(table_snapshot.version()), -1, -1):
        # failOnDataLoss false: a cleaned-up log ends the search
        commits = log.getChanges(version, version, False)
        if not commits.hasNext():
            return None
        actions, older = commits.next()._2().iterator(), False
        while actions.hasNext():
            action = actions.next()
            if action.getClass().getSimpleName() != "SetTransaction" or action.appId() not in app_ids:
                continue
            if int(action.version()) == txn_version:
                return version
            older = older or int(action.version()) < txn_version
        if older:
            return None
    return None


def replaceable(spark: SparkSession, path: TableLocation | str, version: int) -> bool:
    """May the applier replace the table's whole content, computed from `version`? Only while
    the table is still at that version (another writer's commit since would be overwritten; ask
    right before the write, see pipelines/apply/target_writes.py) and has no Change Data Feed
    (whose readers would see every row deleted and inserted again)."""
    snapshot = _latest_snapshot(spark, path)
    if int(snapshot.version()) != version:
        return False
    return not property_on(snapshot, CHANGE_DATA_FEED_PROPERTY)


def _latest_snapshot(spark: SparkSession, path: TableLocation | str):
    return snapshot(spark, path)


def last_commit_version(spark: SparkSession) -> int | None:
    """The version of the session's last Delta commit (Delta sets this conf on every commit)."""
    value = spark.conf.get(LAST_COMMIT_VERSION_CONF, None)
    return None if value in (None, "") else int(value)


def forget_last_commit_version(spark: SparkSession) -> None:
    spark.conf.unset(LAST_COMMIT_VERSION_CONF)


@contextmanager
def delta_txn(spark: SparkSession, app_id: str, version: int) -> Iterator[None]:
    """Session confs making the enclosed Delta MERGE or write idempotent per (app_id, version).

    Also skips materialising the MERGE source: ours is a driver-built DataFrame (deterministic),
    the case Delta's materializeSource=auto guards against does not arise, and it costs a job."""
    saved = spark.conf.get(MATERIALIZE_SOURCE_CONF, None)
    spark.conf.set(TXN_APP_ID_CONF, app_id)
    spark.conf.set(TXN_VERSION_CONF, str(int(version)))
    spark.conf.set(MATERIALIZE_SOURCE_CONF, "none")
    try:
        yield
    finally:
        spark.conf.unset(TXN_APP_ID_CONF)
        spark.conf.unset(TXN_VERSION_CONF)
        if saved is None:
            spark.conf.unset(MATERIALIZE_SOURCE_CONF)
        else:
            spark.conf.set(MATERIALIZE_SOURCE_CONF, saved)

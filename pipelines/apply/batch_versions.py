"""The Delta version each target write of a batch committed (issue #40: `_cdc_progress`
table_versions, libs/reads/versions.py), for the batch's progress rows.

A write that commits reports its version (Delta's lastCommitVersionInSession, read right after
it in the writing thread's own session). A target the batch wrote without such a report is
asked of its Delta log by the txn action the write carried (pipelines/delta/delta_txn.py
commit_of_txn): a batch retried after a crash whose earlier attempt committed the target
(KnownTargets.already_committed skipped it), or a target whose only write in the batch was its
schema rewrite (pipelines/apply/schema_changes.py, txn app id schema_app_id).
"""
from __future__ import annotations

from typing import Mapping

from pyspark.sql import SparkSession

from libs.tables.system_tables import schema_app_id, table_app_id
from libs.tables.table_location import TableLocation
from pipelines.delta.delta_txn import commit_of_txn


class BatchVersions:
    def __init__(self, app_id: str):
        self.app_id = app_id
        self._committed: dict[tuple[int, str], int] = {}  # (batch_id, delta_table) -> its write's version

    def wrote(self, batch_id: int, delta_table: str, version: int | None) -> None:
        """A write of `delta_table` in batch `batch_id` committed `version` (None: not known,
        e.g. Delta skipped the write as committed already). Called from the writing threads."""
        if version is not None:
            self._committed[(batch_id, delta_table)] = int(version)

    def of_batch(self, spark: SparkSession, batch_id: int,
                 targets: Mapping[str, TableLocation]) -> dict[str, int]:
        """delta_table -> the Delta version of batch `batch_id`'s last commit on it, for each of
        `targets` (the batch's targets, by delta_table) the batch committed on; a target it did
        not commit on is left out."""
        out: dict[str, int] = {}
        for name, path in sorted(targets.items()):
            version = self._committed.get((batch_id, name))
            if version is None:
                app_ids = (table_app_id(self.app_id, name), schema_app_id(self.app_id, name))
                version = commit_of_txn(spark, path, app_ids, batch_id)
            if version is not None:
                out[name] = version
        self._committed = {key: v for key, v in self._committed.items() if key[0] > batch_id}
        return out

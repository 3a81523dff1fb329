"""Several target tables read at one point of the sources (issue #40; README "Consistent
reads"): each table `VERSION AS OF` its Delta version at one batch of the job, so a reader never
sees half of a batch (the SQL and its rules: libs/reads/consistent_read_sql.py).

    frames = read_consistent(spark, cfg.table_root, ["shop__accounts", "shop__savings"])
    frames = read_consistent(spark, cfg.table_root, ["shop__orders"], gtid="0-1-4711")
    frames = read_consistent(spark, cfg.table_root, tables, commit_time=dt.datetime(2026, 1, 2, 3, 4))

A table's old versions stay readable as long as VACUUM keeps their files (JobConfig.writes
retention, README "Deletion vectors, compaction and vacuum").
"""
from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Iterable

from pyspark.sql import DataFrame, SparkSession

from libs.reads.versions import ConsistentReadError, versions_of
from libs.reads.consistent_read_sql import point_query, select_as_of, table_versions_at
from libs.tables.system_tables import APP_ID, PROGRESS
from libs.tables.table_location import TableRoot, as_root
from pipelines.delta.delta_tables import exists, read

__all__ = ["ConsistentPoint", "ConsistentReadError", "consistent_point", "read_consistent", "statements_at"]


@dataclass(frozen=True)
class ConsistentPoint:
    """A batch of the job and the Delta version of each asked table at it."""

    batch_id: int
    versions: dict[str, int]  # delta_table -> Delta version


def consistent_point(spark: SparkSession, root: TableRoot | str, tables: Iterable[str], *,
                     batch_id: int | None = None, gtid: str | None = None,
                     commit_time: dt.datetime | None = None, app_id: str = APP_ID) -> ConsistentPoint:
    """The point to read `tables` (delta_table names) at: the latest complete batch, or the one
    `batch_id`, `gtid` or `commit_time` names (libs/reads/consistent_read_sql.py point_query), and
    every table's version there. ConsistentReadError (one line) when none answers."""
    tables = list(tables)
    progress = as_root(root).table(PROGRESS)
    sql, args, asked = point_query(progress.sql_ref(), app_id, batch_id=batch_id, gtid=gtid,
                                   commit_time=commit_time)
    if not exists(spark, progress):
        raise ConsistentReadError(f"{asked}: job {app_id} has applied no batch under {root} (no {PROGRESS})")
    (row,) = spark.sql(sql, args=args).collect()
    if row["batch_id"] is None:
        raise ConsistentReadError(f"{asked}: no complete batch of job {app_id} is at it ({PROGRESS})")
    point = int(row["batch_id"])
    sql, args = table_versions_at(progress.sql_ref(), app_id, point, tables)
    found = {r["delta_table"]: r["delta_version"] for r in spark.sql(sql, args=args).collect()}
    return ConsistentPoint(point, versions_of(tables, found, point, asked))


def read_consistent(spark: SparkSession, root: TableRoot | str, tables: Iterable[str], *,
                    batch_id: int | None = None, gtid: str | None = None,
                    commit_time: dt.datetime | None = None, app_id: str = APP_ID) -> dict[str, DataFrame]:
    """delta_table -> the table read at one point (consistent_point): the latest complete batch
    by default, or as of a batch, a GTID or a commit time."""
    root = as_root(root)
    point = consistent_point(spark, root, tables, batch_id=batch_id, gtid=gtid, commit_time=commit_time,
                             app_id=app_id)
    return {name: read(spark, root.table(name), version) for name, version in point.versions.items()}


def statements_at(root: TableRoot | str, point: ConsistentPoint) -> dict[str, str]:
    """delta_table -> `SELECT * FROM <table> VERSION AS OF <version>` at `point`: the same read
    as read_consistent, as SQL to run or to paste (e.g. as the FROM of a join)."""
    root = as_root(root)
    return {name: select_as_of(root.table(name).sql_ref(), version)
            for name, version in point.versions.items()}

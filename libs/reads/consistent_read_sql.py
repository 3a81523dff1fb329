"""Consistent reads and as-of queries in SQL (issue #40; README "Consistent reads"): several
target tables read at one point of the sources, through the Delta versions `_cdc_progress`
records per batch (schemas/progress_record.avsc `table_versions`, libs/reads/versions.py).

A plain read of each table's latest version can see half a batch: Delta has no multi-table
commit, so the tables one batch writes become visible one after another (DESIGN.md "What a
reader sees"). Reading at a point instead takes two steps:

1. the point, a batch of job `app_id`: `latest_batch` (the latest complete batch), `batch_at_gtid`
   (the first batch whose position in the GTID's domain reached it), `batch_at_commit_time` (the
   latest batch holding no transaction committed after that time);
2. each table's Delta version at that batch (`table_versions_at`: the version recorded by the last
   batch up to it that wrote the table), read with `VERSION AS OF` (`select_as_of`).

Step 2's version is a literal of the statement (Spark SQL takes no expression in VERSION AS OF):
pipelines/reads/consistent_read.py runs both steps and returns DataFrames. As in libs/reads/lineage_sql.py,
every query returns `(sql_text, args)` for `spark.sql(sql_text, args=args)`, table references
rendered by its `table_ref` / `delta_path_ref`, every value a parameter marker.
"""
from __future__ import annotations

import datetime as dt
from typing import Any, Iterable

from libs.reads.versions import ConsistentReadError
from libs.contracts.position import GtidFormatError, gtid_domain_seq


def latest_batch(progress: str, app_id: str) -> tuple[str, dict[str, Any]]:
    """The latest complete batch of job `app_id` (a batch's progress rows are its last write)."""
    return f"SELECT max(batch_id) AS batch_id FROM {progress} WHERE app_id = :app_id", {"app_id": app_id}


def batch_at_gtid(progress: str, app_id: str, gtid: str) -> tuple[str, dict[str, Any]]:
    """The first batch of job `app_id` that applied GTID `gtid` and every GTID before it in its
    domain (MariaDB domain id / MySQL server uuid): its position in that domain is at or past
    the GTID's seq. ConsistentReadError for a text that is no GTID."""
    try:
        domain, seq = gtid_domain_seq(gtid)
    except GtidFormatError as exc:
        raise ConsistentReadError(str(exc)) from None
    sql = (f"SELECT min(batch_id) AS batch_id FROM {progress}\n"
           "WHERE app_id = :app_id AND changes > 0\n"
           "  AND exists(gtid_positions, p -> p.gtid_domain = :domain AND p.gtid_seq >= :seq)")
    return sql, {"app_id": app_id, "domain": domain, "seq": seq}


def batch_at_commit_time(progress: str, app_id: str, at: dt.datetime) -> tuple[str, dict[str, Any]]:
    """The latest batch of job `app_id` before the first batch holding a transaction committed
    after `at`: everything it holds committed at or before `at` (a batch holding transactions
    on both sides of `at` is not taken; transactions the job has not applied yet are not known)."""
    sql = (f"SELECT max(batch_id) AS batch_id FROM {progress}\n"
           "WHERE app_id = :app_id AND batch_id < (\n"
           f"  SELECT coalesce(min(batch_id), 9223372036854775807) FROM {progress}\n"
           "  WHERE app_id = :app_id AND changes > 0 AND commit_ts > :at)")
    return sql, {"app_id": app_id, "at": at}


def table_versions_at(progress: str, app_id: str, batch_id: int,
                      tables: Iterable[str]) -> tuple[str, dict[str, Any]]:
    """Per table (delta_table name), its Delta version at batch `batch_id` of job `app_id`: the
    version recorded by the last batch up to it that wrote the table (`written_by`)."""
    tables = list(dict.fromkeys(tables))
    if not tables:
        raise ValueError("name at least one table")  # a programmer error
    args: dict[str, Any] = {"app_id": app_id, "batch_id": int(batch_id)}
    args.update((f"t{i}", name) for i, name in enumerate(tables))
    names = ", ".join(f":t{i}" for i in range(len(tables)))
    sql = ("SELECT delta_table, max_by(delta_version, batch_id) AS delta_version, "
           "max(batch_id) AS written_by\n"
           "FROM (\n"
           "  SELECT batch_id, explode(table_versions) AS (delta_table, delta_version)\n"
           f"  FROM {progress}\n"
           "  WHERE app_id = :app_id AND batch_id <= :batch_id AND table_versions IS NOT NULL\n"
           f")\nWHERE delta_table IN ({names})\nGROUP BY delta_table")
    return sql, args


def select_as_of(table: str, version: int, columns: str = "*") -> str:
    """SELECT `columns` FROM `table` (a reference) at Delta version `version` (an int: a literal)."""
    return f"SELECT {columns} FROM {table} VERSION AS OF {int(version)}"


def point_query(progress: str, app_id: str, *, batch_id: int | None = None, gtid: str | None = None,
                commit_time: dt.datetime | None = None) -> tuple[str, dict[str, Any], str]:
    """(sql, args, what was asked) of the batch to read at: at most one of `batch_id`, `gtid`,
    `commit_time`; none asks for the latest complete batch."""
    asked = [name for name, value in (("batch_id", batch_id), ("gtid", gtid), ("commit_time", commit_time))
             if value is not None]
    if len(asked) > 1:
        raise ConsistentReadError(f"read at one point: give one of batch_id, gtid, commit_time, not {asked}")
    if gtid is not None:
        return (*batch_at_gtid(progress, app_id, gtid), f"GTID {gtid}")
    if commit_time is not None:
        return (*batch_at_commit_time(progress, app_id, commit_time),
                f"commit time {commit_time.isoformat()}")
    if batch_id is not None:
        sql = (f"SELECT max(batch_id) AS batch_id FROM {progress} "
               "WHERE app_id = :app_id AND batch_id = :batch_id")
        return sql, {"app_id": app_id, "batch_id": int(batch_id)}, f"batch {batch_id}"
    return (*latest_batch(progress, app_id), "the latest batch")

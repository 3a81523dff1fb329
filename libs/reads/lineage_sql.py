"""Lineage SQL: documented query templates over the tables the apply stage writes.

Tables (pipelines/apply, DESIGN.md "Lineage"):
  * every target table: its columns, `_row_id` (hidden row identity) and `_lineage`
    (struct of schemas/lineage.avsc Lineage: source, trx_id, gtid, server_id, commit_ts,
    binlog_file, binlog_pos, change_seq, operation, statement) = the change that last wrote it;
  * `_cdc_change_log`: one row per change (schemas/lineage.avsc ChangeLogEntry + batch_id):
    row_id, database, table, delta_table, op, outcome, key (map column -> text), before/after
    images (present columns only), lineage;
  * `_cdc_schema_history`: one row per version a DDL of the stream gave a source table.

The lineage views (`_cdc_statement_rows`, `_cdc_last_change`, `_cdc_transaction_changes`, below:
`view_select`, `create_view_sql`; made by pipelines/reads/lineage_views.py) answer the same questions in
plain SQL (README "Lineage in SQL"). Reads of several tables at one point of the sources, and
as-of queries by GTID or commit time: libs/reads/consistent_read_sql.py (README "Consistent reads").
Every query function returns `(sql_text, args)` for
`spark.sql(sql_text, args=args)`:
  * table references are parameters of the template, rendered by `table_ref` (a catalog name)
    or `delta_path_ref` (a Delta path): identifiers quoted with backticks, backticks doubled;
  * every value (keys, GTIDs, times, statement text) is bound as a named parameter marker
    (`:p0`), never interpolated: binlog data is data, not SQL.
Key values are compared as the change log's canonical text (libs.replay.lineage.canonical_text:
integers/decimals as written, bytes as hex, datetimes ISO-8601) or, on target tables, as typed
values. Times are UTC (the session time zone is UTC; pass naive UTC or aware datetimes).

Example (pyspark, after a batch was applied under DELTA = config.delta_root):

    sql, args = last_change_of_row(delta_path_ref(f"{DELTA}/shop__orders"), {"id": 7})
    spark.sql(sql, args=args).show()   # the statement, GTID and position that last wrote id 7
"""

from __future__ import annotations

import datetime as dt
from typing import Any, Mapping

from libs.contracts.sql_names import quote_identifier  # noqa: F401 (this module's API too)
from libs.tables.system_tables import LAST_CHANGE, STATEMENT_ROWS, TRANSACTION_CHANGES


LINEAGE_FIELDS = ("source", "trx_id", "gtid", "server_id", "commit_ts", "binlog_file", "binlog_pos",
                  "change_seq", "operation", "statement")


def table_ref(*parts: str) -> str:
    """A catalog table reference, e.g. table_ref("main", "cdc", "shop__orders")."""
    return ".".join(quote_identifier(p) for p in parts)


def delta_path_ref(path: str) -> str:
    """A path-based Delta table reference: delta.`/path/to/table`."""
    return "delta." + quote_identifier(path)


def _lineage_select(prefix: str) -> str:
    return ", ".join(f"{prefix}.{quote_identifier(f)} AS {quote_identifier(f)}" for f in LINEAGE_FIELDS)


def last_change_of_row(table: str, key: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
    """Which statement last changed this row: the target row(s) whose columns equal `key`
    (typed values, e.g. {"id": 7}) with the `_lineage` of the change that last wrote them."""
    if not key:
        raise ValueError("key must name at least one column")
    args = {f"p{i}": value for i, value in enumerate(key.values())}
    where = " AND ".join(f"{quote_identifier(c)} <=> :p{i}" for i, c in enumerate(key))
    sql = (f"SELECT `_row_id` AS row_id, {_lineage_select('`_lineage`')}\n"
           f"FROM {table}\nWHERE {where}")
    return sql, args


def rows_changed_by_statement(change_log: str, source: str, trx_id: str,
                              statement: str | None = None) -> tuple[str, dict[str, Any]]:
    """Every row this statement changed: change-log entries of transaction (source, trx_id),
    limited to the statement text when given (a transaction may hold several statements),
    in commit order. Includes skipped/quarantined outcomes (filter on `outcome`)."""
    args: dict[str, Any] = {"source": source, "trx_id": trx_id}
    where = "lineage.source = :source AND lineage.trx_id = :trx_id"
    if statement is not None:
        args["statement"] = statement
        where += " AND lineage.statement = :statement"
    sql = ("SELECT row_id, `database`, `table`, delta_table, op, outcome, key, before, after,\n"
           "       lineage.binlog_file AS binlog_file, lineage.binlog_pos AS binlog_pos,\n"
           "       lineage.change_seq AS change_seq, lineage.statement AS statement\n"
           f"FROM {change_log}\nWHERE {where}\n"
           "ORDER BY lineage.binlog_file, lineage.binlog_pos, lineage.change_seq")
    return sql, args


def _key_matches(database: str, table: str,
                 key: Mapping[str, str | None]) -> tuple[dict[str, Any], list[str]]:
    """The bound arguments and the WHERE terms matching the change log's `key` map to `key`
    (column -> canonical text), every value a parameter marker."""
    if not key:
        raise ValueError("key must name at least one column")
    args: dict[str, Any] = {"database": database, "table": table}
    matches = []
    for i, (column, text) in enumerate(key.items()):
        args[f"k{i}"], args[f"v{i}"] = column, text
        matches.append(f"element_at(key, :k{i}) <=> :v{i}")
    return args, matches


def changes_of_key(change_log: str, database: str, table: str,
                   key: Mapping[str, str | None]) -> tuple[str, dict[str, Any]]:
    """All changes to key K in time order: the change-log entries of every row that ever had
    key K (`key`: key column -> canonical text), followed through key-changing updates by
    `row_id`, ordered by commit time then binlog position."""
    args, matches = _key_matches(database, table, key)
    sql = (f"WITH rows_of_key AS (\n"
           f"  SELECT DISTINCT row_id FROM {change_log}\n"
           f"  WHERE `database` = :database AND `table` = :table AND row_id IS NOT NULL\n"
           f"    AND {' AND '.join(matches)}\n)\n"
           "SELECT c.row_id, c.op, c.outcome, c.key, c.before, c.after,\n"
           f"       {_lineage_select('c.lineage')}\n"
           f"FROM {change_log} c JOIN rows_of_key r ON c.row_id = r.row_id\n"
           "WHERE c.`database` = :database AND c.`table` = :table\n"
           "ORDER BY c.lineage.commit_ts, c.lineage.binlog_file, c.lineage.binlog_pos, c.lineage.change_seq")
    return sql, args


def statements_touching_table(change_log: str, database: str, table: str, start: dt.datetime,
                              end: dt.datetime) -> tuple[str, dict[str, Any]]:
    """Statements that touched table T with start <= commit time < end: one row per
    (source, transaction, statement) with its first position and the number of changes."""
    args = {"database": database, "table": table, "start": start, "end": end}
    sql = ("SELECT lineage.source AS source, lineage.trx_id AS trx_id, lineage.gtid AS gtid,\n"
           "       lineage.commit_ts AS commit_ts, lineage.statement AS statement,\n"
           "       min(struct(lineage.binlog_file, lineage.binlog_pos)) AS first_event,\n"
           "       count(*) AS changes\n"
           f"FROM {change_log}\n"
           "WHERE `database` = :database AND `table` = :table\n"
           "  AND lineage.commit_ts >= :start AND lineage.commit_ts < :end\n"
           "GROUP BY lineage.source, lineage.trx_id, lineage.gtid, lineage.commit_ts, lineage.statement\n"
           "ORDER BY commit_ts, first_event")
    return sql, args


def schema_changes_of_table(schema_history: str, database: str, table: str) -> tuple[str, dict[str, Any]]:
    """Which DDL changed table T's schema, and when (issue #17 item 5): one row per version the
    stream's DDL gave it (`_cdc_schema_history`, schemas/schema_version_record.avsc), in binlog
    order: source, position, commit time, the statement, the schema after it as CREATE TABLE
    (NULL: dropped, or `error` says why the DDL could not be applied)."""
    sql = ("SELECT source, binlog_file, binlog_pos, commit_ts, statement, create_table, error, batch_id\n"
           f"FROM {schema_history}\n"
           "WHERE `database` = :database AND `table` = :table\n"
           "ORDER BY source, commit_ts, binlog_file, binlog_pos")
    return sql, {"database": database, "table": table}


def latest_progress(progress: str, app_id: str) -> tuple[str, dict[str, Any]]:
    """Per source, the last transaction applied by job `app_id` (the `_cdc_progress` row with
    the highest batch_id; the table is append-only, one row per source and batch), and the
    latest `caught_up_as_of`: everything the source had logged at that time is in Delta (NULL
    until a heartbeat was applied; issue #20 item 1)."""
    sql = ("SELECT source, trx_id, gtid, trx_file, trx_end_pos, commit_ts, batch_id,\n"
           "       _caught_up AS caught_up_as_of FROM (\n"
           "  SELECT *, row_number() OVER (PARTITION BY source ORDER BY batch_id DESC) AS _n,\n"
           "         max(caught_up_as_of) OVER (PARTITION BY source) AS _caught_up\n"
           f"  FROM {progress} WHERE app_id = :app_id\n) WHERE _n = 1\nORDER BY source")
    return sql, {"app_id": app_id}


# -- lineage views (issue #20 item 5; README "Lineage in SQL") ------------------------------------
# Views over `_cdc_change_log`, one per question, so an analyst asks in plain SQL. Created (or
# replaced) by pipelines/reads/lineage_views.py: beside the tables in a catalog schema, at the job's
# start; over path tables as a session's temporary views. Their names: libs/tables/system_tables.py.

# Every row a statement changed: the change log flattened, one row per row written or deleted
# (row_id set; a change that touched no row, a DDL, a skipped change is in the change log only).
_STATEMENT_ROWS = """SELECT lineage.source AS source, lineage.trx_id AS trx_id, lineage.gtid AS gtid,
       lineage.commit_ts AS commit_ts, lineage.statement AS statement,
       `database`, `table`, delta_table, op, outcome, row_id, key, before, after,
       lineage.binlog_file AS binlog_file, lineage.binlog_pos AS binlog_pos,
       lineage.change_seq AS change_seq, batch_id
FROM {change_log}
WHERE row_id IS NOT NULL"""

# Which statement last changed each row: per (database, table, row_id) its latest row change
# (a key-changing update keeps the row_id; op 'delete': the row is gone, deleted by it).
_LAST_CHANGE = """SELECT source, trx_id, gtid, commit_ts, statement, `database`, `table`, delta_table, op,
       row_id, key, before, after, binlog_file, binlog_pos, change_seq, batch_id
FROM (
  SELECT *, row_number() OVER (
           PARTITION BY `database`, `table`, row_id
           ORDER BY batch_id DESC, commit_ts DESC, binlog_file DESC, binlog_pos DESC, change_seq DESC) AS _n
  FROM ({statement_rows})
)
WHERE _n = 1"""

# What a transaction changed: per (transaction, table, statement) the rows it changed by
# operation, every change-log entry it has (DDL and changes that touched no row too) and the
# position of its first change.
_TRANSACTION_CHANGES = """SELECT source, trx_id, gtid, commit_ts, `database`, `table`, statement,
       first_change.binlog_file AS binlog_file, first_change.binlog_pos AS binlog_pos,
       inserted, updated, deleted, rows_changed, changes
FROM (
  SELECT lineage.source AS source, lineage.trx_id AS trx_id, lineage.gtid AS gtid,
         lineage.commit_ts AS commit_ts, `database`, `table`, lineage.statement AS statement,
         min(struct(lineage.binlog_file AS binlog_file, lineage.binlog_pos AS binlog_pos,
                    lineage.change_seq AS change_seq)) AS first_change,
         count_if(row_id IS NOT NULL AND op IN ('insert', 'snapshot')) AS inserted,
         count_if(row_id IS NOT NULL AND op = 'update') AS updated,
         count_if(row_id IS NOT NULL AND op = 'delete') AS deleted,
         count(row_id) AS rows_changed,
         count(*) AS changes
  FROM {change_log}
  GROUP BY lineage.source, lineage.trx_id, lineage.gtid, lineage.commit_ts, `database`, `table`,
           lineage.statement
)"""


def view_select(view: str, change_log: str) -> str:
    """The SELECT of lineage view `view` (libs/tables/system_tables.py name) over the change log table
    `change_log` (a reference: table_ref or delta_path_ref)."""
    statement_rows = _STATEMENT_ROWS.format(change_log=change_log)
    selects = {STATEMENT_ROWS: statement_rows,
               LAST_CHANGE: _LAST_CHANGE.format(statement_rows=statement_rows),
               TRANSACTION_CHANGES: _TRANSACTION_CHANGES.format(change_log=change_log)}
    if view not in selects:
        raise ValueError(f"no lineage view {view!r}")  # a programmer error
    return selects[view]


def create_view_sql(view_ref: str, select: str, *, temporary: bool = False) -> str:
    """CREATE OR REPLACE [TEMPORARY] VIEW: idempotent, so the job runs it at every start."""
    return f"CREATE OR REPLACE {'TEMPORARY ' if temporary else ''}VIEW {view_ref} AS\n{select}"


def last_change_of_key(last_change: str, database: str, table: str,
                       key: Mapping[str, str | None]) -> tuple[str, dict[str, Any]]:
    """Which statement last changed the row of source table database.table whose key is `key`
    (key column -> canonical text, as the change log keeps it), from view `_cdc_last_change`."""
    args, matches = _key_matches(database, table, key)
    sql = ("SELECT op, statement, gtid, commit_ts, binlog_file, binlog_pos, row_id\n"
           f"FROM {last_change}\n"
           f"WHERE `database` = :database AND `table` = :table AND {' AND '.join(matches)}")
    return sql, args


def changes_between(statement_rows: str, start: dt.datetime, end: dt.datetime) -> tuple[str, dict[str, Any]]:
    """Every row changed with start <= commit time < end, in commit order, from view
    `_cdc_statement_rows`."""
    sql = ("SELECT commit_ts, source, gtid, `database`, `table`, op, key, statement\n"
           f"FROM {statement_rows}\n"
           "WHERE commit_ts >= :start AND commit_ts < :end\n"
           "ORDER BY commit_ts, source, binlog_file, binlog_pos, change_seq")
    return sql, {"start": start, "end": end}

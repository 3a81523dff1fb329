"""A followed target's Delta table carried to the schema in force at the batch's end (issue #17
item 3; the plan: libs/schema_history/evolution.py), before the batch's rows are read.

The whole table read (at the version the batch starts from), each column from its Delta column
(renamed, cast when widened) or filled as the server filled it at ADD COLUMN: a DataFrame the
batch's rows are replayed on and then written with, in the table's ONE commit of the batch
(batch_writes.py: an overwrite with `overwriteSchema`, issue #39). A rename, a drop, an added
column's backfill, a type change and the batch's rows land together or not at all, and no
reader ever sees the new schema without the rows. Column DEFAULTs come with the new schema (field
metadata). Delta cannot keep NOT NULL through a schema overwrite: the rewritten table's columns
are nullable (the replay still fills a NOT NULL column as the server does).

A table renamed to the target's name in the batch (`copy_from`, libs/schema_history/table_renames.py)
is a copy of the renamed table's Delta table, carried the same way.

A table that starts anew in the batch (CREATE TABLE of a name whose Delta table exists, the
table dropped or renamed and another created in its place, renamed from a table made in the
batch, or snapshotted again) is carried empty in the new schema; in the same columns it is
left to the batch's truncate, which empties it in the commit of its rows.

A target's mode (pipelines/apply/modes/writes.py) has its part: a `delete: soft` target's
soft-delete columns are carried as they are (a copy without them has live rows only), and its
deleted rows cannot take another table's columns: a table starting anew in other columns, or
replaced by an online schema change tool's copy, stops the batch (SchemaEvolutionError) rather
than losing them; an SCD2 target's column added while carried is NULL in its closed versions.
"""
from __future__ import annotations

import datetime as dt
from functools import partial
from typing import Callable, Mapping, NamedTuple, Sequence

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

import pipelines.apply.tables as D
from libs.reads.lineage_sql import quote_identifier
from libs.replay import LINEAGE_COLUMN, ROW_ID_COLUMN
from libs.schema_history.column_identity import EndNames
from libs.schema_history.evolution import (
    AddedColumn, NewColumn, evolution, type_key, unknown_fills,
)
from libs.tables.system_tables import schema_app_id
from libs.tables.table_location import TableLocation
from libs.targets.model import Target
from pipelines.apply.modes.writes import writes_of
from pipelines.delta.delta_tables import located, read
from pipelines.delta.delta_txn import committed_version, table_version


class Carried(NamedTuple):
    """A target's content carried to the batch's end schema, nothing written yet."""

    table: DataFrame  # its rows (a pinned Delta version), the end's columns + _row_id + _lineage
    replaced: DataFrame | None = None  # the rows of the table a rename onto its name replaces
    copied: bool = False  # read from another table's Delta table (renamed to this one in the batch)

    def reader(self, spark: SparkSession, path: TableLocation | str, target: Target, mirrors: bool,
               touched: Callable, *, starts_anew: bool = False, positions: bool = False) -> Callable | None:
        """How the replay reads the rows a batch touches: from these rows (KnownTargets.reader's
        twin), nothing when the batch starts the table anew."""
        return None if starts_anew else partial(touched, self.table.sparkSession, self.table, target)


def _carried_column(target: Target, new: NewColumn):
    """One column of the carried table: the old column's values, or the fill of a new column,
    cast to the target's type, with the target's DEFAULT in the column's metadata."""
    column = target.column(new.name)
    if new.source is not None:
        value = F.col(quote_identifier(new.source))
    else:
        value = F.expr(D.value_sql(column, new.fill))
        value = writes_of(target).new_column(value, target)
    default = D.default_sql(column)
    return value.cast(D.spark_type(new.spark_type)).alias(
        new.name, metadata={"CURRENT_DEFAULT": default} if default else {})


def _carried_from(spark: SparkSession, path: TableLocation | str, exists: bool,
                  copy_from: TableLocation | str | None,
                  start: EndNames) -> tuple[TableLocation | str | None, bool] | None:
    """(the table whose rows are carried, None: no rows; whether the table starts anew), or None:
    nothing to carry."""
    if copy_from is not None and D.is_delta_table(spark, copy_from):
        return copy_from, start.others_gone
    if exists:  # (renamed from a table made in the batch: its rows are all in the batch)
        return path, start.others_gone or copy_from is not None
    if copy_from is not None:  # a new name, renamed from a table made in the batch: made with its rows
        return None, True
    return None


def carried_table(spark: SparkSession, path: TableLocation | str, target: Target, start: EndNames,
                  added_at: dt.datetime, where: str, app_id: str, batch_id: int,
                  copy_from: TableLocation | str | None = None,
                  added: Mapping[str, AddedColumn] | None = None, accepted: bool = False,
                  converted: Sequence[str] = ()) -> Carried | None:
    """The target's Delta table (if any) carried to `target`'s columns, or the table at
    `copy_from` (renamed to this one in the batch) so carried: a DataFrame of the version read,
    nothing written (the batch's write of the table commits it with its rows, batch_writes.py).
    None: nothing to carry (no table, already in these columns, or carried by this batch already).
    `spark` must be this thread's own session."""
    txn_app_id = schema_app_id(app_id, target.delta_table)
    exists = D.is_delta_table(spark, path)
    committed = committed_version(spark, path, txn_app_id) if exists else None  # (an earlier release's batch)
    if committed is not None and committed >= batch_id:
        return None
    carried_from = _carried_from(spark, path, exists, copy_from, start)
    if carried_from is None:
        return None
    source, empty = carried_from
    # pinned to the version read: the batch's writes come later
    table = (read(spark, source, table_version(spark, source)) if source is not None
             else spark.createDataFrame([], D.target_schema(target)))
    table = writes_of(target).carried_columns(table, target)
    extras = [f.name for f in D.extra_fields(target)]  # the history or soft-delete columns
    delta_columns = [(f.name, f.dataType.simpleString()) for f in table.schema.fields
                     if f.name not in (ROW_ID_COLUMN, LINEAGE_COLUMN, *extras)]
    if empty:  # the table starts anew: none of its rows is in the new one
        same = [(n, type_key(t)) for n, t in delta_columns] == [(c.name, type_key(c.spark_type))
                                                                 for c in target.columns]
        if copy_from is None and same:
            return None  # in the same columns: the batch's truncate empties it with its rows' commit
        writes_of(target).refuse_carry(where, anew_over_rows=exists, replaces_rows=False)
        plan = [NewColumn(c.name, c.spark_type, None) for c in target.columns]
        table = table.limit(0)
    else:
        plan = evolution(delta_columns, target, start, added_at, where, added)
        unknown = None if accepted else unknown_fills(plan or [], target, where, converted)
        if unknown is not None and not table.isEmpty():
            raise unknown
        if plan is None and copy_from is None:
            return None
        if plan is None:  # a copy with the same columns
            plan = [NewColumn(c.name, c.spark_type, c.name) for c in target.columns]
    columns = [*map(partial(_carried_column, target), plan), F.col(ROW_ID_COLUMN), F.col(LINEAGE_COLUMN),
               *map(F.col, extras)]
    ntz = lambda spark_type: type_key(spark_type) == "timestamp_ntz"  # noqa: E731
    if any(ntz(new.spark_type) for new in plan) and not any(ntz(t) for _, t in delta_columns):
        _support_timestamp_ntz(spark, path)  # the table's first one (a table with one has the feature)
    # A table renamed onto an existing one (a swap): the rows it replaces, for their lineage.
    replaced = read(spark, path, table_version(spark, path)) if copy_from is not None and exists else None
    writes_of(target).refuse_carry(where, anew_over_rows=False, replaces_rows=replaced is not None)
    return Carried(table.select(*columns), replaced, source not in (None, path))


def _support_timestamp_ntz(spark: SparkSession, path: TableLocation | str) -> None:
    """Delta creates a table with a TIMESTAMP_NTZ (DATETIME) column with the table feature on,
    but a schema overwrite that brings the first one needs it turned on first (a protocol
    upgrade: one commit of its own, made once, idempotent)."""
    if not D.is_delta_table(spark, path):
        return
    ref = located(path).sql_ref()
    (features,) = spark.sql(f"DESCRIBE DETAIL {ref}").select("tableFeatures").first()
    if "timestampNtz" not in (features or ()):
        spark.sql(f"ALTER TABLE {ref} SET TBLPROPERTIES ('delta.feature.timestampNtz' = 'supported')")


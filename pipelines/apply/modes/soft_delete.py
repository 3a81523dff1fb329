"""Soft deletes on whole-table writes (libs/apply/modes/soft_delete.py has the rule): a table
carried to a new schema (carried_writes.py) or written anew from executor snapshot rows keeps
its deleted rows, and a TRUNCATE flags its live ones, as the MERGE does (target_writes.merge)."""
from __future__ import annotations

from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

import pipelines.apply.tables as D
from libs.apply.modes.soft_delete import DELETED, live
from libs.reads.lineage_sql import quote_identifier
from libs.replay import ROW_ID_COLUMN
from libs.targets.model import Target
from pipelines.apply.target_writes import OP_COLUMN
from pipelines.apply.modes.columns import soft_delete_fields


def with_soft_columns(table: DataFrame, target: Target) -> DataFrame:
    """`table` with the target's soft-delete columns: its own, or those of live rows (a table
    that had none, e.g. a copy an online schema change tool made)."""
    fields = soft_delete_fields(target)
    if not fields or all(f.name in table.columns for f in fields):
        return table
    values = live()
    return table.select(*(F.col(quote_identifier(c)) for c in table.columns if c not in values),
                        *(F.lit(values[f.name]).cast(f.dataType).alias(f.name) for f in fields))


def flag_live(table: DataFrame, target: Target, truncated: dict[str, Any] | None) -> DataFrame:
    """What stays of `table` when the batch starts it anew: nothing for a hard target; for a
    soft one every row, the live ones flagged deleted by `truncated` (the first truncate)."""
    if not target.soft_delete or truncated is None:
        return table.limit(0)
    fields = {f.name: f.dataType for f in soft_delete_fields(target)}
    alive = ~F.col(DELETED)
    flagged = {n: F.when(alive, F.lit(D.to_spark_value(v)).cast(fields[n]))
                   .otherwise(F.col(quote_identifier(n)))
               for n, v in truncated.items()}
    return table.select(*(flagged[c].alias(c) if c in flagged else F.col(quote_identifier(c))
                          for c in table.columns))


def flag_deleted(base: DataFrame, changed: DataFrame, target: Target) -> DataFrame:
    """The rows of `base` that `changed` (MERGE source rows) deletes, with the soft-delete
    columns it gives them (as the MERGE's delete clause of a soft target sets them)."""
    names = [f.name for f in soft_delete_fields(target)]
    marks = changed.where(F.col(OP_COLUMN) == F.lit("delete")).select(
        F.col(ROW_ID_COLUMN).alias("_cdc_deleted_id"), *(F.col(n).alias(f"_cdc_{n}") for n in names))
    hit = base.join(marks, base[ROW_ID_COLUMN] == marks["_cdc_deleted_id"], "inner")
    return hit.select(*(F.col(f"_cdc_{c}").cast(base.schema[c].dataType).alias(c) if c in names
                        else base[quote_identifier(c)] for c in base.columns))

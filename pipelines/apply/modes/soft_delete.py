"""The writes of a soft-delete target (libs/apply/modes/soft_delete.py has the rule): a current
target's (current.py), but a delete flags the stored row instead of removing it, and a TRUNCATE
flags every live one, in the MERGE (its clauses) and in the whole-table writes alike: a table
carried to a new schema (carried.py) or written anew from executor snapshot rows keeps
its deleted rows. A carry that would lose them is refused."""
from __future__ import annotations

from functools import partial
from typing import Any, Callable, Sequence

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

import pipelines.apply.tables as D
from libs.apply.modes.soft_delete import DELETED, SOFT_DELETE_COLUMNS, live
from libs.apply.target_mirror import TargetMirror
from libs.apply.write_op import WriteOp
from libs.reads.lineage_sql import quote_identifier
from libs.replay import ROW_ID_COLUMN
from libs.schema_history.evolution import SchemaEvolutionError
from libs.tables.table_location import TableLocation
from libs.targets.model import Target
from pipelines.apply.modes.columns import soft_delete_fields
from pipelines.apply.modes.current import CurrentWrites
from pipelines.apply.target_writes import OP_COLUMN, TablePlan, column, merge, new_rows_write
from pipelines.delta.delta_tables import writer
from pipelines.job.schemas import spark_schema


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
    marks = changed.where(F.col(OP_COLUMN) == F.lit(WriteOp.DELETE)).select(
        F.col(ROW_ID_COLUMN).alias("_cdc_deleted_id"), *(F.col(n).alias(f"_cdc_{n}") for n in names))
    hit = base.join(marks, base[ROW_ID_COLUMN] == marks["_cdc_deleted_id"], "inner")
    return hit.select(*(F.col(f"_cdc_{c}").cast(base.schema[c].dataType).alias(c) if c in names
                        else base[quote_identifier(c)] for c in base.columns))


def _flag_deleted_clause(builder, is_delete):
    """A stored row the source deletes: its soft-delete columns set, its values kept."""
    return builder.whenMatchedUpdate(condition=is_delete, set={quote_identifier(n): column("s", n)
                                                               for n in SOFT_DELETE_COLUMNS})


def _flag_truncated_clause(truncated: dict[str, Any], builder):
    """Every live stored row the source does not name: flagged by the batch's first truncate."""
    fields = {f.name: f.dataType for f in spark_schema("soft_delete").fields}
    return builder.whenNotMatchedBySourceUpdate(
        condition=~column("t", DELETED),
        set={quote_identifier(n): F.lit(D.to_spark_value(v)).cast(fields[n]) for n, v in truncated.items()})


class SoftDeleteWrites(CurrentWrites):
    writes_at_positions = False  # its deletes flag rows: a DV commit would drop them (not yet)

    def new_rows(self, spark: SparkSession, plan: TablePlan, rows: pa.Table, source_schema: T.StructType,
                 names: list[str]) -> Callable:
        """A table started anew keeps its earlier rows, flagged: a MERGE."""
        if not plan.replace:
            return new_rows_write(spark, plan)
        return partial(self.merge, spark, spark.createDataFrame(rows, source_schema), names,
                       scope=plan.scope, truncated=plan.truncated)

    def merge(self, spark: SparkSession, source: DataFrame, names: Sequence[str], path: TableLocation | str,
              scope=None, truncated: dict[str, Any] | None = None) -> None:
        merge(spark, source, names, path, scope, deleted=_flag_deleted_clause,
              unmatched=None if truncated is None else partial(_flag_truncated_clause, truncated))

    def snapshot_rows_write(self, spark: SparkSession, part) -> Callable:
        """A table started anew keeps its earlier rows, flagged by its truncate."""
        if part.replace and part.carried is None:
            return partial(self.merge, spark, part.merge_rows(), part.merge_names, truncated=part.truncated)
        if not part.replace:
            return super().snapshot_rows_write(spark, part)
        rows = flag_live(part.carried.table, part.target, part.truncated).unionByName(part.target_rows())
        return writer(rows, "overwrite", overwriteSchema="true")

    @staticmethod
    def mirror_apply(mirror: TargetMirror, upserts: list, deletes: list) -> None:
        mirror.apply(upserts, (), None,
                     soft={d[ROW_ID_COLUMN]: {c: d[c] for c in SOFT_DELETE_COLUMNS} for d in deletes})

    @staticmethod
    def kept_on_replace(table: DataFrame, target: Target, truncated: dict[str, Any] | None) -> DataFrame:
        return flag_live(table, target, truncated)

    @staticmethod
    def deleted_kept(base: DataFrame, changed: DataFrame, target: Target) -> DataFrame | None:
        return flag_deleted(base, changed, target)

    @staticmethod
    def carried_columns(table: DataFrame, target: Target) -> DataFrame:
        return with_soft_columns(table, target)

    @staticmethod
    def refuse_carry(where: str, anew_over_rows: bool, replaces_rows: bool) -> None:
        """A carry that would drop the deleted rows (not supported)."""
        if anew_over_rows:
            raise SchemaEvolutionError(f"{where}: the `delete: soft` target starts anew in other columns; "
                                       f"its deleted rows would be lost (not supported)")
        if replaces_rows:
            raise SchemaEvolutionError(f"{where}: a copy replaces the `delete: soft` target "
                                       f"(an online schema change tool's swap); its deleted rows would be "
                                       f"lost (not supported)")

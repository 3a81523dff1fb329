"""The apply stage's target writes: one Delta write per target table and batch (DESIGN.md
"Dataflow": apply), a MERGE by `_row_id` or a whole-table overwrite; both give the same table.
Idempotence (Delta's txnAppId/txnVersion around the write) is the caller's (DeltaApplier)."""
from __future__ import annotations

import dataclasses
from typing import Any, Callable, Sequence

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

import pipelines.apply.tables as D
from libs.apply.merge_scope import MergeScope
from libs.apply.write_op import WriteOp
from libs.reads.lineage_sql import quote_identifier
from libs.replay import LINEAGE_COLUMN, ROW_ID_COLUMN
from libs.tables.table_location import TableLocation
from libs.targets.model import Target
from pipelines.apply.key_predicates import key_in
from pipelines.delta.arrow_frames import arrow_table
from pipelines.delta.delta_tables import delta_table, writer
from pipelines.apply.modes.columns import soft_delete_fields

OP_COLUMN = "_cdc_op"  # MERGE source only: a WriteOp (libs/apply/write_op.py)


@dataclasses.dataclass
class TablePlan:
    """One target's replayed batch: the rows to upsert (whole rows with lineage) and to delete.
    `replace`: the upserts are the table's whole new content (a snapshot started it anew);
    `append`: every upsert is a new snapshot row, which no stored row can match."""

    target: Target
    path: TableLocation | str  # where the target lives (libs/tables/table_location.py)
    upserts: list[dict[str, Any]]
    deletes: list[dict[str, Any]]
    replace: bool = False
    append: bool = False
    scope: MergeScope | None = None  # the stored rows a MERGE can match (libs/apply/merge_scope.py)
    carried: Any = None  # schema_changes.Carried: the table in the batch's end schema, the upserts' base
    truncated: dict[str, Any] | None = None  # a soft target's truncate: the columns flagging its other rows

    @property
    def writes_anything(self) -> bool:
        """Rows to write, a table started anew, or a new schema (its content carried)."""
        return bool(self.upserts or self.deletes or self.replace or self.carried is not None)

    @property
    def copies_another(self) -> bool:
        """Its content is carried from another table's Delta table (renamed onto this one): it is
        written before the batch's other targets, so a kill never leaves the copied table
        rewritten before its copy is committed."""
        return self.carried is not None and self.carried.copied

    @property
    def inserts_only(self) -> bool:
        """Every upsert is a new row: the replay read no stored row, so none can match."""
        return not self.deletes and self.scope is not None and not self.scope.values


def merge_source(plan: TablePlan) -> tuple[pa.Table, T.StructType, list[str]]:
    """The plan's rows as one Arrow table of the target's columns + OP_COLUMN, its Spark
    schema (every column nullable: deletes carry only _row_id and lineage) and column names."""
    schema = D.target_schema(plan.target)
    source_schema = T.StructType([T.StructField(f.name, f.dataType, True) for f in schema.fields]
                                 + [T.StructField(OP_COLUMN, T.StringType(), False)])
    names = [f.name for f in schema.fields] + [OP_COLUMN]
    rows = arrow_table([{n: r.get(n) for n in names} for r in plan.upserts + plan.deletes], source_schema)
    return rows, source_schema, names


def mirrored_upserts(plan: TablePlan, rows: pa.Table) -> list[dict[str, Any]]:
    """The upserts in the representation of a Delta read (D.python_rows), as a mirror holds rows."""
    kept = list(plan.target.column_names) + [ROW_ID_COLUMN, LINEAGE_COLUMN]
    kept += [f.name for f in soft_delete_fields(plan.target)]
    return D.python_rows(rows.filter(pc.equal(rows[OP_COLUMN], WriteOp.UPSERT)).select(kept))


def whole_table(spark: SparkSession, rows: list[dict[str, Any]], target: Target) -> DataFrame:
    """The target's whole new content (from its mirror) as one partition."""
    schema = D.target_schema(target)
    return spark.createDataFrame(arrow_table(rows, schema), schema).coalesce(1)


def column(alias: str, name: str):
    """A MERGE side's column: t (the stored table) or s (the source)."""
    return F.col(f"{alias}.{quote_identifier(name)}")


def in_scope(scope: MergeScope, alias: str = "t"):
    """Column predicate: the stored row's key is one of the scope's values."""
    if not scope.values:
        return F.lit(False)
    return key_in(scope.columns, sorted(scope.values, key=repr), qualifier=alias)


def delete_matched(builder, is_delete):
    """The clause of a stored row the MERGE source deletes: it leaves the table."""
    return builder.whenMatchedDelete(condition=is_delete)


def merge(spark: SparkSession, source: DataFrame, names: Sequence[str], path: TableLocation | str,
          scope: MergeScope | None = None, *, deleted: Callable = delete_matched,
          unmatched: Callable | None = None) -> None:
    """MERGE by `_row_id`: delete where the source says delete, else update or insert. The
    clauses run in this order (Delta: the first matching clause wins). With a `scope`, the
    condition also bounds the stored row's key, which Delta uses to skip files by their key
    statistics (libs/apply/merge_scope.py: it matches the same rows).
    The target's mode (pipelines/apply/modes/) gives the clauses that differ: `deleted(builder,
    is_delete)`, what a delete does to the stored row; `unmatched(builder)`, a clause for every
    stored row the source does not name (a soft target's truncate), which needs every file, so
    no scope bound then."""
    assignments = {quote_identifier(n): column("s", n) for n in names[:-1]}
    is_delete = column("s", OP_COLUMN) == F.lit(WriteOp.DELETE)
    condition = column("t", ROW_ID_COLUMN) == column("s", ROW_ID_COLUMN)
    if scope is not None and unmatched is None:
        condition = in_scope(scope) & condition
    builder = deleted(delta_table(spark, path).alias("t").merge(source.alias("s"), condition), is_delete)
    builder = (builder.whenMatchedUpdate(set={k: v for k, v in assignments.items()
                                              if k != quote_identifier(ROW_ID_COLUMN)})
               .whenNotMatchedInsert(condition=~is_delete, values=assignments))
    if unmatched is not None:
        builder = unmatched(builder)
    builder.execute()


def new_rows_write(spark: SparkSession, plan: TablePlan):
    """The write of a plan whose rows are new (plan.replace / plan.append / plan.inserts_only):
    an overwrite or an append of them, no MERGE (a MERGE joins the whole table: a snapshot of n
    chunks would scan the table n times)."""
    schema = D.target_schema(plan.target)
    table = spark.createDataFrame(arrow_table(plan.upserts, schema), schema)
    return writer(table, "overwrite" if plan.replace else "append")

"""The apply stage's reads: the target rows one batch can touch, and the whole-table mirror
that spares that read for small tables (libs/apply/target_mirror.py). Nothing here writes."""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import reduce
from typing import Any, Callable, NamedTuple, Sequence

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from libs.apply.merge_scope import IN_LIST_MAX, OR_LIST_MAX
from libs.apply.modes.select import mode_of
from libs.apply.plan import Lookups
from libs.reads.lineage_sql import quote_identifier
from libs.replay import LINEAGE_COLUMN, ROW_ID_COLUMN
from libs.apply.keyed_copy import KeyedCopy, copy_key
from libs.apply.target_mirror import MirrorOverflow, TargetMirror
from libs.tables.table_location import TableLocation
from libs.targets.model import Target
import pipelines.apply.tables as D
from pipelines.apply.key_predicates import key_in
from pipelines.delta.arrow_frames import arrow_frame
from pipelines.delta.delta_tables import read
from pipelines.apply.modes.columns import soft_delete_fields

# A stored row's position in the table at a PinnedRead's version: its data file (as Spark spells it
# in _metadata.file_path) and its row index in that file. Taken off each row by ReadPositions before
# the replay sees it: never in an image, a table or the change log.
FILE_COLUMN, ROW_INDEX_COLUMN = "_position_file", "_position_row_index"
POSITION_COLUMNS = (FILE_COLUMN, ROW_INDEX_COLUMN)


class PinnedRead(NamedTuple):
    """The stored table at `path` read at Delta `version`, each row with its position
    (POSITION_COLUMNS): the positions a DV commit (pipelines/apply/position_writes.py) changes."""

    path: TableLocation
    version: int


@dataclass
class ReadPositions:
    """The positions of the rows one batch's replay read of a table, all at Delta `version`:
    row id -> (file url, row index). `complete`: every row read came with its position;
    `conflicting`: a row id read at two positions (the table holds it twice)."""

    version: int
    at: dict[str, tuple[str, int]] = field(default_factory=dict)
    complete: bool = True
    conflicting: bool = False

    def reader(self, read: Callable) -> Callable:
        """`read(lookups)` (rows with POSITION_COLUMNS) as the replay's reader: each row's
        position kept here and taken off the row before it is handed on."""
        def positioned(lookups) -> list[dict[str, Any]]:
            rows = list(read(lookups))
            for row in rows:
                at = (row.pop(FILE_COLUMN, None), row.pop(ROW_INDEX_COLUMN, None))
                if None in at:
                    self.complete = False
                elif self.at.setdefault(row[ROW_ID_COLUMN], at) != at:
                    self.conflicting = True
            return rows
        return positioned


# Key lookups up to IN_LIST_MAX / OR_LIST_MAX read through a filter instead of a broadcast join
# (read_touched). Whole-image lookups (keyless tables, null-safe, every column) stay joins.


def rows_of(table: DataFrame, target: Target, *extra: str) -> list[dict[str, Any]]:
    """Target columns + _row_id (+ `extra` columns) of `table`'s rows, through Arrow
    (D.python_rows)."""
    return D.python_rows(arrow_of(table, target, *extra))


def arrow_of(table: DataFrame, target: Target, *extra: str) -> pa.Table:
    """Target columns + _row_id (+ `extra` columns) of `table`, collected as Arrow."""
    names = list(target.column_names) + [ROW_ID_COLUMN, *extra]
    return table.select(*(F.col(quote_identifier(n)) for n in names)).toArrow()


def live_rows(table: DataFrame, target: Target) -> DataFrame:
    """The table's rows the replay may see: a soft-delete target's deleted rows are not there
    for it (libs/apply/modes/soft_delete.py), an SCD2 target's closed versions neither (its open
    versions are its rows: libs/replay/versions.py)."""
    live = mode_of(target).live
    return table if live is None else table.where(F.col(live[0]) == F.lit(live[1]))


def read_touched(spark: SparkSession, path: TableLocation | str | DataFrame, target: Target,
                 lookups: Lookups) -> list[dict[str, Any]]:
    """Target rows matching the lookups, only those collected. A few key tuples are a filter
    (one scan job; Delta skips files by min/max stats); many, and whole before images, are a
    broadcast left-semi join. Rows matched twice come back twice: the caller keys them by _row_id.
    `path` may be the table itself (a DataFrame: a table the batch's DDL carries, schema_changes.py),
    or a PinnedRead: the table at its version, the rows with their positions (POSITION_COLUMNS)."""
    table, extra = _stored(spark, path)
    table = live_rows(table, target)
    filters, parts = [], []
    for columns, tuples, null_safe in ([(k, v, False) for k, v in lookups.by_key.items()]
                                       + [(k, v, True) for k, v in lookups.by_image.items()]):
        if not tuples:
            continue
        if not null_safe and len(tuples) <= (IN_LIST_MAX if len(columns) == 1 else OR_LIST_MAX):
            filters.append(key_in(columns, tuples))
        else:
            parts.append(_semi_join(spark, table, columns, tuples, null_safe))
    if filters:
        parts.append(table.filter(reduce(lambda a, b: a | b, filters)))
    if not parts:
        return []
    return rows_of(reduce(DataFrame.unionByName, parts), target, *extra)


def _stored(spark: SparkSession, path) -> tuple[DataFrame, tuple[str, ...]]:
    """The table read_touched reads, and the columns it adds to the target's."""
    if isinstance(path, DataFrame):
        return path, ()
    if isinstance(path, PinnedRead):
        return _positioned(read(spark, path.path, path.version)), POSITION_COLUMNS
    return read(spark, path), ()


def _positioned(table: DataFrame) -> DataFrame:
    """A Delta read's rows with their positions (POSITION_COLUMNS)."""
    return table.select("*", F.col("_metadata.file_path").alias(FILE_COLUMN),
                        F.col("_metadata.row_index").alias(ROW_INDEX_COLUMN))


def _semi_join(spark: SparkSession, table: DataFrame, columns: Sequence[str], tuples,
               null_safe: bool) -> DataFrame:
    fields = [T.StructField(f"_k{i}", table.schema[c].dataType, True) for i, c in enumerate(columns)]
    keys = arrow_frame(spark, [{f"_k{i}": v for i, v in enumerate(t)} for t in tuples], T.StructType(fields))
    conds = [(table[quote_identifier(c)].eqNullSafe(keys[f"_k{i}"]) if null_safe
              else table[quote_identifier(c)] == keys[f"_k{i}"]) for i, c in enumerate(columns)]
    return table.join(F.broadcast(keys), on=reduce(lambda a, b: a & b, conds), how="left_semi")


def load_mirror(spark: SparkSession, path: TableLocation | str, target: Target, version: int | None,
                max_rows: int, copy_max_rows: int = 0, positions: bool = False) -> TargetMirror | KeyedCopy:
    """A fresh mirror of the table at Delta `version` (None: no table yet, an empty mirror); a
    keyed copy of a bigger table up to `copy_max_rows` keyed as libs/apply/keyed_copy.py asks,
    with its rows' positions when `positions`. Raises MirrorOverflow when the table is too big
    for either."""
    if version is None:
        return TargetMirror([], None, max_rows)
    table = read(spark, path, version)
    rows = table.count()  # answered from Delta's file statistics
    if rows <= max_rows:
        soft = [f.name for f in soft_delete_fields(target)]  # deleted rows: kept apart by the mirror
        return TargetMirror(rows_of(table, target, LINEAGE_COLUMN, *soft), version, max_rows)
    key = copy_key(target)
    if rows > copy_max_rows or key is None:
        raise MirrorOverflow(path)
    if not positions:
        return KeyedCopy(arrow_of(table, target), key, version, D.python_rows)
    stored = arrow_of(_positioned(table), target, *POSITION_COLUMNS)
    return KeyedCopy(stored.drop_columns(list(POSITION_COLUMNS)), key, version, D.python_rows,
                     positions=(stored.column(FILE_COLUMN), stored.column(ROW_INDEX_COLUMN)))

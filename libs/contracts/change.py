"""The change record inside the apply stage (DESIGN.md "Change record"; issue #37 item 6).

On the wire (Kafka -> assemble/rows -> apply) a change is a row of schemas/change_record.avsc;
from the moment the apply stage reads one (the driver's collected batch, an executor's part) it
is a `Change`: the same fields, typed, read as attributes, and an `Op` instead of free text.
A field the schema adds or drops fails tests/unit/apply/test_change.py until this class follows.

Ops the schema declares, plus one the apply stage makes itself: SUPERSEDED, a row change of a
table a later DDL of the batch made anew (libs/schema_history/column_identity.py), recorded only.
"""
from __future__ import annotations

import dataclasses
import datetime as dt
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Mapping, NamedTuple, TypedDict

import pyarrow as pa

from libs.contracts.arrow_rows import column_values
from libs.contracts.position import commit_key, sort_key_of


class Op(StrEnum):
    INSERT = "insert"
    UPDATE = "update"
    DELETE = "delete"
    STATEMENT = "statement"  # statement-format DML: recorded, never executed (WL#3303)
    DDL = "ddl"
    SNAPSHOT = "snapshot"  # a row a consistent snapshot read (libs/snapshot/changes.py)
    TRUNCATE = "truncate"  # the table starts anew: a snapshot's first record, or TRUNCATE TABLE
    SUPERSEDED = "superseded"  # apply-stage only (module docstring)


ROW_OPS = frozenset({Op.INSERT, Op.UPDATE, Op.DELETE})
WIRE_OPS = frozenset(Op) - {Op.SUPERSEDED}  # = the avsc's Op symbols (tests/unit/apply/test_change.py)
_OP_OF = {op.value: op for op in Op}



class ColumnValue(TypedDict):
    """One present column of a row image (schemas/change_record.avsc ColumnValue): exactly one
    of text/binary is set unless the value is SQL NULL (both None). A plain dict: the C core
    (libs/binlog/_rowimages.c) builds millions of them, and a class per value costs."""

    ordinal: int  # 0-based, Table_map order
    name: str | None
    type_code: int  # enum_field_types of the column (real type)
    text: str | None
    binary: bytes | None


Image = list[ColumnValue]  # present columns only, in ordinal order


@dataclass(slots=True)
class Change:
    """One row change, statement or DDL of a complete source transaction (change_record.avsc,
    field for field), and `filled`: target column -> the value the server gave it where the
    image lacks it and the target's DEFAULT now is not what the server used (a column added
    after the row was logged holds what its ADD COLUMN gave it; libs/schema_history/evolution.py,
    libs/apply/ddl.py).

    Never changed in place (a derived change is a new one: with_op, with_filled). Not frozen:
    a frozen dataclass's __init__ costs 4.5 us here against 0.6 us, per change of a batch."""

    source: str
    trx_id: str
    gtid: str | None
    xid: int | None
    server_id: int
    commit_ts: int | dt.datetime  # epoch micros as collected (pipelines/apply/applier._collect)
    trx_file: str
    trx_end_pos: int
    change_seq: int
    database: str
    table: str
    op: Op
    before: Image | None
    after: Image | None
    statement: str | None
    binlog_file: str
    binlog_pos: int
    filled: Mapping[str, Any] | None = None

    @classmethod
    def of(cls, record: Mapping[str, Any]) -> "Change":
        """From a change_record.avsc mapping (a Spark Row's asDict, a test's dict). Fields it
        lacks are an error; keys the schema does not have are too (a misspelt field)."""
        extra = record.keys() - _FIELD_SET
        if extra:
            raise ValueError(f"not change record fields: {sorted(extra)}")
        return cls(**{**record, "op": op_of(record["op"])})

    def to_record(self) -> dict[str, Any]:
        """The change_record.avsc mapping (`of`'s inverse; `filled` is not on the wire)."""
        return {name: getattr(self, name) for name in FIELDS} | {"op": self.op.value}

    def with_op(self, op: Op) -> "Change":
        return dataclasses.replace(self, op=op)

    def with_filled(self, filled: Mapping[str, Any]) -> "Change":
        return dataclasses.replace(self, filled=filled)

    def with_images(self, before: Image | None, after: Image | None) -> "Change":
        return dataclasses.replace(self, before=before, after=after)

    @property
    def order(self) -> tuple:
        """Its place in its source's commit order (libs/contracts/position.py commit_key)."""
        return commit_key(self.trx_file, self.trx_end_pos, self.commit_ts, self.change_seq)

    @property
    def source_order(self) -> tuple:
        """Its place among several sources' changes: source by source, each in commit order."""
        return sort_key_of(self.source, self.trx_file, self.trx_end_pos, self.commit_ts, self.change_seq)

    def with_table(self, database: str, table: str) -> "Change":
        return dataclasses.replace(self, database=database, table=table)


class Commit(NamedTuple):
    """Where a source's change stands in commit order, without its content: what the driver
    knows of the last change of the executors' part of a batch (pipelines/apply/batch_split.py).
    Its fields are Change's of the same names, so commit order, progress and GTID positions
    (libs/apply/plan.py, libs/reads/versions.py) take either."""

    source: str
    trx_id: str
    gtid: str | None
    trx_file: str
    trx_end_pos: int
    commit_ts: int
    change_seq: int

    @property
    def order(self) -> tuple:
        """Its place in its source's commit order (libs/contracts/position.py commit_key)."""
        return commit_key(self.trx_file, self.trx_end_pos, self.commit_ts, self.change_seq)

    @property
    def source_order(self) -> tuple:
        """Its place among several sources' changes: source by source, each in commit order."""
        return sort_key_of(self.source, self.trx_file, self.trx_end_pos, self.commit_ts, self.change_seq)


FIELDS = tuple(f.name for f in dataclasses.fields(Change) if f.name != "filled")  # the avsc's fields
_FIELD_SET = frozenset(FIELDS) | {"filled"}


def op_of(text: str) -> Op:
    try:
        return _OP_OF[text]
    except KeyError:
        raise ValueError(f"unknown change op {text!r} (schemas/change_record.avsc)") from None


def changes_of(table: pa.Table | pa.RecordBatch) -> list[Change]:
    """The apply stage's changes from collected change records (every avsc field a column; other
    columns are ignored), converted column by column (libs/contracts/arrow_rows.py)."""
    missing = [f for f in FIELDS if f not in table.schema.names]
    if missing:
        raise ValueError(f"change records without {missing}")
    columns = [column_values(table.column(f)) for f in FIELDS]
    at = FIELDS.index("op")
    columns[at] = [op_of(v) for v in columns[at]]
    return [Change(*values) for values in zip(*columns)]

"""The snapshot record (schemas/snapshot_record.avsc), encoded once: Avro binary, no framing.

A `rows` record carries its chunk's values as the server sent them, column by column
(libs/snapshot/chunk_values.py); `row_images()` turns them into change_record's ColumnValues,
the structure a decoded binlog row image has."""
from __future__ import annotations

import datetime as dt
import io
from dataclasses import dataclass, field, fields
from functools import lru_cache

import fastavro

from libs.contracts.avro_schemas import avro_schema
from libs.snapshot import chunk_values
from libs.snapshot.values import SourceColumn
from libs.contracts.table_names import table_key

BEGIN, TABLE, ROWS, TABLE_END, END = "begin", "table", "rows", "table_end", "end"
TRX_PREFIX = "snapshot:"  # trx_id of snapshot change records: never a GTID nor a 'file:pos'


_CHUNK_FIELDS = ("columns", "values")


@lru_cache(maxsize=None)
def _schema():
    return fastavro.parse_schema(avro_schema("snapshot_record"))


@lru_cache(maxsize=None)
def _head_schema():
    """The record without its chunk: what the assemble stage reads of every record (the values
    are converted by the rows stage, in parallel; Avro schema resolution skips them)."""
    head = dict(avro_schema("snapshot_record"))
    head["fields"] = [f for f in head["fields"] if f["name"] not in _CHUNK_FIELDS]
    return fastavro.parse_schema(head)


@dataclass(frozen=True)
class SnapshotRecord:
    kind: str
    snapshot_id: str
    binlog_file: str
    binlog_pos: int
    server_id: int
    snapshot_ts: int  # epoch microseconds, UTC
    gtid: str | None = None
    tables: tuple[str, ...] | None = None
    database: str | None = None
    table: str | None = None
    create_table: str | None = None
    statement: str | None = None
    chunk_no: int | None = None
    columns: tuple[SourceColumn, ...] | None = None
    values: bytes | None = field(default=None, compare=False, repr=False)  # chunk_values layout
    row_count: int | None = None  # rows: rows in the chunk; table_end: rows of the table

    @property
    def qualified_table(self) -> str:
        """The table as one string that reads back to its pair (libs/contracts/table_names.py)."""
        return table_key(self.database, self.table)

    @property
    def trx_id(self) -> str:
        """The trx_id of the table's change records: one per (run, table), so row ids differ
        between a run and its re-snapshot (libs/replay/lineage.make_row_id). The table is
        table_key's text: 'db.table' as always for ordinary names (the same row ids as before),
        quoted when a '.' in the database would make two tables one (libs/contracts/table_names.py)."""
        return f"{TRX_PREFIX}{self.snapshot_id}:{self.qualified_table}"

    @classmethod
    def chunk(cls, columns: tuple[SourceColumn, ...], rows, **head) -> "SnapshotRecord":
        """A `rows` record of `rows` (the server's bytes, one value per column)."""
        return cls(kind=ROWS, columns=tuple(columns), values=chunk_values.encode(columns, rows),
                   row_count=len(rows), **head)

    def row_images(self) -> list[list[dict]]:
        """rows: each row's ColumnValues, every column in ordinal order (ValueError when the
        chunk does not decode)."""
        return chunk_values.row_images(self.columns, self.values)

    def encode(self) -> bytes:
        out = io.BytesIO()
        data = {f.name: getattr(self, f.name) for f in fields(self)}
        data["tables"] = list(self.tables) if self.tables is not None else None
        if self.columns is not None:
            data["columns"] = [vars(c) for c in self.columns]
        fastavro.schemaless_writer(out, _schema(), data)
        return out.getvalue()

    @classmethod
    def decode(cls, raw: bytes, *, head_only: bool = False) -> "SnapshotRecord":
        """Raises ValueError when `raw` is not a snapshot record. `head_only`: without its rows."""
        try:
            if head_only:
                data = fastavro.schemaless_reader(io.BytesIO(raw), _schema(), _head_schema())
                data.update(dict.fromkeys(_CHUNK_FIELDS))
            else:
                data = fastavro.schemaless_reader(io.BytesIO(raw), _schema())
        except Exception as exc:  # noqa: BLE001 - fastavro raises several types for bad bytes
            raise ValueError(f"not a snapshot record ({type(exc).__name__}: {exc})") from None
        ts = data["snapshot_ts"]
        if isinstance(ts, dt.datetime):  # fastavro reads timestamp-micros as an aware datetime
            data["snapshot_ts"] = ((ts - dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc))
                                   // dt.timedelta(microseconds=1))
        if data["tables"] is not None:
            data["tables"] = tuple(data["tables"])
        if data["columns"] is not None:
            data["columns"] = tuple(SourceColumn(**c) for c in data["columns"])
        return cls(**data)


def is_snapshot_trx(trx_id: str) -> bool:
    return trx_id.startswith(TRX_PREFIX)

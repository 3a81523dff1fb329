"""The snapshot record (schemas/snapshot_record.avsc), encoded once: Avro binary, no framing.

ColumnValue is change_record's (declared once in schemas/change_record.avsc), so a snapshot row
image and a decoded binlog row image are the same structure."""
from __future__ import annotations

import datetime as dt
import io
from dataclasses import dataclass, field, fields
from functools import lru_cache

import fastavro

from libs.avro_schemas import avro_schema

BEGIN, TABLE, ROWS, TABLE_END, END = "begin", "table", "rows", "table_end", "end"
TRX_PREFIX = "snapshot:"  # trx_id of snapshot change records: never a GTID nor a 'file:pos'


@lru_cache(maxsize=None)
def _schema():
    named: dict = {}
    fastavro.parse_schema(avro_schema("change_record"), named_schemas=named)
    return fastavro.parse_schema(avro_schema("snapshot_record"), named_schemas=named)


@lru_cache(maxsize=None)
def _head_schema():
    """The record without its rows: what the assemble stage reads of every record (the rows are
    decoded by the rows stage, in parallel; Avro schema resolution skips them)."""
    named: dict = {}
    fastavro.parse_schema(avro_schema("change_record"), named_schemas=named)
    head = dict(avro_schema("snapshot_record"))
    head["fields"] = [f for f in head["fields"] if f["name"] != "rows"]
    return fastavro.parse_schema(head, named_schemas=named)


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
    rows: list[list[dict]] | None = field(default=None, compare=False, repr=False)
    row_count: int | None = None

    @property
    def qualified_table(self) -> str:
        return f"{self.database}.{self.table}"

    @property
    def trx_id(self) -> str:
        """The trx_id of the table's change records: one per (run, table), so row ids differ
        between a run and its re-snapshot (libs/replay/lineage.make_row_id)."""
        return f"{TRX_PREFIX}{self.snapshot_id}:{self.database}.{self.table}"

    def encode(self) -> bytes:
        out = io.BytesIO()
        # not dataclasses.asdict: it deep-copies every row dict (20x the cost of the encoding)
        data = {f.name: getattr(self, f.name) for f in fields(self)}
        data["tables"] = list(self.tables) if self.tables is not None else None
        fastavro.schemaless_writer(out, _schema(), data)
        return out.getvalue()

    @classmethod
    def decode(cls, raw: bytes, *, head_only: bool = False) -> "SnapshotRecord":
        """Raises ValueError when `raw` is not a snapshot record. `head_only`: without its rows."""
        try:
            if head_only:
                data = fastavro.schemaless_reader(io.BytesIO(raw), _schema(), _head_schema())
                data["rows"] = None
            else:
                data = fastavro.schemaless_reader(io.BytesIO(raw), _schema())
        except Exception as exc:  # noqa: BLE001 - fastavro raises several types for bad bytes
            raise ValueError(f"not a snapshot record ({type(exc).__name__}: {exc})") from None
        ts = data["snapshot_ts"]
        if isinstance(ts, dt.datetime):  # fastavro reads timestamp-micros as an aware datetime
            data["snapshot_ts"] = (ts - dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)) // dt.timedelta(microseconds=1)
        if data["tables"] is not None:
            data["tables"] = tuple(data["tables"])
        return cls(**data)


def is_snapshot_trx(trx_id: str) -> bool:
    return trx_id.startswith(TRX_PREFIX)

"""Hand-built change records (libs/contracts/change.Change) for the replay unit tests and the
Spark apply tests alike: one builder, so both tiers feed their code the same shape of record.
Pure Python (no Spark), so the unit tier can import it."""

from __future__ import annotations

import datetime as dt
from typing import Any, Mapping

from libs.contracts.change import Change, op_of
from libs.stages.assembly import decode_segment

COMMIT_TS = dt.datetime(2024, 5, 6, 7, 8, 9, tzinfo=dt.timezone.utc)


def column_value(ordinal: int, name: str | None, value: Any) -> dict[str, Any]:
    text = binary = None
    if isinstance(value, (bytes, bytearray)):
        binary = bytes(value)
    elif value is not None:
        text = str(value)
    return {"ordinal": ordinal, "name": name, "type_code": 3, "text": text, "binary": binary}


class Source:
    """A master table (column order = ordinals); every change gets a new transaction unless
    `trx` is given. Positions and commit time grow with each transaction (transaction n commits
    at COMMIT_TS + n seconds), so commit order = creation order. names=False leaves the column
    names out of the images, as when the Table_map carries none (binlog_row_metadata=MINIMAL)."""

    def __init__(self, database: str, table: str, columns: list[str], *, source: str = "src1",
                 names: bool = True):
        self.database, self.table, self.columns, self.source = database, table, columns, source
        self.names = names
        self.trx = 0

    def image(self, values: Mapping[str, Any] | None):
        if values is None:
            return None
        return [column_value(self.columns.index(n), n if self.names else None, v) for n, v in values.items()]

    def change(self, op: str, before=None, after=None, *, seq: int = 0, trx: int | None = None,
               statement: str | None = None, table: str | None = None) -> Change:
        if trx is None:
            self.trx += 1
            trx = self.trx
        return Change(
            source=self.source, trx_id=f"0-1-{trx}", gtid=f"0-1-{trx}", xid=trx, server_id=1,
            commit_ts=COMMIT_TS + dt.timedelta(seconds=trx), trx_file="mdb-bin.000002",
            trx_end_pos=1000 + trx * 100, change_seq=seq, database=self.database,
            table=self.table if table is None else table, op=op_of(op),
            before=self.image(before), after=self.image(after), statement=statement,
            binlog_file="mdb-bin.000002", binlog_pos=950 + trx * 100 + seq,
        )

    def insert(self, after, **kw):
        return self.change("insert", None, after, **kw)

    def update(self, before, after, **kw):
        return self.change("update", before, after, **kw)

    def delete(self, before, **kw):
        return self.change("delete", before, None, **kw)


def change_of(op: str, **fields: Any) -> Change:
    """A Change with placeholder identity and position, for tests that look at a few fields."""
    base = dict(source="src1", trx_id="0-1-1", gtid="0-1-1", xid=1, server_id=1, commit_ts=COMMIT_TS,
                trx_file="mdb-bin.000002", trx_end_pos=1100, change_seq=0, database="d", table="t",
                before=None, after=None, statement=None, binlog_file="mdb-bin.000002", binlog_pos=1050)
    return Change(**{**base, **fields, "op": op_of(op)})


def decoded(records, hints=None) -> list[Change]:
    """The apply stage's changes of assembled records (libs/stages/assembly.py's segments,
    decoded as the rows stage decodes them)."""
    return [Change.of(c) for r in records if r["kind"] == "segment" for c in decode_segment(r, hints=hints)]


def as_change(change: Change | Mapping[str, Any]) -> Change:
    """A test batch's element as the apply stage holds it (batches mix built Changes and wire
    records, such as libs/snapshot/changes.change_records')."""
    return change if isinstance(change, Change) else Change.of(change)


def truncates_of(batch) -> list[Change]:
    """What pipelines/stages/sink.py hands DeltaApplier.prepare_batch: the batch's truncates."""
    return [c for c in map(as_change, batch) if c.op == "truncate"]

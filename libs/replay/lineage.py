"""Lineage (one struct, declared once in schemas/lineage.avsc) and the change-log entry.

Every row the replay writes carries the Lineage of the change that last wrote it (column
`_lineage`), plus its hidden identity `_row_id`. Every change yields one ChangeLogEntry.
"""

from __future__ import annotations

import datetime as dt
import functools
import hashlib
import json
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from libs.contracts.change import Change

ROW_ID_COLUMN = "_row_id"
"""Hidden row identity: distinguishes identical rows of a keyless table; MERGE matches on it."""
LINEAGE_COLUMN = "_lineage"
"""Struct column holding the Lineage of the last change that wrote the row."""

_EPOCH = dt.datetime(1970, 1, 1)


def make_row_id(source: str, trx_id: str, change_seq: int) -> str:
    """Deterministic identity of a row inserted by change (source, trx_id, change_seq).

    The same change always yields the same id, so re-running a batch is idempotent; 32 hex
    digits of SHA-256 over the JSON triple (no separator ambiguity: trx ids contain ':' and '-').
    Rows loaded by other means (initial snapshot) may use any other unique string.
    """
    digest = hashlib.sha256(json.dumps([source, trx_id, change_seq]).encode("utf-8"))
    return digest.hexdigest()[:32]


def make_row_ids(sources: Sequence[str], trx_ids: Sequence[str], change_seqs: Sequence[int]) -> list[str]:
    """make_row_id of many changes at once: the same JSON text, each distinct string encoded once
    (a transaction's changes share their source and trx_id)."""
    text = functools.lru_cache(maxsize=4096)(json.dumps)
    sha = hashlib.sha256
    return [sha(f"[{text(s)}, {text(t)}, {int(q)}]".encode("utf-8")).hexdigest()[:32]
            for s, t, q in zip(sources, trx_ids, change_seqs)]


def to_utc_naive(value: Any) -> dt.datetime:
    """commit_ts as a naive UTC datetime: from epoch microseconds (Avro timestamp-micros raw)
    or a datetime (fastavro decodes the logical type to an aware UTC datetime)."""
    if isinstance(value, dt.datetime):
        if value.tzinfo is not None:
            value = value.astimezone(dt.timezone.utc).replace(tzinfo=None)
        return value
    return _EPOCH + dt.timedelta(microseconds=int(value))


@dataclass(frozen=True)
class Lineage:
    """Which change last wrote a row. Fields = schemas/lineage.avsc record Lineage."""

    source: str
    trx_id: str
    gtid: str | None
    server_id: int
    commit_ts: dt.datetime
    binlog_file: str
    binlog_pos: int
    change_seq: int
    operation: str
    statement: str | None

    @classmethod
    def of_change(cls, change: Change) -> "Lineage":
        return cls(
            source=change.source, trx_id=change.trx_id, gtid=change.gtid,
            server_id=int(change.server_id), commit_ts=to_utc_naive(change.commit_ts),
            binlog_file=change.binlog_file, binlog_pos=int(change.binlog_pos),
            change_seq=int(change.change_seq), operation=change.op, statement=change.statement,
        )

    def to_dict(self) -> dict[str, Any]:
        # flat fields of immutable values: dataclasses.asdict's recursive deep copy cost
        # ~0.3 ms per change in the apply stage (bench/README.md)
        return {name: getattr(self, name) for name in self.__dataclass_fields__}

    def where(self) -> str:
        """'GTID 0-1-5 at mdb-bin.000002:1234' for messages."""
        ident = f"GTID {self.gtid}" if self.gtid else f"trx {self.trx_id}"
        return f"{ident} at {self.binlog_file}:{self.binlog_pos}"


@dataclass(frozen=True)
class ChangeLogEntry:
    """One change as replayed. Fields = schemas/lineage.avsc record ChangeLogEntry."""

    row_id: str | None
    database: str
    table: str
    delta_table: str
    op: str
    outcome: str
    key: Mapping[str, str | None] | None
    before: tuple[Mapping[str, Any], ...] | None
    after: tuple[Mapping[str, Any], ...] | None
    lineage: Lineage

    def to_dict(self) -> dict[str, Any]:
        return {
            "row_id": self.row_id, "database": self.database, "table": self.table,
            "delta_table": self.delta_table, "op": self.op, "outcome": self.outcome,
            "key": dict(self.key) if self.key is not None else None,
            "before": [dict(c) for c in self.before] if self.before is not None else None,
            "after": [dict(c) for c in self.after] if self.after is not None else None,
            "lineage": self.lineage.to_dict(),
        }


def canonical_text(value: Any) -> str | None:
    """Text of a typed value for change-log keys (bytes as hex, datetimes ISO-8601)."""
    if value is None:
        return None
    if isinstance(value, (bytes, bytearray)):
        return bytes(value).hex()
    if isinstance(value, (dt.datetime, dt.date)):
        return value.isoformat()
    return str(value)

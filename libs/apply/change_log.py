"""The change-log rows of one batch as one Arrow table (`_cdc_change_log`: schemas/lineage.avsc
ChangeLogEntry + batch_id), built from the batch's change records as the applier collected them.

Why not from the entries' dicts: an entry's database, table, op, images, statement and lineage
are those of its change record (libs/replay/engine.py `_entry`, libs/apply/plan.py
`undeclared`), and the applier already holds those records as one Arrow table. One `take` by
row index copies them; turning every entry into nested dicts and back (ChangeLogEntry.to_dict,
Table.from_pylist) cost ~17 us per entry, this ~5 us (bench/collect_cost.py, bench/README.md
"Session 6"). Only what the replay decided (row_id, delta_table, outcome, key) comes from Python.

`changes` holds the change_record columns with commit_ts as epoch microseconds (the applier's
collect); `schema` is the change log's Arrow schema. The result equals
`Table.from_pylist([{**e.to_dict(), "batch_id": batch_id} for e in entries], schema)`.
Entries are paired with their change by row index, not by (source, trx_id, change_seq): the
pairing needs no uniqueness of that identity in the batch, and it is checked.
"""
from __future__ import annotations

from typing import Mapping, Sequence

import pyarrow as pa

from libs.contracts.arrow_rows import column_values
from libs.replay.lineage import ChangeLogEntry

_COPIED = ("database", "table", "op", "before", "after")  # change_record columns of the same name
# lineage struct field -> the change_record column it copies
_LINEAGE = {"source": "source", "trx_id": "trx_id", "gtid": "gtid", "server_id": "server_id",
            "commit_ts": "commit_ts", "binlog_file": "binlog_file", "binlog_pos": "binlog_pos",
            "change_seq": "change_seq", "operation": "op", "statement": "statement"}


def change_log_table(changes: pa.Table, entries: Sequence[ChangeLogEntry], rows: Sequence[int], batch_id: int,
                     schema: pa.Schema) -> pa.Table:
    """One change-log row per entry, in the entries' order; rows[k] is the row of `changes`
    holding entry k's change (the replay logs one entry per change, in the order given:
    libs/replay/engine.py). Raises ValueError when an entry's lineage does not name its row."""
    if len(rows) != len(entries):
        raise ValueError(f"{len(entries)} change-log entries but {len(rows)} change rows")
    taken = changes.take(pa.array(rows, pa.int64())).combine_chunks()
    _check_pairing(taken, entries)
    decided = {name: [getattr(e, name) for e in entries] for name in ("row_id", "delta_table", "outcome")}
    decided["key"] = [e.key for e in entries]
    return _table(taken, decided, batch_id, schema)


def decided_change_log(changes: pa.Table, rows: Sequence[int], decided: Mapping[str, Sequence], batch_id: int,
                       schema: pa.Schema) -> pa.Table:
    """The same from what was decided per change as lists (row_id, delta_table, outcome, key:
    libs/apply/fold.py's), rows[k] the change of the k-th values."""
    return _table(changes.take(pa.array(rows, pa.int64())).combine_chunks(), decided, batch_id, schema)


def _table(taken: pa.Table, decided: Mapping[str, Sequence], batch_id: int, schema: pa.Schema) -> pa.Table:
    def copied(name: str, kind: pa.DataType) -> pa.Array:
        column = taken.column(name)
        array = column.chunk(0) if column.num_chunks else pa.array([], column.type)
        return array.cast(kind)

    columns: list[pa.Array] = []
    for field in schema:
        name, kind = field.name, field.type
        if name in _COPIED:
            columns.append(copied(name, kind))
        elif name == "lineage":
            columns.append(pa.StructArray.from_arrays(
                [copied(_LINEAGE[f.name], f.type) for f in kind], fields=list(kind)))
        elif name == "key":
            columns.append(pa.array([None if k is None else list(k.items()) for k in decided["key"]], kind))
        elif name == "batch_id":
            columns.append(pa.array([int(batch_id)] * taken.num_rows, kind))
        else:  # row_id, delta_table, outcome: the replay's own
            columns.append(pa.array(decided[name], kind))
    return pa.Table.from_arrays(columns, schema=schema)


def _check_pairing(taken: pa.Table, entries: Sequence[ChangeLogEntry]) -> None:
    """Each entry's lineage names the change it was paired with (source, trx, change_seq)."""
    for name, values in (("source", [e.lineage.source for e in entries]),
                         ("trx_id", [e.lineage.trx_id for e in entries]),
                         ("change_seq", [e.lineage.change_seq for e in entries])):
        paired = column_values(taken.column(name))
        if paired != values:
            k = next(i for i, (a, b) in enumerate(zip(paired, values)) if a != b)
            raise ValueError(f"change-log entry {k} ({entries[k].lineage.where()}, {name} {values[k]!r}) "
                             f"paired with a change whose {name} is {paired[k]!r}")

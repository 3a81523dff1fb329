"""The fold (libs/apply/fold.py) and the exact replay side by side, without Spark: the same
change records and stored rows through `fold` + the replay of what it leaves, and through the
replay alone; what each leaves in the table and the change log, comparable."""
from __future__ import annotations

from operator import attrgetter

import datetime as dt
import re
from typing import Any, Mapping, Sequence

import pyarrow as pa

from libs.apply.fold import Folded, fold
from libs.replay import ROW_ID_COLUMN, replay
from libs.replay.lineage import LINEAGE_COLUMN, Lineage
from libs.targets.model import Target

_SIMPLE = {"int": pa.int32(), "bigint": pa.int64(), "smallint": pa.int16(), "tinyint": pa.int8(),
           "string": pa.string(), "binary": pa.binary(), "double": pa.float64(), "float": pa.float32(),
           "date": pa.date32(), "timestamp": pa.timestamp("us", tz="UTC"),
           "timestamp_ntz": pa.timestamp("us"), "boolean": pa.bool_()}
LINEAGE = pa.struct([("source", pa.string()), ("trx_id", pa.string()), ("gtid", pa.string()),
                     ("server_id", pa.int64()), ("commit_ts", pa.timestamp("us", tz="UTC")),
                     ("binlog_file", pa.string()), ("binlog_pos", pa.int64()), ("change_seq", pa.int64()),
                     ("operation", pa.string()), ("statement", pa.string())])
_VALUE = pa.struct([("ordinal", pa.int32()), ("name", pa.string()), ("type_code", pa.int32()),
                    ("text", pa.string()), ("binary", pa.binary())])
CHANGES = pa.schema([("source", pa.string()), ("trx_id", pa.string()),
                     ("gtid", pa.string()), ("xid", pa.int64()),
                     ("server_id", pa.int64()), ("commit_ts", pa.int64()), ("trx_file", pa.string()),
                     ("trx_end_pos", pa.int64()), ("change_seq", pa.int64()), ("database", pa.string()),
                     ("table", pa.string()), ("op", pa.string()), ("before", pa.list_(_VALUE)),
                     ("after", pa.list_(_VALUE)), ("statement", pa.string()), ("binlog_file", pa.string()),
                     ("binlog_pos", pa.int64())])


def arrow_type(spark_type: str) -> pa.DataType:
    decimal = re.fullmatch(r"decimal\((\d+),\s*(\d+)\)", spark_type)
    return pa.decimal128(int(decimal[1]), int(decimal[2])) if decimal else _SIMPLE[spark_type]


def row_schema(target: Target) -> pa.Schema:
    return pa.schema([*((c.name, arrow_type(c.spark_type)) for c in target.columns),
                      (ROW_ID_COLUMN, pa.string()), (LINEAGE_COLUMN, LINEAGE)])


def _micros(ts: dt.datetime | int) -> int:
    if isinstance(ts, int):  # decoded records carry epoch micros already
        return ts
    return (ts - dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)) // dt.timedelta(microseconds=1)


def changes_table(changes: Sequence[Mapping[str, Any]]) -> pa.Table:
    return pa.Table.from_pylist([{**c.to_record(), "commit_ts": _micros(c.commit_ts)} for c in changes],
                                schema=CHANGES)


def stored_table(target: Target, stored: Sequence[Mapping[str, Any]]) -> pa.Table:
    schema = row_schema(target)
    return pa.Table.from_pylist([{k: r[k] for k in (*target.column_names, ROW_ID_COLUMN)} for r in stored],
                                schema=pa.schema([schema.field(n)
                                                  for n in (*target.column_names, ROW_ID_COLUMN)]))


def _naive(value):
    if isinstance(value, dt.datetime) and value.tzinfo is not None:
        return value.astimezone(dt.timezone.utc).replace(tzinfo=None)
    return value


def _row(record: Mapping[str, Any]) -> dict[str, Any]:
    row = {k: _naive(v) for k, v in record.items() if k != LINEAGE_COLUMN}
    lineage = record.get(LINEAGE_COLUMN)
    if lineage is not None:
        row[LINEAGE_COLUMN] = tuple(sorted((k, _naive(v)) for k, v in dict(lineage).items()))
    return row


def _log_entry(row_id, outcome, key, lineage: Mapping[str, Any]) -> tuple:
    return (lineage["source"], lineage["trx_id"], lineage["change_seq"], row_id, outcome,
            tuple(sorted((key or {}).items())))


def by_replay(target: Target, changes, stored, mode: str = "strict"):
    """(table rows by _row_id, change-log entries, deleted row -> its deleting lineage) the
    replay alone gives."""
    changes = sorted(changes, key=attrgetter("order"))
    result = replay(target, stored, changes, mode=mode)
    table = {r[ROW_ID_COLUMN]: _row(r) for r in stored}
    for d in result.deletes:
        table.pop(d.row_id)
    for u in result.upserts:
        table[u.row_id] = _row(u.to_record())
    log = sorted(_log_entry(e.row_id, e.outcome, e.key, e.lineage.to_dict()) for e in result.change_log)
    return table, log, _deleted(result)


def _deleted(result) -> dict[str, tuple]:
    return {d.row_id: _row({LINEAGE_COLUMN: d.lineage.to_dict()})[LINEAGE_COLUMN] for d in result.deletes}


def by_fold(target: Target, changes, stored, mode: str = "strict") -> tuple[dict, list, dict, Folded]:
    """The same through fold + the replay of what the fold leaves."""
    changes = sorted(changes, key=attrgetter("order"))
    folded = fold(target, changes_table(changes), stored_table(target, stored), row_schema(target))
    rest = replay(target, [stored[i] for i in folded.rest_stored],
                  [changes[i] for i in folded.rest], mode=mode)
    table = {r[ROW_ID_COLUMN]: _row(r) for r in stored}
    for d in [*folded.deletes.to_pylist(), *({ROW_ID_COLUMN: d.row_id} for d in rest.deletes)]:
        table.pop(d[ROW_ID_COLUMN])
    for u in [*folded.upserts.to_pylist(), *(u.to_record() for u in rest.upserts)]:
        table[u[ROW_ID_COLUMN]] = _row(u)
    log = [_log_entry(row_id, "applied", key, Lineage.of_change(changes[at]).to_dict())
           for at, row_id, key in zip(folded.log.at.tolist(), folded.log.row_ids, folded.log.keys)]
    log += [_log_entry(e.row_id, e.outcome, e.key, e.lineage.to_dict()) for e in rest.change_log]
    deleted = {d[ROW_ID_COLUMN]: _row(d)[LINEAGE_COLUMN] for d in folded.deletes.to_pylist()}
    return table, sorted(log), {**deleted, **_deleted(rest)}, folded

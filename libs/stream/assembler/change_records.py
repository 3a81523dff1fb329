"""COMPLETE transaction -> change records (schemas/change_record.avsc), one per row change or
per statement, in commit order with a gap-free change_seq."""
from __future__ import annotations

import re
from typing import Iterator

from libs.binlog.charsets import decode_text
from libs.binlog.constants import STMT_END_F, ColumnType
from libs.binlog import RowsQuery, TransactionPayload
from libs.binlog.shapes import is_rows, is_table_map, undecoded, undecoded_error
from libs.stream.boundary import QueryKind, query_kind, query_text

from libs.targets.decoding import RowImageMismatch
from libs.targets.decoding import DecodeHints

from libs.stream.assembler.model import Frame, Transaction
from libs.stream.assembler.values import column_value

ROWS_PER_EVENT = 1 << 20  # change_seq = event_index * 2^20 + row index (change_record.avsc)

_LEADING_COMMENTS = re.compile(r"^\s*(/\*.*?\*/\s*)*", re.DOTALL)
_DML_KEYWORDS = frozenset({"INSERT", "REPLACE", "UPDATE", "DELETE", "LOAD", "CALL", "DO", "WITH", "SELECT"})
_NAME = r"(`(?:[^`]|``)+`|[\w$]+)(?:\s*\.\s*(`(?:[^`]|``)+`|[\w$]+))?"
_TARGETS = [re.compile(p, re.IGNORECASE | re.DOTALL) for p in (
    r"(?:INSERT|REPLACE)(?:\s+(?:LOW_PRIORITY|DELAYED|HIGH_PRIORITY|IGNORE))*\s+(?:INTO\s+)?" + _NAME,
    r"UPDATE(?:\s+(?:LOW_PRIORITY|IGNORE))*\s+" + _NAME,
    r"DELETE(?:\s+(?:LOW_PRIORITY|QUICK|IGNORE))*\s+FROM\s+" + _NAME,
    r"LOAD\s+(?:DATA|XML)\b.*?\bINTO\s+TABLE\s+" + _NAME,
    r"(?:CREATE|ALTER|DROP|RENAME)\s+(?:(?:TEMPORARY|ONLINE|IGNORE)\s+)?(?:OR\s+REPLACE\s+)?TABLE\s+"
    r"(?:IF\s+(?:NOT\s+)?EXISTS\s+)?" + _NAME,
    r"TRUNCATE\s+(?:TABLE\s+)?" + _NAME,
)]


def to_change_records(trx: Transaction, hints: DecodeHints | None = None) -> list[dict]:
    return list(iter_change_records(trx, hints))


def iter_change_records(trx: Transaction, hints: DecodeHints | None = None) -> Iterator[dict]:
    """Stream the records (reads spilled chunks one at a time). change_seq is the frame's index in
    the payload * 2^20 + the row's index in its event (schema doc). Rows take the Rows_query /
    Annotate_rows text before them as `statement` (WL#4033) until their statement ends
    (STMT_END_F, when the rows record carries `flags`) or another statement starts. `hints`: what
    the target declarations know that the Table_maps may not say (libs/targets/decoding.py)."""
    base = {"source": trx.source, "trx_id": trx.trx_id, "gtid": trx.gtid, "xid": trx.xid,
            "server_id": trx.server_id, "commit_ts": trx.commit_ts_micros, "trx_file": trx.file,
            "trx_end_pos": trx.end_pos}
    table_maps, statement = {}, None
    for event_index, frame in enumerate(trx.payload):
        seq = event_index * ROWS_PER_EVENT
        for event in inner_events(frame.event):
            records, statement = _event_records(base, frame, event, seq, table_maps, statement, hints)
            for rec in records:
                yield rec
                seq += 1


def inner_events(event) -> tuple:
    """The events a frame carries: itself, or for a Transaction_payload (MySQL 8.0.20+
    compressed transaction) its inner events - BEGIN, Table_map, rows, Xid - in order. Their
    records keep the payload event's file position."""
    body = event.body
    return body.events if isinstance(body, TransactionPayload) else (event,)


def _event_records(base: dict, frame: Frame, event, seq: int, table_maps: dict,
                   statement: str | None, hints: DecodeHints | None) -> tuple[list[dict], str | None]:
    """Records of one event (change_seq from `seq` on) and the statement in force after it."""
    body = event.body
    if is_table_map(event):
        table_maps[body.table_id] = body
        return [], statement
    if isinstance(body, RowsQuery):
        return [], body.text
    if undecoded(event):  # never a row change to guess at: the transaction is quarantined
        raise undecoded_error(event, file=frame.file, pos=frame.pos, source=base["source"])
    if is_rows(event):
        table_map = table_maps.get(body.table_id)
        if table_map is None:
            raise ValueError(f"rows event for table id {body.table_id} without its Table_map "
                             f"(source {base['source']}, file {frame.file}, pos {frame.pos})")
        readers = _column_readers(table_map, hints, base["source"], frame)
        out = [{**base, "change_seq": seq + i, "database": table_map.database, "table": table_map.table,
                "op": body.kind, "before": _image(readers, change.before),
                "after": _image(readers, change.after), "statement": statement,
                "binlog_file": frame.file, "binlog_pos": frame.pos}
               for i, change in enumerate(body.rows)]
        return out, None if getattr(body, "flags", 0) & STMT_END_F else statement
    sql = query_text(event)
    if sql is None or query_kind(sql) is not QueryKind.STATEMENT:
        # BEGIN / SAVEPOINT / ROLLBACK TO: transaction control, not a change (it still ends the
        # statement before it); Intvar / Rand / User_var / load blocks: context, no record.
        return [], None if sql is not None else statement
    database, table = statement_target(sql, getattr(body, "db", "") or "")
    return [{**base, "change_seq": seq, "database": database, "table": table, "op": statement_op(sql),
             "before": None, "after": None, "statement": sql, "binlog_file": frame.file,
             "binlog_pos": frame.pos}], None


def is_ddl(sql: str) -> bool:
    """A Query event's text that changes a schema (not transaction control, not DML)."""
    return query_kind(sql) is QueryKind.STATEMENT and statement_op(sql) == "ddl"


def statement_op(sql: str) -> str:
    """'statement' for statement-format DML, 'ddl' for everything else."""
    words = _LEADING_COMMENTS.sub("", sql).split(None, 1)
    return "statement" if words and words[0].upper() in _DML_KEYWORDS else "ddl"


def statement_target(sql: str, default_db: str) -> tuple[str, str]:
    """(database, table) a statement names first, best effort; table '' when not found."""
    text = _LEADING_COMMENTS.sub("", sql)
    for pattern in _TARGETS:
        match = pattern.match(text)
        if match:
            first, second = _unquote(match.group(1)), match.group(2)
            return (first, _unquote(second)) if second else (default_db, first)
    return default_db, ""


def _unquote(name: str) -> str:
    return name[1:-1].replace("``", "`") if name.startswith("`") else name


def _column_readers(table_map, hints: DecodeHints | None, source: str, frame: Frame) -> list[tuple]:
    """Per column (name, type_code, charset, labels, family): the Table_map's optional metadata
    where logged, else the schema history's version at the event's position, else the
    declaration's hint (libs/targets/decoding.py precedence). A Table_map without names that does
    not fit that version raises RowImageMismatch: its rows are never read by guess."""
    count = len(table_map.column_types)
    names = getattr(table_map, "column_names", None)
    layout = None
    if hints is not None and names is None and frame.file is not None:
        layout = hints.layout_at(source, table_map.database, table_map.table, frame.file, frame.pos)
    if layout is not None:
        reason = layout.mismatch(table_map.column_types)
        if reason is not None:
            raise RowImageMismatch(f"source {source}, {frame.file}:{frame.pos}: {reason}")
        names, declared = layout.names, layout.hints
    else:
        declared = hints.image_hints(table_map.database, table_map.table, names, count) if hints else None
    charsets = getattr(table_map, "column_charsets", None)
    label_charsets = getattr(table_map, "enum_set_column_charsets", None)
    logged_labels = {ColumnType.ENUM: getattr(table_map, "enum_values", None),
                     ColumnType.SET: getattr(table_map, "set_values", None)}
    readers = []
    for i, type_code in enumerate(table_map.column_types):
        hint = declared[i] if declared else None
        charset = _at(charsets, i) if charsets is not None else (hint.charset if hint else None)
        labels = None
        if type_code in logged_labels:
            raw = _at(logged_labels[type_code], i)
            label_charset = _at(label_charsets, i) or charset or "utf8mb4"
            if raw is not None:
                labels = tuple(decode_text(bytes(label), label_charset) for label in raw)
            elif hint is not None and hint.family in ("enum", "set"):
                labels = hint.labels
        readers.append((_at(names, i), type_code, charset, labels, hint.family if hint else None))
    return readers


def _image(readers: list[tuple], columns: dict | None) -> list[dict] | None:
    if columns is None:
        return None
    return [column_value(i, *readers[i][:2], value, *readers[i][2:]) for i, value in sorted(columns.items())]


def _at(values, ordinal: int):
    if values is None:
        return None
    if isinstance(values, dict):
        return values.get(ordinal)
    return values[ordinal] if ordinal < len(values) else None

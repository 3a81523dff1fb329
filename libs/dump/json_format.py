"""`binlog-dump --json`: one JSON object per event, one per line (JSON Lines, ASCII only).

Schema (keys always present unless marked "when"):

    file          str    the file name as given ("-" is reported as "stdin")
    pos           int    start offset of the event in the file (from the byte stream)
    end_log_pos   int    header log_pos as written (0 inside MariaDB 11.4+ transactions)
    timestamp     int    header timestamp, seconds since the epoch
    type_code     int    real event type (pre-GA 5.1 numbering already mapped)
    type_name     str    libs.binlog.constants.EventType name, UNKNOWN_<n> otherwise
    server_id     int
    flags         int    header flags
    boundary      str    WL#4162 boundary type: "Ignore Boundary", "Self Contained",
                         "Start Transaction", "Inside Transaction", "End Transaction",
                         "Rejected" (the parser refused it, see boundary_warning)
    boundary_source str  "marker" (header marker bits) | "parser" (classified by type)
    boundary_warning str|null  the seed's "Unable to change boundary parser from X to Y"
    ignorable     bool   unknown type with LOG_EVENT_IGNORABLE_F (WL#4033): skipped
    dummy         bool   MariaDB dummy placeholder (Query/User_var): never applied
    checksum_ok   bool|null  null when the stream carries no CRC32
  event fields, present when the event has them:
    query, db     str    Query text and default database (query_hex instead of query when the
                         text is not UTF-8)
    xid           int    Xid event, or the MariaDB Query status variable xid
    gtid          str    MySQL "uuid:n" / MariaDB "domain-server-seq"
    rows_query    str    Rows_query (29) / Annotate_rows (160) text (rows_query_hex if not UTF-8)
    table_map     obj    {table_id, database, table, column_types: [int], column_metas: [int],
                          nullable: [bool], column_names: [str]|null}
    rows          obj    {kind: insert|update|delete, table_id, database, table, flags,
                          changes: [{before: map|null, after: map|null}],
                          hex_columns: [1-based indexes whose values are hex strings]}
                         each map: 1-based column index (as a JSON key) -> value, holding only
                         the columns present in that image (WL#5092); JSON null = SQL NULL
    next_file     str    Rotate / Binlog_checkpoint file name
    dummy_replaced_type  int|null  for dummies: the type the placeholder replaced
    undecoded     str    a known event whose body is kept as bytes (libs/binlog/shapes.py):
                         why; it is never applied

Values: integers as numbers (signedness from the Table_map when logged), FLOAT/DOUBLE as
numbers (inf/NaN, which no server stores and JSON cannot spell, is a malformed error, in
VECTOR elements too), DECIMAL as strings ("-5.50"), DATE "YYYY-MM-DD", DATETIME ISO-8601
"YYYY-MM-DDTHH:MM:SS[.ffffff]" and TIME "[-]HH:MM:SS[.ffffff]" (zero/partial dates such as
"0000-00-00" are kept as the server's text), TIMESTAMP as epoch seconds with fraction (a number;
exact to the microsecond up to 2038), YEAR as a number, CHAR/VARCHAR/TEXT as text when the
column charset is known (Table_map charset metadata) and decodes, else lowercase hex, BLOB/
BINARY/GEOMETRY as lowercase hex, JSON as JSON, ENUM (1-based index), SET (bit mask) and BIT as
integers, VECTOR as a list of numbers, MySQL partial JSON updates as a list of {operation,
path, value}.
"""
from __future__ import annotations

import json
import math
from typing import Iterable, Iterator

from libs.binlog.constants import ColumnType as T
from libs.binlog.errors import BinlogError, MalformedError, UnsupportedError
from libs.binlog import (BinlogCheckpoint, JsonDiff, MariaGtid, MysqlGtid, Query, Rotate, Rows,
                         RowsQuery, TableMap, Xid)
from libs.binlog.json_binary import JsonText
from libs.binlog.shapes import is_rows, undecoded
from libs.binlog.values import render_text

from libs.dump.walk import DumpItem

TEXT_TYPES = frozenset((T.STRING, T.VAR_STRING, T.VARCHAR, T.BLOB, T.TINY_BLOB, T.MEDIUM_BLOB,
                        T.LONG_BLOB))
DATETIME_TYPES = frozenset((T.DATETIME, T.DATETIME2))
TIMESTAMP_TYPES = frozenset((T.TIMESTAMP, T.TIMESTAMP2))


def _text_or_hex(raw: bytes, key: str) -> dict:
    try:
        return {key: raw.decode("utf-8")}
    except UnicodeDecodeError:
        return {key + "_hex": raw.hex()}


def _timestamp(text: str):
    return float(text) if "." in text else int(text)


def json_value(value, column_type: int, collation: int | None):
    """(JSON value, rendered as hex?) for one decoded column value."""
    if value is None:
        return None, False
    if isinstance(value, JsonText):
        return json.loads(str(value)), False
    if isinstance(value, tuple) and value and isinstance(value[0], JsonDiff):
        return [{"operation": d.operation, "path": d.path,
                 "value": None if d.value is None else json.loads(str(d.value))} for d in value], False
    if isinstance(value, (bytes, bytearray)):
        if column_type in TEXT_TYPES and collation is not None:
            try:
                text = render_text(bytes(value), collation)
                if isinstance(text, str):
                    return text, False
            except (UnsupportedError, UnicodeDecodeError):
                pass
        return bytes(value).hex(), True
    if column_type in TIMESTAMP_TYPES:
        return _timestamp(value), False
    if column_type in DATETIME_TYPES:
        return value.replace(" ", "T", 1), False
    if isinstance(value, float):
        return _finite(value, "FLOAT/DOUBLE"), False
    if isinstance(value, (int, str)):
        return value, False
    if isinstance(value, tuple):  # VECTOR
        return [_finite(v, "VECTOR element") for v in value], False
    return format(value, "f"), False  # decimal.Decimal: plain notation, never "0E-9"


def _finite(value: float, what: str) -> float:
    # No server stores inf/NaN in FLOAT/DOUBLE or VECTOR, and JSON has no spelling for them
    if not math.isfinite(value):
        raise MalformedError(f"{what} value {value!r}: not a value MySQL can store")
    return value


def _collation(tm: TableMap, ordinal: int) -> int | None:
    if tm.column_charsets is not None:
        return tm.column_charsets[ordinal]
    return None


def rows_json(body: Rows, tm: TableMap) -> dict:
    hex_columns: set[int] = set()

    def image(img):
        if img is None:
            return None
        out = {}
        for ordinal, value in img.items():
            out[str(ordinal + 1)], is_hex = json_value(value, tm.column_types[ordinal],
                                                       _collation(tm, ordinal))
            if is_hex:
                hex_columns.add(ordinal + 1)
        return out

    changes = [{"before": image(c.before), "after": image(c.after)} for c in body.rows]
    return {"kind": body.kind, "table_id": body.table_id, "database": tm.database,
            "table": tm.table, "flags": body.flags, "changes": changes,
            "hex_columns": sorted(hex_columns)}


def _table_map_json(tm: TableMap) -> dict:
    return {"table_id": tm.table_id, "database": tm.database, "table": tm.table,
            "column_types": list(tm.column_types), "column_metas": list(tm.column_metas),
            "nullable": list(tm.nullable),
            "column_names": list(tm.column_names) if tm.column_names is not None else None}


def event_fields(item: DumpItem) -> dict:
    """The event-specific keys of the schema above."""
    body = item.event.body
    if item.dummy:
        return {"dummy_replaced_type": body.replaced_type}
    if isinstance(body, Query):
        out = {"db": body.db, **_text_or_hex(body.query, "query")}
        if "xid" in body.status:
            out["xid"] = body.status["xid"]
        return out
    if isinstance(body, Xid):
        return {"xid": body.xid}
    if isinstance(body, (MariaGtid, MysqlGtid)):
        return {"gtid": body.gtid}
    if isinstance(body, RowsQuery):
        raw = body.raw if item.event.type_code != 29 else body.raw[1:]
        return _text_or_hex(raw, "rows_query")
    if isinstance(body, TableMap):
        return {"table_map": _table_map_json(body)}
    if undecoded(item.event):
        return {"undecoded": undecoded(item.event)}
    if is_rows(item.event) and item.table_map is not None:
        return {"rows": rows_json(body, item.table_map)}
    if isinstance(body, Rotate):
        return {"next_file": body.next_file}
    if isinstance(body, BinlogCheckpoint):
        return {"next_file": body.file}
    return {}


def event_json(item: DumpItem) -> dict:
    e, h = item.event, item.event.header
    out = {
        "file": e.file if e.file != "-" else "stdin", "pos": e.pos, "end_log_pos": h.log_pos,
        "timestamp": h.timestamp, "type_code": h.type_code, "type_name": e.type_name,
        "server_id": h.server_id, "flags": h.flags, "boundary": item.boundary_name,
        "boundary_source": item.boundary_source, "boundary_warning": item.warning,
        "ignorable": item.ignorable, "dummy": item.dummy, "checksum_ok": e.checksum_ok,
    }
    try:
        out.update(event_fields(item))
    except BinlogError as err:
        if err.type_code is None:
            err.type_code = h.type_code
        raise err.located(file=e.file, pos=e.pos) from None
    return out


def dump_json(items: Iterable[DumpItem]) -> Iterator[str]:
    """One JSON text per event (no newline), ASCII only."""
    for item in items:
        yield json.dumps(event_json(item), ensure_ascii=True, separators=(",", ":"))

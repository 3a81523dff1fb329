"""Small builders of decoded Event objects for parser and assembler tests (no codec needed).

`Rows` and `TableMap` are local stand-ins with the attribute names the codec's records will
have (issue #4 brief); the parser and assembler only duck-type them."""
from __future__ import annotations

from dataclasses import dataclass

from libs.binlog.constants import MARIA_FL_STANDALONE, MARIA_FL_TRANSACTIONAL, EventType
from libs.binlog import (Dummy, Event, FormatDescription, Header, Ignorable, MariaGtid, MysqlGtid,
                         Query, Rotate, RowChange, RowsQuery, Stop, XaPrepare, Xid)

T = EventType
MYSQL_UUID = "3e11fa47-71ca-11e1-9e33-c80aa9429562"


@dataclass(frozen=True)
class TableMap:
    table_id: int
    database: str
    table: str
    column_types: tuple[int, ...]
    column_names: tuple[str, ...] | None = None
    column_charsets: tuple[str | None, ...] | None = None


@dataclass(frozen=True)
class Rows:
    kind: str
    table_id: int
    rows: tuple[RowChange, ...]
    flags: int = 1  # STMT_END_F


def ev(type_code: int, body=None, *, flags: int = 0, pos: int = 4, size: int = 40, ts: int = 1_700_000_000,
       server_id: int = 1, log_pos: int | None = None, file: str = "bin.000001") -> Event:
    log_pos = pos + size if log_pos is None else log_pos
    return Event(Header(ts, int(type_code), server_id, size, log_pos, flags), pos, body, None, file)


def query(sql: str, db: str = "shop", **kw) -> Event:
    return ev(T.QUERY, Query(7, 0, 0, db, sql.encode(), b""), **kw)


def mysql_gtid(gno: int = 1, anonymous: bool = False, **kw) -> Event:
    code = T.ANONYMOUS_GTID if anonymous else T.GTID
    return ev(code, MysqlGtid(anonymous, 1, MYSQL_UUID, gno), **kw)


def maria_gtid(seq: int = 1, standalone: bool = False, **kw) -> Event:
    flags = MARIA_FL_STANDALONE if standalone else MARIA_FL_TRANSACTIONAL
    return ev(T.MARIA_GTID, MariaGtid(seq, 0, flags, 1), **kw)


def xid(n: int = 9, **kw) -> Event:
    return ev(T.XID, Xid(n), **kw)


def xa_prepare(gtrid: bytes = b"xa1", one_phase: bool = False, **kw) -> Event:
    return ev(T.XA_PREPARE, XaPrepare(one_phase, 1, gtrid, b""), **kw)


def fde(flavour: str = "mysql", **kw) -> Event:
    body = FormatDescription(4, "8.0.43" if flavour == "mysql" else "10.11.19-MariaDB",
                             0, 19, b"", 1, flavour)
    return ev(T.FORMAT_DESCRIPTION, body, **kw)


def rotate(next_file: str = "bin.000002", *, artificial: bool = False, **kw) -> Event:
    if artificial:
        kw.setdefault("flags", 0x20)
        kw.setdefault("log_pos", 0)
    return ev(T.ROTATE, Rotate(4, next_file), **kw)


def rows_query(text: str, annotate: bool = False, **kw) -> Event:
    return ev(T.ANNOTATE_ROWS if annotate else T.ROWS_QUERY, RowsQuery(text),
              flags=0x80 if not annotate else 0, **kw)


def table_map(table_id: int = 42, table: str = "orders", column_types=(3, 15), column_names=("id", "note"),
              **kw) -> Event:
    return ev(T.TABLE_MAP, TableMap(table_id, "shop", table, tuple(column_types), column_names), **kw)


def write_rows(*afters: dict, table_id: int = 42, stmt_end: bool = True, **kw) -> Event:
    changes = tuple(RowChange(None, a) for a in afters)
    return ev(T.WRITE_ROWS, Rows("insert", table_id, changes, flags=int(stmt_end)), **kw)


def update_rows(*pairs: tuple[dict, dict], table_id: int = 42, **kw) -> Event:
    return ev(T.UPDATE_ROWS, Rows("update", table_id, tuple(RowChange(b, a) for b, a in pairs)), **kw)


def delete_rows(*befores: dict, table_id: int = 42, **kw) -> Event:
    return ev(T.DELETE_ROWS, Rows("delete", table_id, tuple(RowChange(b, None) for b in befores)), **kw)


def intvar(**kw) -> Event:
    return ev(T.INTVAR, None, **kw)


def dummy_query(**kw) -> Event:
    return ev(T.QUERY, Dummy("query", 160), flags=0x0008, **kw)


def ignorable(type_code: int = 99, **kw) -> Event:
    kw.setdefault("flags", 0x80)
    return ev(type_code, Ignorable(type_code, b"x"), **kw)


def stop(**kw) -> Event:
    return ev(T.STOP, Stop(), **kw)

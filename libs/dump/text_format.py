"""`binlog-dump` text output: events printed the way `mysqlbinlog -vv --base64-output=decode-rows`
(MariaDB's `mariadb-binlog`, sql/log_event_client.cc) prints them, plus the WL#4162 boundary
type of every event (seed 001 F2: "markers should be visible as comments in mysqlbinlog output").

    # at 2570
    #261122  2:06:29 server id 1  end_log_pos 2640 CRC32 0x7e3b9457 	Annotate_rows:
    # boundary: Inside Transaction (parser)
    #Q> INSERT INTO t_pk VALUES (2,'beta',20,2.50,NULL)
    ...
    ### INSERT INTO `row_full`.`t_pk`
    ### SET
    ###   @1=2 /* INT meta=0 nullable=0 is_null=0 */

Exact where it is tested against the corpus oracles (tests/unit/dump): the sequence of `# at`
lines, every `###` row line, and the `#Q>` Annotate_rows lines. Differences from the oracle,
on purpose (normalisation the tests apply: compare those three line families as sequences):
  * events are printed strictly in file order; mariadb-binlog holds an Annotate_rows back and
    prints its header and `#Q>` lines after the next Table_map's `# at` line;
  * header times are UTC (the corpus server's time zone) where the client uses local time;
  * the per-event SQL mariadb-binlog emits for replay (SET @@session..., BINLOG '...') is not
    printed: this is a reading aid, not a replay script. Query text is printed as is.
  * `# boundary: ...`, `# ignorable event ...`, `# dummy event ...` and `# ...: body not
    decoded ...` lines are ours;
  * identifiers (database, table, file and variable names) are printed with a backtick doubled
    and control bytes as \\xNN, so a crafted name cannot forge a `###` line.

Every line is a str of latin-1 code points, so `line.encode("latin-1")` gives the exact bytes
(row values and statement texts are printed byte for byte, whatever their charset).
"""
from __future__ import annotations

import re
import time
from typing import Iterable, Iterator

from libs.binlog.constants import (MARIA_FL_DDL, MARIA_FL_STANDALONE, MARIA_FL_TRANSACTIONAL,
                                   STMT_END_F, EventType)
from libs.binlog import (BinlogCheckpoint, FormatDescription, GtidList, MariaGtid, MysqlGtid, Query,
                         Rotate, RowsQuery, TableMap, UserVar, Xid)
from libs.binlog.shapes import is_rows, undecoded

from libs.dump.vv_format import format_column_vv, quoted
from libs.dump.walk import DumpItem

ROWS_NAMES = {"insert": "Write_rows", "update": "Update_rows", "delete": "Delete_rows"}
_LINE_BREAKS = re.compile(rb"[\r\n]+")


def _latin(raw: bytes) -> str:
    return raw.decode("latin-1")


def _name(text: str) -> str:
    """An identifier as the bytes the server logged (names are decoded as UTF-8), made safe to
    print inside backticks: a backtick doubled (my_strmov_quoted_identifier), control bytes as
    \\xNN, so a crafted name can neither close its quotes nor start a line of its own."""
    return quoted(text.encode("utf-8", "surrogateescape"))[1:-1].replace("`", "``")


def _stamp(ts: int) -> str:
    t = time.gmtime(ts)
    return f"{t.tm_year % 100:02d}{t.tm_mon:02d}{t.tm_mday:02d} {t.tm_hour:2d}:{t.tm_min:02d}:{t.tm_sec:02d}"


def header_line(item: DumpItem) -> str:
    """`#YYMMDD HH:MM:SS server id N  end_log_pos P [CRC32 0x...] \\t<description>`."""
    h = item.event.header
    crc = ""
    if item.has_checksum:
        crc = f" CRC32 0x{int.from_bytes(item.frame[-4:], 'little'):08x}"
    return (f"#{_stamp(h.timestamp)} server id {h.server_id}  end_log_pos {h.log_pos}{crc} "
            f"\t{describe(item)}")


def describe(item: DumpItem) -> str:
    """The part of the header line after the tab: event kind and its main fields."""
    event, body = item.event, item.event.body
    if item.dummy:
        return "Query" if body.carrier == "query" else "User_var"
    if item.ignorable:
        return f"Ignorable event type {body.type_code}"
    if isinstance(body, FormatDescription):
        return (f"Start: binlog v {body.binlog_version}, server v {body.server_version} "
                f"created {_stamp(body.create_timestamp or event.header.timestamp)}")
    if isinstance(body, Query):
        text = f"Query\tthread_id={body.thread_id}\texec_time={body.exec_time}\terror_code={body.error_code}"
        xid = body.status.get("xid")
        return text + (f"\txid={xid}" if xid is not None else "")
    if isinstance(body, MariaGtid):
        kind = " ddl" if body.flags & MARIA_FL_DDL else (
            " trans" if body.flags & MARIA_FL_TRANSACTIONAL else "")
        cid = f" cid={body.commit_id}" if body.commit_id is not None else ""
        return f"GTID {body.gtid}{kind}{cid}"
    if isinstance(body, MysqlGtid):
        return ("Anonymous_GTID" if body.anonymous else "GTID") + f"\tSET @@SESSION.GTID_NEXT= '{body.gtid}'"
    if isinstance(body, TableMap):
        return f"Table_map: `{_name(body.database)}`.`{_name(body.table)}` mapped to number {body.table_id}"
    if is_rows(event):
        flags = " STMT_END_F" if body.flags & STMT_END_F else ""
        return f"{ROWS_NAMES[body.kind]}: table id {body.table_id} flags:{flags}"
    if isinstance(body, Xid):
        return f"Xid = {body.xid}"
    if isinstance(body, RowsQuery):
        return "Annotate_rows:" if event.type_code == EventType.ANNOTATE_ROWS else "Rows_query"
    if isinstance(body, Rotate):
        return f"Rotate to {_name(body.next_file)}  pos: {body.position}"
    if isinstance(body, BinlogCheckpoint):
        return f"Binlog checkpoint {_name(body.file)}"
    if isinstance(body, GtidList):
        return "Gtid list [" + ",\n# ".join(e.gtid for e in body.entries) + "]"
    if isinstance(body, UserVar):
        return f"User_var\tname={_name(body.name.decode('utf-8', 'surrogateescape'))}"
    return event.type_name.title()


def rows_query_lines(item: DumpItem) -> list[str]:
    """Annotate_rows: mariadb-binlog's `#Q> ` per non-empty line (CR/LF runs split lines).
    MySQL Rows_query (29, WL#4033 example output): `# ` + the text (its length byte skipped)."""
    body = item.event.body
    if item.event.type_code == EventType.ANNOTATE_ROWS:
        return ["#Q> " + _latin(part) for part in _LINE_BREAKS.split(body.raw) if part]
    return ["# " + _latin(part) for part in _LINE_BREAKS.split(body.raw[1:]) if part]


def _image_lines(image: dict, tm: TableMap) -> Iterator[str]:
    for ordinal, value in image.items():
        t, meta = tm.column_types[ordinal], tm.column_metas[ordinal]
        try:
            yield format_column_vv(ordinal, value, t, meta, tm.nullable[ordinal])
        except KeyError:  # a type the -vv printer has no rule for (JSON diffs, VECTOR)
            text = repr(value).encode("latin-1", "backslashreplace").decode("latin-1")
            yield (f"###   @{ordinal + 1}={text} /* type {t} meta={meta} "
                   f"nullable={int(tm.nullable[ordinal])} is_null={int(value is None)} */")


def rows_lines(item: DumpItem) -> list[str]:
    """The `###` pseudo-SQL of a rows event (Rows_log_event::print_verbose), then the count."""
    body, tm = item.event.body, item.table_map
    table = f"`{_name(tm.database)}`.`{_name(tm.table)}`"
    out = []
    for change in body.rows:
        if body.kind == "insert":
            out += [f"### INSERT INTO {table}", "### SET", *_image_lines(change.after, tm)]
        elif body.kind == "delete":
            out += [f"### DELETE FROM {table}", "### WHERE", *_image_lines(change.before, tm)]
        else:
            out += [f"### UPDATE {table}", "### WHERE", *_image_lines(change.before, tm),
                    "### SET", *_image_lines(change.after, tm)]
    out.append(f"# Number of rows: {len(body.rows)}")
    return out


def _statement_lines(item: DumpItem) -> list[str]:
    body = item.event.body
    if isinstance(body, Query):
        out = [f"use `{_name(body.db)}`/*!*/;"] if body.db else []
        return out + [f"SET TIMESTAMP={item.event.header.timestamp}/*!*/;",
                      _latin(body.query), "/*!*/;"]
    if isinstance(body, MariaGtid) and not body.flags & MARIA_FL_STANDALONE:
        return ["START TRANSACTION", "/*!*/;"]
    if isinstance(body, Xid):
        return ["COMMIT/*!*/;"]
    return []


def event_lines(item: DumpItem) -> list[str]:
    """All lines of one event, without newlines."""
    out = [f"# at {item.event.pos}", header_line(item)]
    source = "marker" if item.boundary_source == "marker" else "parser"
    out.append(f"# boundary: {item.boundary_name} ({source})")
    if item.warning:
        out.append(f"# boundary warning: {item.warning}")
    body = item.event.body
    if item.dummy:
        replaced = body.replaced_type if body.replaced_type is not None else "unknown"
        out.append(f"# dummy event ({body.carrier}) replacing event type {replaced}: not applied")
    elif item.ignorable:
        out.append(f"# ignorable event type {body.type_code} (LOG_EVENT_IGNORABLE_F): skipped")
    elif isinstance(body, RowsQuery):
        out += rows_query_lines(item)
    elif undecoded(item.event):
        out.append(f"# {undecoded(item.event)}; not applied")
    elif is_rows(item.event) and item.table_map is not None:
        out += rows_lines(item)
    else:
        out += _statement_lines(item)
    return out


def dump_text(items: Iterable[DumpItem]) -> Iterator[str]:
    """Lines (no newline) for every item, in order."""
    for item in items:
        yield from event_lines(item)

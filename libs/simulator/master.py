"""The simulated master: one session executing statements on the reference model and logging
them the way a real server would.

Per statement: WL#3303 picks row or statement logging, or refuses the statement, from the
session's binlog_format, the statement's safety and its tables' engine capabilities (the
decision table lives in libs/replay/logging_format.py; this module only looks it up). Row
logging writes, per statement, Rows_query/Annotate_rows (when the session's
binlog_rows_query_log_events / binlog_annotate_row_events is ON: WL#4033, switchable per
session), a Table_map and rows events whose images hold exactly the WL#5092 R1 columns.
A group (GTID .. Xid/COMMIT) is written when the transaction commits; a rolled-back
transaction over transactional tables writes nothing.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Callable

import libs.simulator.images as images
from libs.binlog import RowChange, Rows, TableMap
from libs.binlog.constants import STMT_END_F, TM_BIT_LEN_EXACT_F
from libs.binlog.constants import BoundaryType as B
from libs.binlog.constants import EventType as E
from libs.binlog.rows import encode_rows
from libs.replay.logging_format import ERROR, ROW, decide_logging_format

from libs.simulator.flavour import make_flavour
from libs.simulator.model import ReferenceModel
from libs.simulator.schema import Table
from libs.simulator.statements import Ddl, Delete, Insert, InsertSelect, Update
from libs.simulator.stream import BinlogStream, Frame, Item

TABLE_MAP_FLAGS = TM_BIT_LEN_EXACT_F  # what both servers write (corpus)
MAX_ROWS_EVENT = 8192  # binlog_row_event_max_size default: split bigger statements
DEFAULT_START_TIME = 1_767_225_600  # 2026-01-01 00:00:00 UTC; one second per group
FIRST_TABLE_ID = 70


@dataclass
class Session:
    binlog_format: str = "ROW"  # STATEMENT | MIXED | ROW
    row_image: str = "full"  # full | noblob | minimal (binlog_row_image)
    rows_query: bool = True  # binlog_rows_query_log_events (MySQL) / binlog_annotate_row_events


@dataclass
class Outcome:
    sql: str
    decision: str  # "row" | "statement" | "error"
    message: str | None  # the seed's "not loggable" / "unsafe", else None
    rows: int = 0  # row changes the statement made


@dataclass
class _Group:
    items: list = field(default_factory=list)
    transactional: bool = False
    non_transactional: bool = False
    log_entries: list = field(default_factory=list)


class Master:
    def __init__(self, tables: list[Table], sink: Callable[[Frame], None], *,
                 flavour: str = "mariadb", server_id: int = 1, checksum: bool = True,
                 markers: bool = False, file_name: str = "sim-bin.000001",
                 ignorable_rate: float = 0.0, seed: int = 0, db: str = "sim",
                 start_time: int = DEFAULT_START_TIME, session: Session | None = None,
                 create_tables: bool = True):
        self._next_table_id = FIRST_TABLE_ID
        tables = [replace(t, database=db, table_id=self._new_table_id()) for t in tables]
        self.model = ReferenceModel(tables)
        self.session = session or Session()
        self.flavour = make_flavour(flavour, server_id=server_id, checksum=checksum, db=db)
        self.stream = BinlogStream(server_id=server_id, checksum=checksum, markers=markers,
                                   file_name=file_name, ignorable_rate=ignorable_rate, seed=seed)
        self.sink = sink
        self.db = db
        self.file_name = file_name
        self.time = start_time
        self.xid = 100
        self.statements: list[dict] = []
        self.groups_written = 0
        self._trx_no = 0
        self._group: _Group | None = None
        self._explicit = False
        for item in self.flavour.file_start(file_name, start_time):
            self.sink(self.stream.write(item, start_time))
        if create_tables:
            self._ddl_group(f"CREATE DATABASE IF NOT EXISTS `{db}`", db="")
            for t in tables:
                self.execute(Ddl("create", t.name))

    def _new_table_id(self) -> int:
        self._next_table_id += 1
        return self._next_table_id - 1

    # ---- transactions ------------------------------------------------------------------------

    def begin(self) -> None:
        if self._explicit:
            self.commit()  # BEGIN inside a transaction commits it implicitly
        self._explicit = True
        self._open()

    def _open(self) -> None:
        self._trx_no += 1
        self._group = _Group()
        self.model.begin()

    def commit(self) -> None:
        group, self._group, self._explicit = self._group, None, False
        self.model.commit()
        for entry in group.log_entries:
            entry["committed"] = True
        if group.items:
            end = (self.flavour.xid(self._next_xid()) if group.transactional
                   else self.flavour.query("COMMIT", B.END))
            self._write_group(group.items, end, ddl=False, transactional=group.transactional)

    def rollback(self) -> None:
        """ROLLBACK: transactional tables are restored and nothing is logged; changes to
        non-transactional tables stay, so a real server logs the group ending in ROLLBACK."""
        group, self._group, self._explicit = self._group, None, False
        self.model.rollback()
        for entry in group.log_entries:
            entry["committed"] = False
        if group.items and group.non_transactional:
            self._write_group(group.items, self.flavour.query("ROLLBACK", B.END), ddl=False,
                              transactional=group.transactional)

    def _next_xid(self) -> int:
        self.xid += 1
        return self.xid

    def _write_group(self, body: list[Item], end: Item, *, ddl: bool, transactional: bool) -> None:
        self.time += 1
        if self.flavour.name == "mysql":
            self.flavour.timestamp_us = self.time * 1_000_000
        items = self.flavour.group_start(ddl=ddl, transactional=transactional) + body + [end]
        items = self.stream.with_ignorables(items)
        items = self.flavour.finalize_group(items, lambda it: len(self.stream.encode(it, self.time)))
        for item in items:
            self.sink(self.stream.write(item, self.time))
        self.groups_written += 1

    def close(self, next_file: str | None = None) -> None:
        """End the file as a server does on FLUSH BINARY LOGS: a Rotate naming the next file."""
        if self._group is not None:
            self.commit()
        if next_file is None:
            stem, _, num = self.file_name.rpartition(".")
            next_file = f"{stem}.{int(num) + 1:0{len(num)}d}" if num.isdigit() else self.file_name + ".next"
        self.sink(self.stream.write(self.flavour.rotate(next_file), self.time))

    # ---- statements --------------------------------------------------------------------------

    def execute(self, stmt) -> Outcome:
        if isinstance(stmt, Ddl):
            return self._execute_ddl(stmt)
        autocommit = not self._explicit
        if autocommit:
            self._open()
        tables = [self.model.table(n) for n in stmt.tables]
        rlc = all(t.capabilities[0] for t in tables)
        slc = all(t.capabilities[1] for t in tables)
        decision = decide_logging_format(not stmt.unsafe, self.session.binlog_format, rlc, slc)
        sql = stmt.sql(self.model)
        entry = {"trx": self._trx_no, "sql": sql, "decision": decision.format,
                 "message": decision.message, "committed": None, "rows": 0}
        self.statements.append(entry)
        outcome = Outcome(sql, decision.format, decision.message)
        if decision.format != ERROR:
            # WL#3303: an error means "the statement is not executed"; otherwise it runs
            changes = self._apply(stmt)
            outcome.rows = entry["rows"] = len(changes)
            self._log(stmt, sql, decision.format, changes, tables)
            self._group.log_entries.append(entry)
        if autocommit:
            self.commit()
        return outcome

    def _apply(self, stmt) -> list[tuple]:
        """Run the statement on the model: [(kind, table name, before, after, specified)]."""
        m, out = self.model, []
        if isinstance(stmt, Insert):
            for row in stmt.rows:
                out.append(("insert", stmt.table, None, m.insert(stmt.table, row), frozenset(row)))
        elif isinstance(stmt, InsertSelect):
            src, dst = m.table(stmt.source), m.table(stmt.table)
            for rid in m.matching(stmt.source, stmt.where)[:stmt.limit]:
                srow = m.tables[stmt.source].rows[rid]
                row = {dst.ordinal(c): srow[src.ordinal(c)] for c in stmt.columns}
                out.append(("insert", stmt.table, None, m.insert(stmt.table, row), frozenset(row)))
        elif isinstance(stmt, Update):
            for rid in m.matching(stmt.table, stmt.where):
                before, after = m.update(stmt.table, rid, stmt.assignments)
                if before != after:  # servers log only rows the UPDATE really changed
                    out.append(("update", stmt.table, before, after, frozenset(stmt.assignments)))
        elif isinstance(stmt, Delete):
            for rid in m.matching(stmt.table, stmt.where):
                out.append(("delete", stmt.table, m.delete(stmt.table, rid), None, frozenset()))
        else:
            raise TypeError(f"not a DML statement: {stmt!r}")
        return out

    def _log(self, stmt, sql: str, fmt: str, changes: list, tables: list[Table]) -> None:
        group = self._group
        for t in tables:
            if t.transactional:
                group.transactional = True
            else:
                group.non_transactional = True
        if fmt != ROW:
            group.items.append(self.flavour.query(sql, B.INSIDE))
            return
        if not changes:
            return  # nothing changed: row logging writes nothing for this statement
        if self.session.rows_query:
            group.items.append(self.flavour.rows_query(sql))
        written = []
        for _, name, *_ in changes:
            if name not in written:
                written.append(name)
        for name in written:
            group.items.append(self._table_map(self.model.table(name)))
        rows_items = []
        run: list = []
        for change in changes:
            if run and (change[0], change[1]) != (run[0][0], run[0][1]):
                rows_items += self._rows_items(run)
                run = []
            run.append(change)
        rows_items += self._rows_items(run)
        group.items += _ending_statement(rows_items)

    def log_rows_statement(self, table: Table, run: list) -> None:
        """One rows statement on `table` in the open group, without the SQL model: its Table_map,
        then the rows events of `run` (changes as _rows_items takes them), the last one flagged
        STMT_END_F. For benchmarks that build transactions larger than the model would hold."""
        self._group.items += [self._table_map(table)] + _ending_statement(self._rows_items(run))

    # ---- event bodies ------------------------------------------------------------------------

    def _table_map(self, t: Table) -> Item:
        tm = TableMap(t.table_id, TABLE_MAP_FLAGS, self.db, t.name,
                      tuple(c.type_code for c in t.columns), tuple(c.meta for c in t.columns),
                      tuple(c.nullable for c in t.columns))
        self.stream.ctx.table_maps[t.table_id] = tm  # sizes of its rows events are needed early
        return Item(E.TABLE_MAP, tm, B.INSIDE)

    def _rows_items(self, run: list) -> list[Item]:
        kind, name = run[0][0], run[0][1]
        t = self.model.table(name)
        mode, width = self.session.row_image, len(t.columns)
        before_cols = images.before_image(t, mode) if kind != "insert" else None
        row_changes = []
        after_cols = None
        for _, _, before, after, specified in run:
            if kind == "insert":
                after_cols = images.insert_after_image(t, mode, specified)
            elif kind == "update":
                after_cols = images.update_after_image(t, mode, specified)
            row_changes.append(RowChange(
                images.project(before, before_cols) if before_cols is not None else None,
                images.project(after, after_cols) if after_cols is not None else None))
        type_code = self.flavour.rows_types[kind]

        def rows_event(chunk) -> Rows:
            return Rows(kind, t.table_id, 0, b"", width,
                        images.present_bits(before_cols, width) if before_cols is not None else None,
                        images.present_bits(after_cols, width) if after_cols is not None else None,
                        tuple(chunk), type_code, None, self.flavour.rows_wire())

        empty = len(encode_rows(type_code, rows_event([]), self.stream.ctx))
        items, chunk, size = [], [], 0
        for rc in row_changes:
            row_size = len(encode_rows(type_code, rows_event([rc]), self.stream.ctx)) - empty
            if chunk and size + row_size > MAX_ROWS_EVENT:
                items.append(Item(type_code, rows_event(chunk), B.INSIDE))
                chunk, size = [], 0
            chunk.append(rc)
            size += row_size
        items.append(Item(type_code, rows_event(chunk), B.INSIDE))
        return items

    # ---- DDL ----------------------------------------------------------------------------------

    def _execute_ddl(self, stmt: Ddl) -> Outcome:
        if self._explicit:
            self.commit()  # DDL commits the open transaction implicitly
        self._trx_no += 1
        m = self.model
        if stmt.kind == "add_column":
            old = m.table(stmt.table)
            new = old.with_columns(old.columns + (stmt.column,), self._new_table_id())
            m.alter(stmt.table, new, fill={len(old.columns): stmt.column.implicit_default})
        elif stmt.kind == "drop_column":
            old = m.table(stmt.table)
            k = old.ordinal(stmt.column)
            new = old.with_columns(old.columns[:k] + old.columns[k + 1:], self._new_table_id())
            m.alter(stmt.table, new, drop=k)
        elif stmt.kind == "truncate":
            m.truncate(stmt.table)
        sql = stmt.sql(m)
        self.statements.append({"trx": self._trx_no, "sql": sql, "decision": "statement",
                                "message": None, "committed": True, "rows": 0})
        self._ddl_group(sql)
        return Outcome(sql, "statement", None)

    def _ddl_group(self, sql: str, db: str | None = None) -> None:
        self._write_group([], self.flavour.query(sql, B.END, db=db), ddl=True, transactional=False)


def _ending_statement(rows_items: list[Item]) -> list[Item]:
    """The rows events of one statement, the last flagged STMT_END_F (rows_event.h: the replica
    closes the statement's tables after it)."""
    last = rows_items[-1]
    return rows_items[:-1] + [Item(last.type_code, replace(last.body, flags=STMT_END_F), last.boundary)]

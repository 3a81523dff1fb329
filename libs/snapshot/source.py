"""Server side of `cdc-ship --snapshot`: which tables, one consistent snapshot and its binlog
position P, and every table's rows read inside that one transaction.

The connection is PyMySQL's, as the binlog stream's, with every value the server's bytes
(pymysql_wire.RAW_BYTES). PyMySQL sends each statement and reads small results itself; a table's
SELECT has its row packets read in large blocks (libs/snapshot/pymysql_wire.py) and parsed by the
compiled libs/snapshot/_textrows.c straight into Arrow buffers (libs/snapshot/row_stream.py), no
Python object per value. Measured on the bench tables (bench/README.md, 1M rows, MariaDB 10.11,
2 busy cores): reading every table's SELECT this way 0.54-0.76 s, the same packets received and
only counted 0.48-0.58 s (what the server sends them at), its `SELECT *` 0.47-0.67 s; before,
mysql-connector-python's C extension made a Python object per value, then `pa.array` read them
back (~0.96 s and ~0.58 s of 1.8 s profiled), and PyMySQL's own row parser gave 400k rows/s.
Without the compiled parser (no C compiler at install), rows come through PyMySQL's SSCursor.

Opening the snapshot, MariaDB (never a global read lock):

    SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ
    SET SESSION net_write_timeout = 3600       -- the server waits while a chunk goes to Kafka
    <values.SESSION_SETUP>
    SELECT @@gtid_binlog_pos                    -- GTID state before ...
    START TRANSACTION WITH CONSISTENT SNAPSHOT
    SHOW STATUS LIKE 'binlog_snapshot_%'        -- binlog_snapshot_file/_position: P, exact
    SELECT @@gtid_binlog_pos, @@server_id, UTC_TIMESTAMP(6)    -- ... and after
    SET STATEMENT lock_wait_timeout = 0 FOR SELECT 1 FROM t LIMIT 0    -- each table, see below

  MariaDB records the binlog position of a consistent snapshot with the snapshot itself (InnoDB
  and the binlog agree on the commit order), so P is exact and nothing is locked. It has no GTID
  counterpart: the two reads of @@gtid_binlog_pos bracket the snapshot, and when they are equal
  no transaction committed in between, so that state is the one at P. When they differ the
  transaction is rolled back and opened again (at most GTID_ATTEMPTS times), then gtid is left
  None: P is exact anyway, the gtid is informative.

MySQL (same session set-up):

    FLUSH TABLES WITH READ LOCK
    START TRANSACTION WITH CONSISTENT SNAPSHOT
    SHOW MASTER STATUS                          -- 8.2+: SHOW BINARY LOG STATUS (8.4 has only it)
    SELECT @@gtid_executed, @@server_id, UTC_TIMESTAMP(6)
    SELECT 1 FROM t LIMIT 0                     -- each table, see below
    UNLOCK TABLES

  MySQL does not report a snapshot's binlog position, so it is read under a global read lock.
  The cost: FLUSH TABLES WITH READ LOCK first waits for every running statement to finish (a
  long SELECT or ALTER holds it up, and every write arriving meanwhile queues behind it), then
  blocks all commits of the server while START TRANSACTION, two more statements and the tables'
  metadata locks (one statement per table, then the table list again) run, until UNLOCK TABLES
  (usually milliseconds; the wait before it is unbounded).

Each table's metadata lock is taken once P is known and held to the run's end, so that no DDL
commits on it between P and its read (libs/snapshot/schema_lock.py: on MariaDB a guard connection
holds the same locks from before P). Per table, inside the snapshot transaction: SHOW CREATE
TABLE (the `table` record's create_table), the columns (values.COLUMNS_QUERY), then ONE
unbuffered SELECT of values.select_expression per column (rows are read as they arrive, a batch
at a time), cut into `rows` records of at most chunk_rows rows and ~chunk_bytes of values
(chunks.cut_chunks), so memory is bounded whatever the table size. Not primary-key ranges (one
SELECT per chunk, as the issue first suggested): a killed run is never continued from its last
chunk but re-read whole, per table, in a new run (libs/snapshot/protocol.py), so key ranges
would buy nothing but more queries, and keyless tables would need another plan anyway.
"""
from __future__ import annotations

import datetime as dt
import re
import sys
from dataclasses import dataclass, replace
from typing import Callable, Iterator

import pymysql
import pyarrow as pa
from pymysql.cursors import SSCursor
from pymysql.err import MySQLError

from libs.source import source_tls
from libs.source.errors import ShipError
from libs.source.privileges import access_error
from libs.source.replica_source import ServerOptions, connect_error, error_text
from libs.snapshot import (DEFAULT_CHUNK_BYTES, DEFAULT_CHUNK_ROWS, chunk_values, pymysql_wire, row_stream,
                           values)
from libs.snapshot.chunks import TableProgress, cut_chunks, row_sizes
from libs.snapshot.record import BEGIN, END, TABLE, TABLE_END, SnapshotRecord
from libs.contracts.sql_names import quote_identifier
from libs.contracts.table_names import TableName
from libs.snapshot.table_filter import TableFilter  # noqa: F401 - part of this module's API

SYSTEM_SCHEMAS = ("mysql", "information_schema", "performance_schema", "sys")
# MariaDB's system-versioned tables are TABLE_TYPE 'SYSTEM VERSIONED': listed, so that a run
# that would read one refuses it by name (refuse_versioned) instead of leaving it out unsaid.
BASE_TABLE, SYSTEM_VERSIONED = "BASE TABLE", "SYSTEM VERSIONED"
TABLES_QUERY = ("SELECT TABLE_SCHEMA, TABLE_NAME, TABLE_ROWS, TABLE_TYPE FROM information_schema.TABLES "
                f"WHERE TABLE_TYPE IN ('{BASE_TABLE}', '{SYSTEM_VERSIONED}') AND TABLE_SCHEMA NOT IN ("
                + ", ".join(f"'{s}'" for s in SYSTEM_SCHEMAS) + ") "
                "ORDER BY TABLE_SCHEMA, TABLE_NAME")
SESSION_STATEMENTS = ("SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ",
                      "SET SESSION net_write_timeout = 3600")
GTID_ATTEMPTS = 3
FETCH_ROWS = 1000  # rows a fetch of the pure-Python fallback (no compiled row parser)


class SnapshotError(ShipError):
    """A snapshot that cannot be taken or read: names source, table and position."""


@dataclass(frozen=True)
class SourceTable:
    database: str
    name: str
    estimated_rows: int | None = None  # information_schema.TABLES.TABLE_ROWS (an estimate)
    versioned: bool = False  # MariaDB WITH SYSTEM VERSIONING (refuse_versioned)

    @property
    def qualified(self) -> str:
        """'db.table', the text --include / --exclude match: not an identity
        (libs/contracts/table_names.py)."""
        return f"{self.database}.{self.name}"

    @property
    def pair(self) -> TableName:
        return TableName(self.database, self.name)


@dataclass(frozen=True)
class SnapshotPoint:
    """Where and when the consistent snapshot was taken."""

    file: str
    pos: int
    gtid: str | None
    server_id: int
    ts_us: int  # the server's UTC time, epoch microseconds


def _text(value) -> str | None:
    return value.decode("utf-8") if isinstance(value, bytes | bytearray) else (
        None if value is None else str(value))


def query(conn, sql: str, args=None) -> list[tuple]:
    """The statement's rows; a refusal for want of a privilege is one line naming it
    (libs/source/privileges.py)."""
    try:
        with conn.cursor() as cur:
            if args is None:
                cur.execute(sql)
            else:
                cur.execute(sql, args)
            return [] if cur.description is None else list(cur.fetchall())  # SET, START ...: no result set
    except MySQLError as exc:
        server = f"{getattr(conn, 'host', '?')}:{getattr(conn, 'port', '?')}"
        refused = access_error(server, exc, sql if len(sql) <= 80 else f"{sql[:77]}...")
        if refused is None:
            raise
        raise refused from None


def connect(opts: ServerOptions, warn: Callable[[str], None] = lambda line: print(line, file=sys.stderr)
            ) -> pymysql.Connection:
    """The snapshot connection: every value arrives as the server's bytes
    (pymysql_wire.RAW_BYTES); rows are parsed by the compiled reader (row_stream), or by PyMySQL
    in pure Python when it is not built. Over TLS as the binlog dump's when opts.tls says so
    (libs/source/source_tls.py, issue #56 item 2); `opts` may be any object with host, port, user
    and password (then plain)."""
    if not row_stream.NATIVE:
        warn("cdc-ship: the compiled row reader libs/snapshot/_textrows is not built (pip install -e . "
             "needs a C compiler): the snapshot reads rows in pure Python, several times slower")
    try:
        return source_tls.open_connection(getattr(opts, "tls", None), host=opts.host, port=opts.port,
                                          user=opts.user, password=opts.password, autocommit=True,
                                          connect_timeout=10, charset="utf8mb4", **pymysql_wire.RAW_BYTES)
    except MySQLError as exc:
        raise connect_error(opts, exc) from None


def list_tables(conn, keep: Callable[[str], bool] = lambda _name: True) -> list[SourceTable]:
    """Included tables (BASE TABLE or SYSTEM VERSIONED), system schemas never, each once, in
    (schema, name) order: keyed on the pair, `a`.`b.c` and `a.b`.`c` are two tables
    (libs/contracts/table_names.py)."""
    found: dict[TableName, SourceTable] = {}
    for schema, name, rows, kind in query(conn, TABLES_QUERY):
        table = SourceTable(_text(schema), _text(name), None if rows is None else int(_text(rows)),
                            _text(kind) == SYSTEM_VERSIONED)
        if table.database.lower() not in SYSTEM_SCHEMAS and keep(table.qualified):
            found.setdefault(table.pair, table)
    return list(found.values())


def refuse_versioned(tables: list[SourceTable], source: str) -> None:
    """A system-versioned table is not snapshotted: one line naming it, before the run starts.

    Measured on MariaDB 10.11 (issue #38 item 4): its row images carry two columns that neither
    SHOW CREATE TABLE nor information_schema.COLUMNS nor SELECT * show (the hidden row_start and
    row_end, TIMESTAMP(6)), an UPDATE logs the current row's update plus an INSERT of the old
    version, and a DELETE is logged as an UPDATE of row_end. Its binlog therefore mirrors the
    table's whole history, not the current rows a snapshot reads, and the target derived from
    SHOW CREATE TABLE lacks the two columns: snapshot rows and binlog changes cannot agree."""
    for table in tables:
        if table.versioned:
            raise SnapshotError(
                f"snapshot: table {table.pair.quoted()} is system-versioned (WITH SYSTEM VERSIONING), which "
                f"is not replicated: its binlog rows carry the hidden row_start/row_end columns and every "
                f"old version, the snapshot only the current rows; leave it out with --exclude",
                source=source)


def _session(conn) -> None:
    setup = values.SESSION_SETUP
    for statement in (*SESSION_STATEMENTS, *([setup] if isinstance(setup, str) else setup)):
        query(conn, statement)


def _utc_micros(value) -> int:
    if not isinstance(value, dt.datetime):
        value = dt.datetime.fromisoformat(_text(value))
    epoch = dt.datetime(1970, 1, 1)
    return (value.replace(tzinfo=None) - epoch) // dt.timedelta(microseconds=1)


def open_snapshot(conn, settle: Callable[[object], None] = lambda _conn: None) -> SnapshotPoint:
    """Start the consistent-snapshot transaction on `conn` (module docstring) and return P.
    `settle(conn)` runs inside it once P is known, on MySQL still under the global read lock
    (libs/snapshot/schema_lock.py takes the tables' metadata locks there)."""
    _session(conn)
    info = conn.get_server_info()
    return _open_mariadb(conn, settle) if "mariadb" in info.lower() else _open_mysql(conn, info, settle)


def _open_mariadb(conn, settle) -> SnapshotPoint:
    point, exact = _mariadb_attempt(conn)
    for _ in range(GTID_ATTEMPTS - 1):
        if exact:
            break
        query(conn, "ROLLBACK")  # a commit slipped between the two GTID reads: again
        point, exact = _mariadb_attempt(conn)
    settle(conn)
    return point if exact else replace(point, gtid=None)


def _mariadb_attempt(conn) -> tuple[SnapshotPoint, bool]:
    """(P with the GTID state read before, whether no GTID moved during START TRANSACTION)."""
    before = _text(query(conn, "SELECT @@gtid_binlog_pos")[0][0])
    query(conn, "START TRANSACTION WITH CONSISTENT SNAPSHOT")
    status = {_text(k).lower(): _text(v)
              for k, v in query(conn, "SHOW STATUS LIKE 'binlog_snapshot_%'")}
    after, server_id, now = query(conn, "SELECT @@gtid_binlog_pos, @@server_id, "
                                        "UTC_TIMESTAMP(6)")[0]
    file, pos = status.get("binlog_snapshot_file"), status.get("binlog_snapshot_position")
    if not file:
        raise SnapshotError("the server has no binary log position (is log_bin on?)")
    point = SnapshotPoint(file, int(pos), before or None, int(_text(server_id)), _utc_micros(now))
    return point, _text(after) == before


def _mysql_version(info: str) -> tuple[int, int]:
    m = re.match(r"(\d+)\.(\d+)", info)
    return (int(m.group(1)), int(m.group(2))) if m else (0, 0)


def _open_mysql(conn, info: str, settle) -> SnapshotPoint:
    status_sql = ("SHOW BINARY LOG STATUS" if _mysql_version(info) >= (8, 2)
                  else "SHOW MASTER STATUS")
    query(conn, "FLUSH TABLES WITH READ LOCK")
    try:
        query(conn, "START TRANSACTION WITH CONSISTENT SNAPSHOT")
        status = query(conn, status_sql)
        gtid, server_id, now = query(conn, "SELECT @@gtid_executed, @@server_id, "
                                           "UTC_TIMESTAMP(6)")[0]
        settle(conn)
    finally:
        query(conn, "UNLOCK TABLES")
    if not status or not _text(status[0][0]):
        raise SnapshotError("the server has no binary log position (is log_bin on?)")
    return SnapshotPoint(_text(status[0][0]), int(_text(status[0][1])), _text(gtid) or None,
                         int(_text(server_id)), _utc_micros(now))


def describe(conn, table: SourceTable) -> tuple[str, list]:
    """(SHOW CREATE TABLE text, values.SourceColumn list in ordinal order)."""
    create = _text(query(conn, f"SHOW CREATE TABLE {quote_identifier(table.database)}."
                               f"{quote_identifier(table.name)}")[0][1])
    columns = [values.source_column(row)
               for row in query(conn, values.COLUMNS_QUERY, (table.database, table.name))]
    return create, sorted(columns, key=lambda c: c.ordinal)


def select_statement(table: SourceTable, columns: list) -> str:
    exprs = ", ".join(values.select_expression(c) for c in columns)
    return f"SELECT {exprs} FROM {quote_identifier(table.database)}.{quote_identifier(table.name)}"


def stream_batches(conn, statement: str, columns: list, max_bytes: int,
                   max_rows: int = DEFAULT_CHUNK_ROWS) -> Iterator[pa.RecordBatch]:
    """The SELECT's rows as the server sends them, in batches of chunk_values' layout of at most
    max_rows rows and about max_bytes / 2 of values (one batch held at a time, wide rows come a
    few at a time), read by the compiled row reader (libs/snapshot/row_stream.py)."""
    if row_stream.NATIVE:
        packets = pymysql_wire.RowPackets(conn, statement)
        yield from row_stream.batches(packets, columns, max_rows=max_rows, max_bytes=max(1, max_bytes // 2))
        return
    with SSCursor(conn) as cur:  # unbuffered: rows are read as they are fetched
        cur.execute(statement)
        fetch_rows = FETCH_ROWS
        while rows := cur.fetchmany(fetch_rows):
            batch = chunk_values.batch(columns, rows)
            average = max(1, int(row_sizes(batch).mean()))
            fetch_rows = max(1, min(FETCH_ROWS, max_bytes // (2 * average)))
            yield batch


@dataclass(frozen=True)
class Run:
    """One run: its id and consistent point, stamped on each of its records."""

    source: str
    snapshot_id: str
    point: SnapshotPoint
    chunk_rows: int = DEFAULT_CHUNK_ROWS
    chunk_bytes: int = DEFAULT_CHUNK_BYTES
    progress_s: float = 5.0

    def _head(self, remaining: list[str]) -> dict:
        p = self.point
        return dict(snapshot_id=self.snapshot_id, binlog_file=p.file, binlog_pos=p.pos,
                    server_id=p.server_id, snapshot_ts=p.ts_us, gtid=p.gtid, tables=tuple(remaining))

    def record(self, kind: str, remaining: list[str], **fields) -> SnapshotRecord:
        return SnapshotRecord(kind, **self._head(remaining), **fields)

    def chunk(self, remaining: list[str], columns, rows, **fields) -> SnapshotRecord:
        """A `rows` record: the server's bytes as they came (libs/snapshot/chunk_values.py)."""
        return SnapshotRecord.chunk(tuple(columns), rows, **self._head(remaining), **fields)


def run_records(conn, run: Run, tables: list[SourceTable]) -> Iterator[SnapshotRecord]:
    """begin, per table: table, rows..., table_end; then end. `tables` of every record = the
    run's tables not finished yet (a table's own records include it until its table_end), each
    as libs/contracts/table_names.table_key's text."""
    remaining = [t.pair.key() for t in tables]
    yield run.record(BEGIN, remaining)
    for table in tables:
        try:
            yield from _table_records(conn, run, table, remaining)
        except (MySQLError, row_stream.RowStreamError) as exc:
            reason = error_text(exc) if isinstance(exc, MySQLError) else str(exc)
            raise SnapshotError(f"snapshot of table {table.pair.key()} failed: {reason}",
                                source=run.source, file=run.point.file,
                                pos=run.point.pos) from None
    yield run.record(END, remaining)


def _table_records(conn, run: Run, table: SourceTable, remaining: list[str]):
    where = dict(database=table.database, table=table.name)
    create, columns = describe(conn, table)
    yield run.record(TABLE, remaining, create_table=create, **where)
    statement = select_statement(table, columns)
    progress = TableProgress(run.source, table.pair.key(), table.estimated_rows,
                             interval_s=run.progress_s)
    count = 0
    batches = stream_batches(conn, statement, columns, run.chunk_bytes, run.chunk_rows)
    for no, chunk in enumerate(cut_chunks(batches, max_rows=run.chunk_rows, max_bytes=run.chunk_bytes)):
        count += chunk.num_rows
        progress.add(chunk.num_rows)
        yield run.chunk(remaining, columns, chunk, statement=statement, chunk_no=no, **where)
    remaining.remove(table.pair.key())
    yield run.record(TABLE_END, remaining, row_count=count, **where)
    progress.report()

"""Every table of a snapshot run is read with its definition at the run's position P (issue #38
item 5), by holding the tables' metadata locks from before P to the run's end.

InnoDB's consistent snapshot is a read view of rows, not of table definitions. Measured on
MariaDB 10.11: after `START TRANSACTION WITH CONSISTENT SNAPSHOT`, an instant ALTER committed by
another session (`ADD COLUMN added INT DEFAULT 5`, `DROP COLUMN v`) is seen by the snapshot
(SHOW CREATE TABLE after the ALTER, the old rows in the new layout), though the binlog has the
ALTER after P; a rebuilding ALTER (`..., FORCE`) fails the table's SELECT with `1412 Table
definition has changed`.

A statement that opens a table inside a transaction takes a shared metadata lock held until the
transaction ends; every DDL needs the table's exclusive lock to commit (measured: instant and
rebuilding ALTERs wait for it). `SELECT 1 FROM t LIMIT 0` takes it and reads no row (what
mariadb-backup's --lock-ddl-per-table does). The snapshot connection can take its locks only
after its read view opened; from before P until then a guard connection holds them (MariaDB;
on MySQL the global read lock held while P is read does that, libs/snapshot/source.py):

    guard:    START TRANSACTION; SELECT 1 FROM t LIMIT 0, each table (waits while a DDL runs on it)
    snapshot: START TRANSACTION WITH CONSISTENT SNAPSHOT ... P
    snapshot: SET STATEMENT lock_wait_timeout = 0 FOR SELECT 1 FROM t LIMIT 0, each table
    snapshot: the tables listed again: the same set
    guard:    ROLLBACK (the connection is closed)

No DDL on a listed table commits between the guard's locks and the snapshot's, so the SHOW CREATE
TABLE the run reads later is each table's definition at P. A DDL that arrived meanwhile waits for
the guard, and the server grants a waiting exclusive lock before a shared one asked after it: the
snapshot's lock would wait for the guard, which waits for the snapshot. So it is asked without
waiting; when it fails, the attempt is rolled back (the DDL then commits) and made again at a new
P, LOCK_ATTEMPTS times at most. A table created or dropped meanwhile changes the listed set: again
too. After the last attempt one line names the table and the way past.

The cost, stated in README "Onboarding": a DDL on any table of the run waits until the run ends
(as it already did on the tables read so far, whose SELECT holds the same lock; ROLLBACK TO
SAVEPOINT does not release them on 10.11, measured), and while it waits the server queues every
later read and write of that table behind it, until the run ends or the DDL's lock_wait_timeout.
"""
from __future__ import annotations

from typing import Callable

from pymysql.err import MySQLError

from libs.source.replica_source import error_text, is_mariadb
from libs.snapshot import source
from libs.snapshot.oversized import exclude_regex
from libs.contracts.sql_names import quote_identifier
from libs.contracts.table_names import TableName

LOCK_ATTEMPTS = 5
LOCK_WAIT_TIMEOUT, DEADLOCK, NO_SUCH_TABLE = 1205, 1213, 1146
# what a DDL in the window gives: the no-wait lock fails; the guard was chosen as a deadlock's
# victim (RENAME of several tables); the table was dropped after it was listed
MOVED_CODES = (LOCK_WAIT_TIMEOUT, DEADLOCK, NO_SUCH_TABLE)


class _Moved(Exception):
    """A table's definition or the set of tables changed while the attempt opened."""

    def __init__(self, table: TableName, why: str):
        super().__init__(why)
        self.table, self.why = table, why


def lock_statement(table: source.SourceTable, wait: bool) -> str:
    sql = f"SELECT 1 FROM {quote_identifier(table.database)}.{quote_identifier(table.name)} LIMIT 0"
    return sql if wait else f"SET STATEMENT lock_wait_timeout = 0 FOR {sql}"


def open_locked(conn, tables_now: Callable[[], list], guard_connect: Callable[[], object],
                name: str) -> tuple[source.SnapshotPoint, list]:
    """Open the run's snapshot on `conn` with every table of `tables_now()` locked (module
    docstring): (P, the tables). `guard_connect` opens the guard connection (MariaDB only)."""
    mariadb = is_mariadb(conn)
    moved = None
    for _ in range(LOCK_ATTEMPTS):
        tables = tables_now()
        guard = guard_connect() if mariadb else None
        try:
            if guard is not None:
                source.query(guard, "START TRANSACTION")
                _lock(guard, tables, wait=True)
            point = source.open_snapshot(conn, settle=lambda c: _settle(c, tables, tables_now, mariadb))
            return point, tables
        except _Moved as exc:
            moved = exc
            source.query(conn, "ROLLBACK")
        finally:
            if guard is not None:
                guard.close()  # ends its transaction: its locks go
    raise source.SnapshotError(
        f"snapshot: table {moved.table.quoted()} changed while the snapshot opened ({moved.why}), "
        f"{LOCK_ATTEMPTS} times in a row; run again once the DDL on it is done, or leave it out with "
        f"--exclude {exclude_regex(moved.table)}", source=name)


def _settle(conn, tables: list, tables_now: Callable[[], list], mariadb: bool) -> None:
    """Inside the snapshot's transaction: lock every table without waiting (a wait is a DDL queued
    behind the guard), then check that no table came or went since they were listed."""
    _lock(conn, tables, wait=not mariadb)
    listed, now = {t.pair for t in tables}, {t.pair for t in tables_now()}
    if listed != now:
        table = min(listed ^ now)
        raise _Moved(table, "created" if table in now else "dropped")


def _lock(conn, tables: list, wait: bool) -> None:
    for table in tables:
        try:
            source.query(conn, lock_statement(table, wait))
        except MySQLError as exc:
            code = exc.args[0] if exc.args else None
            if code not in MOVED_CODES:
                raise
            why = ("a DDL statement waits for it" if code == LOCK_WAIT_TIMEOUT and not wait
                   else error_text(exc))
            raise _Moved(table.pair, why) from None

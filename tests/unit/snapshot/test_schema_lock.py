"""libs/snapshot/schema_lock.py against fake connections that record every statement: which
connection locks which table when, and the attempts made again after a DDL or a table created or
dropped while the snapshot opened (issue #38 item 5; the real server: tests/integration/snapshot/
test_ddl_during_snapshot.py)."""
from __future__ import annotations

import itertools

import pytest
from pymysql.err import OperationalError

from libs.source.privileges import SourceAccessError
from libs.snapshot import schema_lock, source
from tests.unit.snapshot.test_snapshot_source import FakeConn, mariadb_conn, mysql_conn

A, B = source.SourceTable("d", "a"), source.SourceTable("d", "b.c")
LOCK_A, LOCK_B = "SELECT 1 FROM `d`.`a` LIMIT 0", "SELECT 1 FROM `d`.`b.c` LIMIT 0"
NOWAIT = "SET STATEMENT lock_wait_timeout = 0 FOR "


class Guards:
    """The guard connections opened, in order."""

    def __init__(self):
        self.opened: list[FakeConn] = []

    def __call__(self) -> FakeConn:
        self.opened.append(FakeConn("10.11.19-MariaDB", {}))
        return self.opened[-1]


def listings(*answers):
    """tables_now: each call the next answer (the last one again when they run out)."""
    calls = []

    def tables_now():
        calls.append(1)
        return list(answers[min(len(calls), len(answers)) - 1])
    return tables_now


def failing_once(code: int):
    """An answer that is error `code` the first time, then an empty result."""
    calls = []

    def answer(_args):
        calls.append(1)
        return OperationalError(code, "Lock wait timeout exceeded") if len(calls) == 1 else []
    return answer


def test_mariadb_the_guard_holds_the_locks_until_the_snapshot_has_its_own():
    conn, guards = mariadb_conn(), Guards()
    point, tables = schema_lock.open_locked(conn, listings([A, B]), guards, "src")
    assert tables == [A, B] and point.file == "mdb-bin.000003" and point.pos == 1234
    (guard,) = guards.opened
    assert guard.statements == ["START TRANSACTION", LOCK_A, LOCK_B] and guard.closed
    start = conn.statements.index("START TRANSACTION WITH CONSISTENT SNAPSHOT")
    assert conn.statements[start + 3:] == [NOWAIT + LOCK_A, NOWAIT + LOCK_B]  # after P is read
    assert "ROLLBACK" not in conn.statements


def test_mariadb_a_ddl_queued_behind_the_guard_makes_the_attempt_again():
    conn, guards = mariadb_conn([b"0-1-10"] * 4), Guards()
    conn.answers = {NOWAIT + LOCK_B: failing_once(schema_lock.LOCK_WAIT_TIMEOUT), **conn.answers}
    schema_lock.open_locked(conn, listings([A, B]), guards, "src")
    assert conn.statements.count("START TRANSACTION WITH CONSISTENT SNAPSHOT") == 2
    assert conn.statements.count("ROLLBACK") == 1  # the first attempt's transaction
    assert len(guards.opened) == 2 and all(g.closed for g in guards.opened)


@pytest.mark.parametrize("first, then", [([A], [A, B]), ([A, B], [B])])
def test_a_table_created_or_dropped_while_the_snapshot_opened_makes_it_again(first, then):
    conn = mariadb_conn([b"0-1-10"] * 4)
    _point, tables = schema_lock.open_locked(conn, listings(first, then, then), Guards(), "src")
    assert tables == then and conn.statements.count("ROLLBACK") == 1


def test_a_table_that_keeps_changing_is_one_line_naming_it_and_the_way_past():
    conn = mariadb_conn([b"0-1-10"] * (2 * schema_lock.LOCK_ATTEMPTS))
    conn.answers = {NOWAIT + LOCK_B: OperationalError(schema_lock.LOCK_WAIT_TIMEOUT, "Lock wait timeout"),
                    **conn.answers}
    with pytest.raises(source.SnapshotError) as err:
        schema_lock.open_locked(conn, listings([A, B]), Guards(), "src")
    line = str(err.value)
    assert "\n" not in line and "table `d`.`b.c` changed while the snapshot opened" in line
    assert "a DDL statement waits for it" in line and r"--exclude 'd\.b\.c'" in line
    assert "(source src)" in line
    assert conn.statements.count("ROLLBACK") == schema_lock.LOCK_ATTEMPTS


def test_the_guard_waiting_for_a_dropped_table_makes_it_again():
    conn, guards = mariadb_conn([b"0-1-10"] * 2), Guards()

    def guard():
        made = guards()
        if len(guards.opened) == 1:
            made.answers = {LOCK_B: OperationalError(schema_lock.NO_SUCH_TABLE,
                                                     "Table 'd.b.c' doesn't exist")}
        return made
    _point, tables = schema_lock.open_locked(conn, listings([A, B], [A]), guard, "src")
    assert tables == [A] and guards.opened[0].statements[-1] == LOCK_B


def test_any_other_error_is_not_made_again():
    """Not retried: a refusal for want of a privilege is its one line (libs/source/privileges.py)."""
    conn = mariadb_conn()
    conn.answers = {NOWAIT + LOCK_A: OperationalError(1142, "SELECT command denied"), **conn.answers}
    with pytest.raises(SourceAccessError, match="needs SELECT"):
        schema_lock.open_locked(conn, listings([A]), Guards(), "src")
    assert conn.statements.count(NOWAIT + LOCK_A) == 1


def test_mysql_locks_the_tables_under_the_global_read_lock_with_no_guard():
    conn, guards = mysql_conn("8.0.36"), Guards()
    _point, tables = schema_lock.open_locked(conn, listings([A, B]), guards, "src")
    assert tables == [A, B] and not guards.opened
    unlock = conn.statements.index("UNLOCK TABLES")
    assert conn.statements[unlock - 2:unlock] == [LOCK_A, LOCK_B]
    assert conn.statements.index("FLUSH TABLES WITH READ LOCK") < unlock - 2


def test_a_table_that_keeps_coming_while_the_snapshot_opens_is_named_created():
    conn = mariadb_conn([b"0-1-10"] * (2 * schema_lock.LOCK_ATTEMPTS))
    flip = itertools.cycle([[A], [A, B]])  # each attempt: listed without it, then with it
    with pytest.raises(source.SnapshotError,
                       match=r"table `d`\.`b\.c` changed while the snapshot opened \(created\)"):
        schema_lock.open_locked(conn, lambda: next(flip), Guards(), "src")

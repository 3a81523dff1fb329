"""Issue #38 item 5 on a real MariaDB 10.11, broker and job: an ALTER committed from another
session after the snapshot's read view opened and before its table is read.

An instant ALTER (`ADD COLUMN added INT DEFAULT 5`, then `DROP COLUMN v`) is visible to the
older read view: the `table` record carried the post-ALTER SHOW CREATE TABLE and the rows the new
layout, both stamped with P, while the ALTER itself came from the binlog after P (the history
refused it) and the rows logged between P and the ALTER, in the old layout, no longer fit. A
rebuilding ALTER (`..., FORCE`) failed the run with `1412 Table definition has changed`.

Deterministic, no sleep: the run is the real one (pipelines/ship.py). After the first return of a
function of libs/snapshot/source.py (HOOKS: `_mariadb_attempt` returns with the read view open and
P read, `open_snapshot` returns the run's P) a second session commits a row in the old layout to
two tables, then starts each one's ALTERs on a connection of its own, and the run goes on once
every ALTER has committed or is seen waiting for the table's metadata lock
(information_schema.PROCESSLIST).

The end result is asked of the server: each `table` record's schema is the server's at the
record's P (the ALTERs' places in the binlog say which), and after the job the schema history's
last version and the Delta table (columns and rows) equal the server's SHOW CREATE TABLE and
SELECT, with nothing quarantined.
"""
from __future__ import annotations

import os
import threading
import time

import pytest

from libs.binlog.framing import iter_events
from libs.stream.boundary import query_text
from libs.reads.lineage_sql import delta_path_ref, schema_changes_of_table
from libs.snapshot import source
from libs.tables.system_tables import QUARANTINE, SCHEMA_HISTORY

from ..schema_history.helpers import (delta_table, job_config, replicate, server_table, server_target,
                                      ship_snapshot)
from .helpers import topic_records

pytestmark = pytest.mark.integration

CREATE = "CREATE TABLE {db}.{t} (id INT PRIMARY KEY, v VARCHAR(10), n INT)"
ALTERS = {"instant": ["ALTER TABLE {db}.{t} ADD COLUMN added INT DEFAULT 5",
                      "ALTER TABLE {db}.{t} DROP COLUMN v"],
          "rebuilt": ["ALTER TABLE {db}.{t} ADD COLUMN added INT DEFAULT 5, DROP COLUMN v, FORCE"]}
# the function of libs/snapshot/source.py after whose first return each table is altered
HOOKS = {"_mariadb_attempt": ("instant_in_window", "rebuilt_in_window"),
         "open_snapshot": ("instant_after_open", "rebuilt_after_open")}
TABLES = [t for tables in HOOKS.values() for t in tables]
WAITING = "Waiting for table metadata lock"


class AlterSession(threading.Thread):
    """One table's ALTERs, in order, on a connection of their own; each one's server schema after it."""

    def __init__(self, db, database: str, table: str):
        super().__init__(daemon=True)
        self.conn = db.connect()
        self.statements = [s.format(db=database, t=table) for s in ALTERS[table.split("_")[0]]]
        self.after: dict[str, str] = {}
        self.error: Exception | None = None

    def run(self):
        try:
            with self.conn.cursor() as cur:
                for statement in self.statements:
                    cur.execute(statement)
                    cur.execute(f"SHOW CREATE TABLE {statement.split()[2]}")
                    self.after[statement] = cur.fetchone()[1]
        except Exception as exc:  # noqa: BLE001 - surfaced by the test
            self.error = exc
        finally:
            self.conn.close()


def _commit_then_alter(db, database: str, tables) -> list[AlterSession]:
    """A row in the old layout committed after P, then the ALTERs started; returns once each
    has committed or waits for its table's metadata lock."""
    for table in tables:
        db.query(f"INSERT INTO {database}.{table} VALUES (4, 'after P', 40)")
        db.query(f"UPDATE {database}.{table} SET v = 'changed', n = 11 WHERE id = 1")
    sessions = [AlterSession(db, database, table) for table in tables]
    for session in sessions:
        session.start()
    deadline = time.monotonic() + 60
    for session in sessions:
        while session.is_alive() and db.query(
                "SELECT STATE FROM information_schema.PROCESSLIST WHERE ID = %s",
                (session.conn.thread_id(),)) != [(WAITING,)]:
            assert time.monotonic() < deadline, f"{session.statements} neither committed nor waited"
            time.sleep(0.005)
    return sessions


def _alter_positions(db) -> dict[str, tuple[str, int]]:
    """Each ALTER statement's (binlog file, position) in the server's binlog."""
    found = {}
    for (file, _size) in db.query("SHOW BINARY LOGS"):
        for event in iter_events(db.binlog_path(file).read_bytes(), file=file):
            sql = query_text(event)
            if sql is not None and sql.startswith("ALTER TABLE"):
                found[sql] = (file, event.pos)
    return found


def test_an_alter_after_the_read_view_opened_never_reaches_the_snapshot_before_its_position(
        mariadb, kafka_broker, topic, spark, tmp_path, monkeypatch):
    name = "h38_ddl_in_snapshot"
    mariadb.sql(f"DROP DATABASE IF EXISTS {name}; CREATE DATABASE {name};" + "".join(
        CREATE.format(db=name, t=t)
        + f"; INSERT INTO {name}.{t} VALUES (1, 'one', 1), (2, 'two', 2), (3, NULL, 3);"
        for t in TABLES))
    before = {t: mariadb.query(f"SHOW CREATE TABLE {name}.{t}")[0][1] for t in TABLES}
    sessions: dict[str, list[AlterSession]] = {}
    for at, tables in HOOKS.items():
        monkeypatch.setattr(source, at, _hooked(getattr(source, at), lambda tables=tables: _commit_then_alter(
            mariadb, name, tables), sessions.setdefault(at, [])))
    ship_snapshot(mariadb, kafka_broker, topic, name)
    monkeypatch.undo()
    sessions = [session for fired in sessions.values() for session in fired]
    assert len(sessions) == len(TABLES)
    for session in sessions:
        session.join(60)
        assert not session.is_alive() and session.error is None, (session.statements, session.error)
    for table in TABLES:  # rows in the new layout, after the ALTERs
        mariadb.query(f"INSERT INTO {name}.{table} (id, added, n) VALUES (5, 55, 50)")
        mariadb.query(f"UPDATE {name}.{table} SET added = 44 WHERE id = 4")
    ship_snapshot(mariadb, kafka_broker, topic, name)  # the binlog to its end

    _records, snaps = topic_records(kafka_broker.bootstrap, topic, name)
    altered = _alter_positions(mariadb)
    for session in sessions:
        table = session.statements[0].split()[2].split(".")[1]
        (record,) = [s for _r, s in snaps if s.kind == "table" and s.table == table]
        p = (record.binlog_file, record.binlog_pos)
        expected = before[table]
        for statement in session.statements:  # the schema after the last ALTER before P
            if altered[statement] < p:
                expected = session.after[statement]
        assert server_target(record.create_table) == server_target(expected), (table, p, altered)

    cfg = job_config(kafka_broker, topic, tmp_path, name)
    replicate(spark, cfg)
    root = cfg.delta_root
    assert spark.read.format("delta").load(f"{root}/{QUARANTINE}").count() == 0
    history = delta_path_ref(f"{root}/{SCHEMA_HISTORY}")
    for table in TABLES:
        server = server_table(mariadb, f"{name}.{table}")
        assert server[0] == ["id", "n", "added"] and len(server[1]) == 5  # the workload ran as written
        assert delta_table(spark, f"{root}/{name}__{table}") == server, table
        sql, args = schema_changes_of_table(history, name, table)
        versions = spark.sql(sql, args=args).collect() if os.path.isdir(f"{root}/{SCHEMA_HISTORY}") else []
        assert all(v["error"] is None for v in versions), [v["error"] for v in versions]
        if versions:  # DDL after the snapshot: the history's last version is the server's table
            create = mariadb.query(f"SHOW CREATE TABLE {name}.{table}")[0][1]
            assert server_target(versions[-1]["create_table"]) == server_target(create), table


def _hooked(original, action, fired: list):
    """`original`, which runs `action` after its first return and keeps what it gave in `fired`."""
    def hooked(*args, **kwargs):
        result = original(*args, **kwargs)
        if not fired:
            fired.extend(action())
        return result
    return hooked

"""The schema history built from a real MariaDB binlog alone equals the server's own SHOW CREATE
TABLE after every DDL (issue #17: where the binlog is ambiguous, the server's table is the truth).

Every DDL kind of the issue runs on the session's MariaDB; after each one the test keeps the
binlog position and the server's SHOW CREATE TABLE of the tables it touched. The DDL statements
are then read back from the binlog file (Query events, as the job sees them: the server's text
and the session's database), fed to SchemaHistory, and the version in force at each kept
position must be the same target as the server's table: same columns in the same order with
the same types, defaults and charsets, same primary key, same unique keys."""

import pytest

from libs.binlog.framing import iter_events
from libs.stream.boundary import QueryKind, query_kind, query_text
from libs.schema_history.history import SchemaHistory
from libs.schema_history.table_schema import TableSchema
from libs.contracts.position import BinlogPosition

from .helpers import server_target

pytestmark = pytest.mark.integration

DB = "sh_ddl"
# (statement, tables whose SHOW CREATE TABLE is compared after it; a table name alone: gone)
STEPS = [
    ("CREATE TABLE t (id INT PRIMARY KEY, a VARCHAR(10) DEFAULT 'x', b INT) DEFAULT CHARSET=latin1", ["t"]),
    ("ALTER TABLE t ADD COLUMN c INT DEFAULT 5 AFTER id", ["t"]),
    ("ALTER TABLE t ADD f DATETIME(3) FIRST", ["t"]),
    ("ALTER TABLE t ADD (g TEXT, h ENUM('p','q') DEFAULT 'q')", ["t"]),
    ("ALTER TABLE t DROP COLUMN b, ADD UNIQUE KEY uc (c)", ["t"]),
    ("ALTER TABLE t CHANGE COLUMN a a2 VARCHAR(20) NOT NULL DEFAULT 'y' AFTER g", ["t"]),
    ("ALTER TABLE t MODIFY c BIGINT UNSIGNED DEFAULT 9", ["t"]),
    ("ALTER TABLE t RENAME COLUMN g TO g2", ["t"]),
    ("ALTER TABLE t ALTER COLUMN h SET DEFAULT 'p', ALTER f DROP DEFAULT", ["t"]),
    ("ALTER TABLE t DEFAULT CHARSET = utf8mb4, ADD v VARCHAR(3)", ["t"]),
    ("ALTER TABLE t CONVERT TO CHARACTER SET utf8mb4", ["t"]),
    ("ALTER TABLE t DROP PRIMARY KEY, ADD PRIMARY KEY (id, c)", ["t"]),
    ("ALTER TABLE t DROP INDEX uc, ADD UNIQUE (v), ENGINE=InnoDB", ["t"]),
    ("CREATE TABLE u (k INT NOT NULL, w TIMESTAMP(6) NULL, UNIQUE KEY (k))", ["u"]),
    ("CREATE TABLE t_like LIKE t", ["t_like"]),
    ("TRUNCATE TABLE t", ["t"]),
    ("RENAME TABLE t TO tmp, u TO t, tmp TO u", ["t", "u", "tmp"]),
    ("ALTER TABLE u RENAME TO u2", ["u2", "u"]),
    ("CREATE UNIQUE INDEX ui ON t_like (v)", ["t_like"]),
    ("DROP INDEX ui ON t_like", ["t_like"]),
    ("DROP TABLE IF EXISTS t_like, nope", ["t_like"]),
    ("CREATE TABLE t_like (z INT)", ["t_like"]),
]


def _server_schema(mariadb, table):
    found = mariadb.query(f"SHOW TABLES FROM {DB} LIKE '{table}'")
    if not found:
        return None
    return mariadb.query(f"SHOW CREATE TABLE {DB}.{table}")[0][1]


def test_the_history_from_the_binlog_equals_the_server_after_every_ddl(mariadb):
    mariadb.sql(f"DROP DATABASE IF EXISTS {DB}; CREATE DATABASE {DB}")
    file = mariadb.flush_binlogs()
    expected = []
    for statement, tables in STEPS:
        mariadb.sql(statement, database=DB)
        _, pos = mariadb.master_status()
        expected.append((statement, pos, {t: _server_schema(mariadb, t) for t in tables}))

    history = SchemaHistory()
    ddl_seen = 0
    for event in iter_events(mariadb.binlog_path(file).read_bytes(), file=file):
        sql = query_text(event)
        if sql is None or query_kind(sql) is not QueryKind.STATEMENT:
            continue
        history.apply("src", BinlogPosition(file, event.pos), sql, event.body.db or "")
        ddl_seen += 1
    assert ddl_seen == len(STEPS)

    for statement, pos, tables in expected:
        for table, server in tables.items():
            version = history.at("src", DB, table, BinlogPosition(file, pos))
            if server is None:
                assert version is None, f"after {statement!r}: {table} exists in the history only"
                continue
            assert version is not None, f"after {statement!r}: {table} is missing from the history"
            assert (server_target(version.create_table())
                    == server_target(server)), f"after {statement!r}: {table}"
            assert version.column_names == TableSchema.parse(server, DB).column_names

"""The schema history reads a DDL as the server executes it (issue #38 items 2, 3): executable
comments (`/*!NNNNN ... */`, `/*M!NNNNNN ... */`, by the source's server version) and SERIAL.

Each form runs once on the session's MariaDB, on a table of its own; its Query event is then read
back from the binlog with the Format_description's server_version before it, as the job reads
them (libs/stages/assembly.py segment_ddl), and fed to SchemaHistory. The version after it must
be the server's SHOW CREATE TABLE read as the snapshot path reads it (TableSchema.parse): same
column names in order, types, nullability, AUTO_INCREMENT, primary key and named unique keys."""

import re

import pytest

from libs.binlog.framing import iter_events
from libs.stream.boundary import QueryKind, query_kind, query_text
from libs.schema_history.history import HistoryError, SchemaHistory
from libs.schema_history.table_schema import TableSchema
from libs.contracts.position import BinlogPosition

pytestmark = pytest.mark.integration

DB = "sh_exec"
BASE = "CREATE TABLE {t} (id INT PRIMARY KEY, v INT)"
# (id, DDL on table {t}: it starts as BASE unless the DDL creates it)
FORMS = [
    ("add_in_comment", "ALTER TABLE {t} ADD a INT /*!40000 , ADD b INT */"),
    ("whole_statement", "/*!40000 ALTER TABLE {t} ADD b INT */"),
    ("drop_in_comment", "ALTER TABLE {t} /*!40000 DROP COLUMN v */"),
    ("change_in_comment", "ALTER TABLE {t} /*!40000 CHANGE v w INT */"),
    ("no_version", "ALTER TABLE {t} /*! ADD b INT */"),
    ("future_version", "ALTER TABLE {t} ADD a INT /*!99999 , ADD b INT */"),
    ("mariadb_only", "ALTER TABLE {t} ADD a INT /*M!100000 , ADD b INT */"),
    ("mariadb_only_future", "ALTER TABLE {t} ADD a INT /*M!999999 , ADD b INT */"),
    ("mysql57_range", "ALTER TABLE {t} ADD a INT /*!50700 , ADD b INT */"),
    ("mysql57_range_mariadb_only", "ALTER TABLE {t} ADD a INT /*M!50700 , ADD b INT */"),
    ("plain_comment_inside", "ALTER TABLE {t} ADD a INT /*!40000 , ADD b INT /* c */ */"),
    ("skipped_with_comment_inside", "ALTER TABLE {t} ADD a INT /*!99999 , ADD b INT /* c */ */"),
    ("comment_text_in_string", "ALTER TABLE {t} ADD s VARCHAR(20) DEFAULT '/*!40000 x */'"),
    ("create_with_comments",
     "CREATE TABLE {t} (id INT PRIMARY KEY /*!40000 , c INT NOT NULL */) /*!40000 ENGINE=InnoDB */"),
    ("add_serial", "ALTER TABLE {t} ADD c SERIAL"),
    ("change_to_serial", "ALTER TABLE {t} CHANGE v w SERIAL"),
    ("create_serial", "CREATE TABLE {t} (c SERIAL, d VARCHAR(5))"),
    ("add_serial_default_value", "ALTER TABLE {t} ADD k INT SERIAL DEFAULT VALUE FIRST"),
    ("modify_serial_default_value", "ALTER TABLE {t} MODIFY v BIGINT SERIAL DEFAULT VALUE"),
    ("create_serial_default_value", "CREATE TABLE {t} (k SMALLINT SERIAL DEFAULT VALUE, d INT)"),
    ("add_after", "ALTER TABLE {t} ADD COLUMN c INT DEFAULT 5 AFTER id"),
    ("drop_and_unique", "ALTER TABLE {t} DROP COLUMN v, ADD UNIQUE KEY uk (id)"),
    ("change", "ALTER TABLE {t} CHANGE v v2 BIGINT NOT NULL DEFAULT 3"),
    ("plain_comment", "ALTER TABLE {t} /* ADD x INT */ ADD b INT"),
]


def _table(k: int) -> str:
    return f"t{k}"


@pytest.fixture(scope="module")
def read_back(mariadb):
    """Per form: (the server's SHOW CREATE TABLE after it, the history's version after it)."""
    mariadb.sql(f"DROP DATABASE IF EXISTS {DB}; CREATE DATABASE {DB}")
    file = mariadb.flush_binlogs()
    after = {}
    conn = mariadb.connect(database=DB)  # sent verbatim (the mariadb client drops comments)
    try:
        with conn.cursor() as cur:
            for k, (_name, ddl) in enumerate(FORMS):
                if not ddl.startswith("CREATE"):
                    cur.execute(BASE.format(t=_table(k)))
                cur.execute(ddl.format(t=_table(k)))
                _, pos = mariadb.master_status()
                cur.execute(f"SHOW CREATE TABLE {DB}.{_table(k)}")
                after[k] = (pos, cur.fetchone()[1])
    finally:
        conn.close()

    history, server_version = SchemaHistory(), None
    for event in iter_events(mariadb.binlog_path(file).read_bytes(), file=file):
        server_version = getattr(event.body, "server_version", server_version)  # the Format_description's
        sql = query_text(event)
        if sql is not None and query_kind(sql) is QueryKind.STATEMENT:
            try:  # as the job does (pipelines/apply/schema_history_table.py)
                history.apply("src", BinlogPosition(file, event.pos), sql, event.body.db or "",
                              server_version)
            except HistoryError as exc:
                history.refuse("src", exc.position, exc.names, sql, exc.reason)
    assert server_version and "mariadb" in server_version.lower()
    return {k: (server, history.at("src", DB, _table(k), BinlogPosition(file, pos)))
            for k, (pos, server) in after.items()}


def _shape(schema: TableSchema):
    """What the comparison takes of a version: columns (name, type without an integer's display
    width, nullable, auto_increment), primary key, unique keys by name."""
    ddl = schema.table_ddl("compared")
    columns = [(c.name, re.sub(r"^(\w*INT)\(\d+\)", r"\1", c.mysql_type), c.nullable, c.auto_increment)
               for c in ddl.columns]
    return columns, schema.primary_key, sorted((n.lower(), tuple(c.lower() for c in cols))
                                               for n, cols in schema.unique_keys)


@pytest.mark.parametrize("k", range(len(FORMS)), ids=[name for name, _ in FORMS])
def test_the_history_reads_the_ddl_as_the_server_executed_it(read_back, k):
    server, version = read_back[k]
    assert version is not None, f"{FORMS[k][1]}: the history has no version of {_table(k)} (refused)"
    assert _shape(version) == _shape(TableSchema.parse(server, DB)), f"{FORMS[k][1]}\nserver: {server}"

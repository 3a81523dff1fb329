"""libs/schema_history/executed_text.py and its readers: a DDL read as the source server executes
it (issue #38 items 2, 3). What a MariaDB 10.11 server does with each form is asked of the server
itself in tests/integration/schema_history/test_ddl_as_server_reads.py; here: the rules no local
server can show (a MySQL source, an unknown server version), the lexical corners, and that every
reader of a DDL change record reads it with the version the history read it with."""
from __future__ import annotations

import re

import pytest

from libs.contracts.change import Op
from libs.apply.plan import group_changes, with_ddl_truncates
from tests.change_builders import change_of
from libs.stream.assembler import InMemorySpillStore
from libs.binlog.constants import BINLOG_MAGIC, EventType
from libs.binlog.framing import iter_events
from libs.schema_history import statements as S
from libs.schema_history.column_identity import RENAME, column_steps, end_names
from libs.schema_history.executed_text import executed_text
from libs.schema_history.history import HistoryError, SchemaHistory
from libs.schema_history.table_renames import table_renames
from libs.schema_history.table_schema import TableSchema
from libs.simulator.master import Master, Session
from libs.simulator.schema import Table, int_col
from libs.simulator.sinks import FileSink
from libs.contracts.position import BinlogPosition
from libs.stages.assembly import InputFrame, assemble_group, segment_ddl

MARIADB, MYSQL = "10.11.6-MariaDB-log", "8.0.33"
BASE = TableSchema.parse("CREATE TABLE d.t (id INT PRIMARY KEY, v INT)", "d")


def columns_after(sql: str, server_version: str | None) -> tuple[str, ...]:
    changes = S.parse(sql, "d", server_version)
    schema = BASE
    for change in changes:
        if isinstance(change, S.AlterTable):
            schema = change.apply(schema)
    return schema.column_names


@pytest.mark.parametrize("sql, server_version, expected", [
    # a MySQL server: /*M! is a plain comment; /*!50700.. is read by its version (no MariaDB skip)
    ("ALTER TABLE t ADD a INT /*M!100000 , ADD b INT */", MYSQL, ("id", "v", "a")),
    ("ALTER TABLE t ADD a INT /*M! , ADD b INT */", MYSQL, ("id", "v", "a")),
    ("ALTER TABLE t ADD a INT /*!50700 , ADD b INT */", MYSQL, ("id", "v", "a", "b")),
    ("ALTER TABLE t ADD a INT /*!80034 , ADD b INT */", MYSQL, ("id", "v", "a")),
    ("ALTER TABLE t ADD a INT /*!80033 , ADD b INT */", MYSQL, ("id", "v", "a", "b")),
    # a MariaDB server: the version test at the boundary, 6 digits
    ("ALTER TABLE t ADD a INT /*!101106 , ADD b INT */", MARIADB, ("id", "v", "a", "b")),
    ("ALTER TABLE t ADD a INT /*!101107 , ADD b INT */", MARIADB, ("id", "v", "a")),
    # what is text stays text: strings, quoted identifiers, line comments
    ("ALTER TABLE t ADD `/*!40000` INT", MARIADB, ("id", "v", "/*!40000")),
    ("ALTER TABLE t ADD a VARCHAR(9) DEFAULT 'it''s /*!40000 x' /*!40000 , ADD b INT */", MARIADB,
     ("id", "v", "a", "b")),
    ("ALTER TABLE t ADD a VARCHAR(9) DEFAULT 'a\\' /*!40000 x' /*!40000 , ADD b INT */", MARIADB,
     ("id", "v", "a", "b")),
    ("ALTER TABLE t ADD a INT -- /*!40000 , ADD b INT */\n", MARIADB, ("id", "v", "a")),
    ("ALTER TABLE t ADD a INT # /*!40000 , ADD b INT */\n", MARIADB, ("id", "v", "a")),
    # a body's string may hold */
    ("ALTER TABLE t /*!40000 ADD a VARCHAR(9) DEFAULT '*/' */", MARIADB, ("id", "v", "a")),
    # no executable comment: no server version needed
    ("ALTER TABLE t /* ADD x INT */ ADD a INT", None, ("id", "v", "a")),
    ("ALTER TABLE t /*! ADD a INT */", None, ("id", "v", "a")),
])
def test_executable_comments_by_source_server(sql, server_version, expected):
    assert columns_after(sql, server_version) == expected


@pytest.mark.parametrize("sql, server_version, words", [
    ("ALTER TABLE t /*!40000 DROP v */", None, "/*!40000"),
    ("ALTER TABLE t /*M!100000 DROP v */", None, "/*M!"),
    ("ALTER TABLE t /*M! DROP v */", None, "/*M!"),
    ("ALTER TABLE t /*!40000 DROP v */", "unknown", "no x.y.z"),
    ("ALTER TABLE t /*!400000 DROP v */", MYSQL, "6-digit"),
    ("ALTER TABLE t /*!40000 DROP v", MARIADB, "not closed"),
    ("ALTER TABLE t /*!40000 DROP v /*!40000 , ADD b INT */ */", MARIADB, "inside another"),
])
def test_a_reading_that_needs_what_is_not_known_is_refused(sql, server_version, words):
    with pytest.raises(S.DdlParseError, match=re.escape(words)):
        S.parse(sql, "d", server_version)


def test_serial_default_value_only_as_three_words():
    assert executed_text("ALTER TABLE t MODIFY v INT serial Default VALUE", None) == \
        "ALTER TABLE t MODIFY v INT NOT NULL AUTO_INCREMENT UNIQUE"
    text = "ALTER TABLE t ADD `serial` INT DEFAULT 'serial default value'"
    assert executed_text(text, None) == text


def test_the_history_keeps_the_server_version_it_read_each_ddl_with():
    history = SchemaHistory()
    history.start("s", BASE, BinlogPosition("bin.1", 4))
    history.apply("s", BinlogPosition("bin.1", 100), "ALTER TABLE t /*!40000 CHANGE v w INT */", "d", MARIADB)
    (_, version), = history.added_at("s", BinlogPosition("bin.1", 100))
    assert version.server_version == MARIADB and version.schema.column_names == ("id", "w")
    assert history.server_version("s", BinlogPosition("bin.1", 100)) == MARIADB
    with pytest.raises(HistoryError, match="not known here"):
        history.apply("s", BinlogPosition("bin.1", 200), "ALTER TABLE t /*!40000 DROP w */", "d")


def _ddl(statement, table="t", pos=100):
    return change_of("ddl", source="s", database="d", table=table, statement=statement, trx_file="bin.1",
                     trx_end_pos=pos + 50, binlog_file="bin.1", binlog_pos=pos, commit_ts=0, change_seq=0)


def test_change_record_readers_read_with_the_history_server_version():
    def version_of(change):
        return MARIADB

    change = _ddl("ALTER TABLE t /*!40000 CHANGE v w INT */")
    assert column_steps(change.statement, "d", "d", "t", None, MARIADB)[0].kind == RENAME
    _, start = end_names([change], "d", "t", server_version=version_of)
    assert start.end("v") == "w"
    rename = _ddl("/*!40000 RENAME TABLE t TO u */")
    assert list(table_renames(group_changes([rename]), version_of)) == [("d", "u")]
    (out,) = with_ddl_truncates([_ddl("/*!40000 TRUNCATE TABLE t */")], server_version=version_of)
    assert out.op == Op.TRUNCATE


@pytest.mark.parametrize("flavour", ["mariadb", "mysql"])
def test_each_ddl_of_the_stream_carries_its_format_descriptions_server_version(flavour):
    sink = FileSink()
    Master([Table("t", (int_col("id", nullable=False),), primary_key=("id",))], sink, flavour=flavour,
           session=Session("ROW", "full", True))
    frames = [InputFrame(f.data, "bin.000001", f.pos) for f in sink.frames]
    records, _ = assemble_group("src", None, frames, InMemorySpillStore())
    fde = next(e for e in iter_events(BINLOG_MAGIC + b"".join(f.data for f in sink.frames), file="bin.000001")
               if e.header.type_code == EventType.FORMAT_DESCRIPTION)
    events = [e for r in records if r["kind"] == "segment" and r["ddl"] for e in segment_ddl(r)]
    assert events and {e.server_version for e in events} == {fde.body.server_version}

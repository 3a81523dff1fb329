"""Issue #38 item 1 (pure parts): a source table is its (database, table) pair. `a`.`b.c` and
`a.b`.`c` join to the same 'a.b.c'; the snapshot's table list, its remaining-tables field and
trx_ids, and a resumed run's tables keep them apart; a record written before (plain 'db.table')
still reads. Item 4: a system-versioned table is refused by name."""
from __future__ import annotations

import pytest

from libs.shipper import snapshot_run
from libs.snapshot import source
from libs.snapshot.protocol import RUN, StartPlan
from libs.contracts.position import BinlogPosition
from libs.snapshot.record import SnapshotRecord
from libs.contracts.table_names import TableName, parse_table_key, table_key
from tests.unit.snapshot.test_snapshot_source import FakeConn

BASE = b"BASE TABLE"
DOTTED = [(b"a", b"b.c", b"1", BASE), (b"a.b", b"c", b"2", BASE), (b"d", b"e", b"3", BASE)]


@pytest.mark.parametrize("pair, text", [
    (("shop", "orders"), "shop.orders"),          # as every record before this rule wrote it
    (("a", "b.c"), "a.b.c"),                      # a '.' in the table: the first dot still splits
    (("a.b", "c"), "`a.b`.`c`"),                  # a '.' in the database: quoted
    (("`x", "y"), "```x`.`y`"),                   # a leading backtick: quoted, doubled
    (("a.b", "c`d.e"), "`a.b`.`c``d.e`"),
])
def test_table_key_reads_back_to_its_pair(pair, text):
    assert table_key(*pair) == text
    assert parse_table_key(text) == TableName(*pair)


def test_the_two_tables_joined_alike_have_two_keys():
    assert TableName("a", "b.c").joined() == TableName("a.b", "c").joined()
    assert table_key("a", "b.c") != table_key("a.b", "c")


@pytest.mark.parametrize("bad", ["nodot", "`a.b`", "`a`.b", "`a`.`b", "`a`.`b`x"])
def test_a_bad_key_is_a_value_error(bad):
    with pytest.raises(ValueError, match="table name"):
        parse_table_key(bad)


def test_list_tables_keeps_both_tables_that_join_alike():
    conn = FakeConn("10.11.19-MariaDB", {"SELECT TABLE_SCHEMA": DOTTED})
    tables = source.list_tables(conn, source.TableFilter.compile([r"a\.b\.c"]))
    assert [(t.database, t.name, t.estimated_rows) for t in tables] == [("a", "b.c", 1), ("a.b", "c", 2)]


def test_snapshot_records_name_each_table_apart():
    point = source.SnapshotPoint("mdb-bin.000001", 4, None, 1, 0)
    head = dict(snapshot_id="r1", binlog_file=point.file, binlog_pos=point.pos, server_id=1, snapshot_ts=0)
    first = SnapshotRecord("table", database="a", table="b.c", **head)
    second = SnapshotRecord("table", database="a.b", table="c", **head)
    assert first.trx_id == "snapshot:r1:a.b.c"  # as before: the row ids of ordinary names keep
    assert second.trx_id == "snapshot:r1:`a.b`.`c`"


def _resume(conn, remaining):
    return snapshot_run._run_tables(conn, StartPlan(RUN, BinlogPosition("mdb-bin.000001", 4), remaining),
                                    snapshot_run.SnapshotOptions(), "src")


def test_a_resumed_run_reads_exactly_the_tables_its_record_names():
    conn = FakeConn("10.11.19-MariaDB", {"SELECT TABLE_SCHEMA": DOTTED})
    assert [t.pair for t in _resume(conn, ("`a.b`.`c`",))] == [("a.b", "c")]
    assert [t.pair for t in _resume(conn, ("a.b.c", "d.e"))] == [("a", "b.c"), ("d", "e")]


def test_a_record_written_before_the_pair_rule_still_names_its_table():
    """Such a run joined `a.b`.`c` as 'a.b.c': with no `a`.`b.c` on the server that is the one."""
    conn = FakeConn("10.11.19-MariaDB", {"SELECT TABLE_SCHEMA": [DOTTED[1], DOTTED[2]]})
    assert [t.pair for t in _resume(conn, ("a.b.c", "gone.t"))] == [("a.b", "c")]


def test_a_system_versioned_table_is_refused_with_one_line_naming_it():
    conn = FakeConn("10.11.19-MariaDB", {"SELECT TABLE_SCHEMA": [
        (b"d", b"e", b"3", BASE), (b"d", b"hist", b"5", b"SYSTEM VERSIONED")]})
    tables = source.list_tables(conn)
    assert [(t.name, t.versioned) for t in tables] == [("e", False), ("hist", True)]
    source.refuse_versioned(tables[:1], "src")
    with pytest.raises(source.SnapshotError) as err:
        source.refuse_versioned(tables, "src")
    line = str(err.value)
    assert "\n" not in line and "`d`.`hist` is system-versioned" in line and "(source src)" in line

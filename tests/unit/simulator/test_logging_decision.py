"""WL#3303: every row of the seed's decision table drives the simulator's choice.

The table below is copied by hand from the seed (004, "Decision table"); the engines giving
each (RLC, SLC) come from the seed's "SETTINGS FOR CURRENT ENGINES": ndbcluster is row-only,
blackhole statement-only, myisam both. RLC = SLC = N is only reachable with two tables (a
row-only and a statement-only one), so those rows use INSERT .. SELECT over both.
"""
import pytest

from libs.binlog import Query, RowsQuery
from libs.simulator.schema import Table, blob, int_col
from libs.simulator.statements import Insert, InsertSelect

from .helpers import events, new_master

# Safe/unsafe, BINLOG_FORMAT, RLC, SLC -> Error/Warning, Log as  (seed 004, row by row)
SEED_TABLE = """
Safe STATEMENT N N error not_loggable
Safe STATEMENT N Y statement -
Safe STATEMENT Y N error not_loggable
Safe STATEMENT Y Y statement -
Safe MIXED N N error not_loggable
Safe MIXED N Y statement -
Safe MIXED Y N row -
Safe MIXED Y Y statement -
Safe ROW N N error not_loggable
Safe ROW N Y error not_loggable
Safe ROW Y N row -
Safe ROW Y Y row -
Unsafe STATEMENT N N error not_loggable
Unsafe STATEMENT N Y statement unsafe
Unsafe STATEMENT Y N error not_loggable
Unsafe STATEMENT Y Y statement unsafe
Unsafe MIXED N N error not_loggable
Unsafe MIXED N Y error not_loggable
Unsafe MIXED Y N row -
Unsafe MIXED Y Y row -
Unsafe ROW N N error not_loggable
Unsafe ROW N Y error not_loggable
Unsafe ROW Y N row -
Unsafe ROW Y Y row -
"""
ROWS = [line.split() for line in SEED_TABLE.strip().splitlines()]
ENGINE_FOR = {("Y", "Y"): "myisam", ("Y", "N"): "ndbcluster", ("N", "Y"): "blackhole"}


def _table(name, engine):
    return Table(name, (int_col("id", nullable=False), blob("note", text=True)),
                 primary_key=("id",), engine=engine)


def _statement(safe: bool, rlc: str, slc: str):
    if (rlc, slc) == ("N", "N"):
        tables = [_table("t_row_only", "ndbcluster"), _table("t_stmt_only", "blackhole")]
        stmt = InsertSelect("t_stmt_only", "t_row_only", ("id", "note"), {}, None if safe else 1)
        return tables, stmt
    tables = [_table("t", ENGINE_FOR[(rlc, slc)])]
    if safe:
        return tables, Insert("t", ({0: 7, 1: b"seven"},))
    # UUID(): non-deterministic, so unsafe; the master stores the value it computed
    return tables, Insert("t", ({0: 7, 1: b"6ccd780c-baba-1026-9564-5b8c656024db"},), {1: "UUID()"})


@pytest.mark.parametrize("safety,fmt,rlc,slc,action,message", ROWS,
                         ids=["-".join(r[:4]) for r in ROWS])
def test_decision_table_row_drives_logging(safety, fmt, rlc, slc, action, message):
    tables, stmt = _statement(safety == "Safe", rlc, slc)
    master, sink = new_master(tables, binlog_format=fmt)
    if (rlc, slc) == ("N", "N"):  # give the SELECT a source row (put in the model directly)
        master.model.insert("t_row_only", {0: 7, 1: b"seven"})
    start_events = len(events(sink))
    outcome = master.execute(stmt)
    assert outcome.decision == action
    assert outcome.message == (None if message == "-" else message.replace("_", " "))
    new = events(sink)[start_events:]
    sql = stmt.sql(master.model)
    if action == "error":
        # "an error is given and the statement is not executed": nothing logged, nothing changed
        assert new == []
        assert master.statements[-1]["decision"] == "error"
        if (rlc, slc) == ("Y", "N"):  # ndbcluster stores rows: the INSERT must not have run
            assert master.model.rows("t") == []
    elif action == "statement":
        queries = [e.body.sql for e in new if isinstance(e.body, Query)]
        assert sql in queries
        assert not [e for e in new if e.type_code in (19, 23, 24, 25)]
    else:
        kinds = [e.type_code for e in new]
        assert 19 in kinds and 23 in kinds  # Table_map + Write_rows (MariaDB v1)
        assert [e.body.text for e in new if isinstance(e.body, RowsQuery)] == [sql]
        assert not [e for e in new if isinstance(e.body, Query) and e.body.sql == sql]


def test_error_inside_transaction_keeps_the_rest():
    t = _table("t", "ndbcluster")
    master, sink = new_master([t], binlog_format="STATEMENT")
    master.begin()
    outcome = master.execute(Insert("t", ({0: 1, 1: b"x"},)))
    master.commit()
    assert outcome.decision == "error"
    assert master.model.rows("t") == []
    assert [e.type_name for e in events(sink)] == ["FORMAT_DESCRIPTION", "GTID_LIST",
                                                   "BINLOG_CHECKPOINT"]


def test_mysql_flavour_statement_logging_is_gtid_begin_query_xid():
    t = _table("t", "innodb")
    master, sink = new_master([t], flavour="mysql", binlog_format="STATEMENT")
    master.execute(Insert("t", ({0: 1, 1: b"x"},)))
    names = [e.type_name for e in events(sink)]
    assert names == ["FORMAT_DESCRIPTION", "PREVIOUS_GTIDS", "GTID", "QUERY", "QUERY", "XID"]
    sqls = [e.body.sql for e in events(sink) if e.type_code == 2]
    assert sqls == ["BEGIN", "INSERT INTO `t` (`id`, `note`) VALUES (1, 'x')"]

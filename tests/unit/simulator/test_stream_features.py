"""WL#4162 markers, WL#4033 ignorable events and Rows_query switching, MariaDB dummy events,
determinism: on whole simulated files."""
import pytest

from libs.binlog import Dummy, Ignorable, Query, RowsQuery
from libs.binlog.constants import LOG_EVENT_IGNORABLE_F, BoundaryType as B
from libs.stream.boundary import INITIAL, advance
from libs.simulator.run import SimulationOptions, simulate
from libs.simulator.schema import Table, int_col
from libs.simulator.sinks import FileSink, Substitution
from libs.simulator.statements import Insert

from .helpers import events, new_master


def _file(**kw):
    opts = SimulationOptions(**{"transactions": 60, "seed": 3, **kw})
    sink = FileSink(Substitution(opts.capability, opts.checksum)
                    if opts.capability is not None else None)
    result = simulate(opts, sink)
    return sink, result


# Hand mapping of the master's marking (WL#4162 "Transaction boundary types for log event
# types", MariaDB GTID opening a group, MySQL GTID + BEGIN): type name -> boundary
MARK_BY_TYPE = {
    "FORMAT_DESCRIPTION": B.IGNORE, "GTID_LIST": B.SELF_CONTAINED,
    "BINLOG_CHECKPOINT": B.SELF_CONTAINED, "PREVIOUS_GTIDS": B.SELF_CONTAINED,
    "ROTATE": B.SELF_CONTAINED, "MARIA_GTID": B.START, "GTID": B.START,
    "ANNOTATE_ROWS": B.INSIDE, "ROWS_QUERY": B.INSIDE, "TABLE_MAP": B.INSIDE,
    "WRITE_ROWS_V1": B.INSIDE, "UPDATE_ROWS_V1": B.INSIDE, "DELETE_ROWS_V1": B.INSIDE,
    "WRITE_ROWS": B.INSIDE, "UPDATE_ROWS": B.INSIDE, "DELETE_ROWS": B.INSIDE,
    "XID": B.END, "UNKNOWN_122": B.IGNORE,
}


def _expected_query_mark(sql, after_type):
    if sql == "BEGIN":  # MySQL: after its GTID
        return B.INSIDE
    if sql in ("COMMIT", "ROLLBACK"):
        return B.END
    if sql.split()[0] in ("CREATE", "ALTER", "TRUNCATE", "DROP"):
        assert after_type in ("MARIA_GTID", "GTID")  # DDL: GTID + the statement, nothing else
        return B.END
    return B.INSIDE  # statement-format DML inside its GTID .. Xid group


@pytest.mark.parametrize("flavour", ["mariadb", "mysql"])
def test_markers_present_follow_the_event_types(flavour):
    sink, _ = _file(flavour=flavour, markers=True, binlog_format="MIXED", ignorable_rate=0.1)
    evs = events(sink)
    prev = None
    for e in evs:
        if isinstance(e.body, Query):
            want = _expected_query_mark(e.body.sql, prev)
        else:
            want = MARK_BY_TYPE[e.type_name]
        assert e.boundary_marker == want, (e.pos, e.type_name)
        if e.type_name != "UNKNOWN_122":
            prev = e.type_name


@pytest.mark.parametrize("flavour", ["mariadb", "mysql"])
def test_markers_absent_by_default_and_the_parser_agrees_with_the_marks(flavour):
    unmarked, _ = _file(flavour=flavour, binlog_format="MIXED", ignorable_rate=0.1)
    marked, _ = _file(flavour=flavour, binlog_format="MIXED", ignorable_rate=0.1, markers=True)
    plain, with_marks = events(unmarked), events(marked)
    assert all(e.boundary_marker == B.NOT_DEFINED for e in plain)
    assert len(plain) == len(with_marks)
    ctx = INITIAL  # the project's boundary parser classifies the unmarked stream by type
    for e, m in zip(plain, with_marks):
        step = advance(ctx, e, flavour)
        assert step.ok, step.warning
        assert step.boundary == m.boundary_marker, (e.pos, e.type_name)
        ctx = step.context


def test_ignorable_events_at_the_configured_rate_and_flagged():
    sink, _ = _file(transactions=400, ignorable_rate=0.2)
    evs = events(sink)
    ign = [e for e in evs if e.type_code == 0x7A]
    assert all(isinstance(e.body, Ignorable) and e.header.flags & LOG_EVENT_IGNORABLE_F for e in ign)
    # slots: every group event except Table_map / rows events (file start and Rotate excluded)
    slots = [e for e in evs[3:-1] if e.type_code not in (19, 23, 24, 25, 0x7A)]
    assert len(slots) > 1000
    assert 0.17 < len(ign) / len(slots) < 0.23
    # never between a Table_map and its rows events
    for a, b in zip(evs, evs[1:]):
        if a.type_code == 19:
            assert b.type_code in (19, 23, 24, 25)


def test_no_ignorable_events_at_rate_zero():
    sink, _ = _file()
    assert not [e for e in events(sink) if e.type_code == 0x7A]


def test_rows_query_switches_per_session():
    t = Table("t", (int_col("id", nullable=False),), primary_key=("id",))
    master, sink = new_master([t])
    master.execute(Insert("t", ({0: 1},)))
    master.session.rows_query = False  # SET SESSION binlog_annotate_row_events=OFF
    master.execute(Insert("t", ({0: 2},)))
    master.session.rows_query = True
    master.execute(Insert("t", ({0: 3},)))
    texts = [e.body.text for e in events(sink) if isinstance(e.body, RowsQuery)]
    assert texts == ["INSERT INTO `t` (`id`) VALUES (1)", "INSERT INTO `t` (`id`) VALUES (3)"]


def test_mysql_rows_query_is_type_29_and_mariadb_annotate_160():
    t = Table("t", (int_col("id", nullable=False),), primary_key=("id",))
    for flavour, code in (("mysql", 29), ("mariadb", 160)):
        master, sink = new_master([t], flavour=flavour)
        master.execute(Insert("t", ({0: 1},)))
        assert [e.type_code for e in events(sink) if isinstance(e.body, RowsQuery)] == [code]


def test_no_rows_query_option():
    sink, _ = _file(rows_query=False)
    assert not [e for e in events(sink) if e.type_code in (29, 160)]


def test_capability_zero_gets_same_size_dummies_and_begin():
    original, _ = _file()
    dummies, _ = _file(capability=0)
    a, b = events(original), events(dummies)
    assert [(e.pos, e.header.event_size) for e in a] == [(e.pos, e.header.event_size) for e in b]
    for x, y in zip(a, b):
        if x.type_name in ("ANNOTATE_ROWS", "GTID_LIST", "BINLOG_CHECKPOINT"):
            assert isinstance(y.body, Dummy) and y.type_code in (2, 14)
        elif x.type_name == "MARIA_GTID" and not x.body.standalone:
            assert isinstance(y.body, Query) and y.body.sql == "BEGIN"
        elif x.type_name == "MARIA_GTID":  # standalone (DDL) GTID: a dummy
            assert isinstance(y.body, Dummy)
        else:
            assert x.header == y.header and x.body == y.body


def test_capability_four_changes_nothing_and_two_leaves_holes():
    original, _ = _file()
    assert _file(capability=4)[0].bytes() == original.bytes()
    holes, _ = _file(capability=2)  # tolerates holes: Annotate not asked for? it is (cap >= 1)
    kinds = {e.type_name for e in events(holes)}
    assert "GTID_LIST" not in kinds and "MARIA_GTID" not in kinds  # omitted / BEGIN
    assert "ANNOTATE_ROWS" in kinds


@pytest.mark.parametrize("flavour", ["mariadb", "mysql"])
def test_same_seed_same_bytes_and_tables(flavour, tmp_path):
    from libs.simulator.expected import write_expected
    outs = []
    for k in range(2):
        sink, result = _file(flavour=flavour, seed=11, row_image="minimal", ignorable_rate=0.05)
        d = write_expected(tmp_path / str(k), result.master.model, {}, result.master.statements)
        outs.append((sink.bytes(), {p.name: p.read_bytes() for p in d.iterdir()}))
    assert outs[0] == outs[1]
    other, _ = _file(flavour=flavour, seed=12, row_image="minimal")
    assert other.bytes() != outs[0][0]

"""classify(): the seed's "Transaction boundary types for log event types" table (001_*), for both
flavours, unmarked and marked, plus whole-stream sequences through advance()."""
import pytest

from libs.binlog.constants import BoundaryType as B, EventType as T, with_boundary_marker
from libs.binlog import Event, Header
from libs.stream.boundary import INITIAL, Opening, ParserContext, advance, classify
from tests.unit.boundary import events as e

OUTSIDE = INITIAL  # nothing open (Not Defined)
AFTER_END = ParserContext(B.END)
AFTER_GTID = ParserContext(B.START, Opening.GTID)
AFTER_BEGIN = ParserContext(B.INSIDE, Opening.EXPLICIT)
AFTER_PRE_STMT = ParserContext(B.START, Opening.PRE_STATEMENT)

# (seed row / reason, event, context, expected) - valid for both flavours.
BOTH_FLAVOURS = [
    ("Query DDL, auto-commit, no GTID: SELF (D2.1a, *1)",
     e.query("CREATE TABLE t (a INT)"), OUTSIDE, B.SELF_CONTAINED),
    ("Query BEGIN: START", e.query("BEGIN"), OUTSIDE, B.START),
    ("Query BEGIN after END: START", e.query("BEGIN"), AFTER_END, B.START),
    ("Query BEGIN after GTID: INSIDE (*2, M1a)", e.query("BEGIN"), AFTER_GTID, B.INSIDE),
    ("Query XA START: START", e.query("XA START X'01',X'',1"), OUTSIDE, B.START),
    ("Query XA START after GTID: INSIDE (*2)", e.query("XA START X'01',X'',1"), AFTER_GTID, B.INSIDE),
    ("Query COMMIT: END", e.query("COMMIT"), AFTER_BEGIN, B.END),
    ("Query ROLLBACK: END", e.query("ROLLBACK"), AFTER_BEGIN, B.END),
    ("Query ROLLBACK TO savepoint: INSIDE", e.query("ROLLBACK TO sp1"), AFTER_BEGIN, B.INSIDE),
    ("Query SAVEPOINT: INSIDE", e.query("SAVEPOINT sp1"), AFTER_BEGIN, B.INSIDE),
    ("Query not immediate logging (DML in BEGIN): INSIDE",
     e.query("INSERT INTO t VALUES (1)"), AFTER_BEGIN, B.INSIDE),
    ("Query XA END: INSIDE", e.query("XA END X'01',X'',1"), AFTER_BEGIN, B.INSIDE),
    ("Query XA PREPARE: END", e.query("XA PREPARE X'01',X'',1"), AFTER_BEGIN, B.END),
    ("Query immediate logging after GTID (DDL): END (*2, M1b)", e.query("DROP TABLE t"), AFTER_GTID, B.END),
    ("Query XA COMMIT after GTID: END", e.query("XA COMMIT X'01',X'',1"), AFTER_GTID, B.END),
    ("Query XA ROLLBACK after GTID: END", e.query("XA ROLLBACK X'01',X'',1"), AFTER_GTID, B.END),
    ("Query XA COMMIT without GTID: SELF (decision)",
     e.query("XA COMMIT X'01',X'',1"), OUTSIDE, B.SELF_CONTAINED),
    ("Query statement after Intvar: END (M2)", e.query("INSERT INTO t VALUES (NULL)"), AFTER_PRE_STMT, B.END),
    ("Execute_load_query after BEGIN: INSIDE (*3 = Query)",
     e.ev(T.EXECUTE_LOAD_QUERY, e.query("LOAD DATA").body), AFTER_BEGIN, B.INSIDE),
    ("Load: SELF (*1)", e.ev(T.LOAD), OUTSIDE, B.SELF_CONTAINED),
    ("New_load: SELF (*1)", e.ev(T.NEW_LOAD), OUTSIDE, B.SELF_CONTAINED),
    ("Create_file: SELF (*1)", e.ev(T.CREATE_FILE), OUTSIDE, B.SELF_CONTAINED),
    ("Delete_file: SELF (*1)", e.ev(T.DELETE_FILE), OUTSIDE, B.SELF_CONTAINED),
    ("Execute_load: SELF (*1)", e.ev(T.EXEC_LOAD), OUTSIDE, B.SELF_CONTAINED),
    ("Start_v3: SELF (*1)", e.ev(T.START_V3), OUTSIDE, B.SELF_CONTAINED),
    ("Unknown_log_event (code 0): SELF (*1)", e.ev(T.UNKNOWN), OUTSIDE, B.SELF_CONTAINED),
    ("Format_description: IGNORE", e.fde(), AFTER_BEGIN, B.IGNORE),
    ("Intvar at group start: START (*4)", e.intvar(), OUTSIDE, B.START),
    ("Intvar inside: INSIDE", e.intvar(), AFTER_BEGIN, B.INSIDE),
    ("Intvar after GTID: INSIDE", e.intvar(), AFTER_GTID, B.INSIDE),
    ("Rand at group start: START (*4)", e.ev(T.RAND), AFTER_END, B.START),
    ("Rand inside: INSIDE", e.ev(T.RAND), AFTER_BEGIN, B.INSIDE),
    ("User_var at group start: START (*4)", e.ev(T.USER_VAR), OUTSIDE, B.START),
    ("User_var after Intvar: INSIDE", e.ev(T.USER_VAR), AFTER_PRE_STMT, B.INSIDE),
    ("Xid: END", e.xid(), AFTER_BEGIN, B.END),
    ("XA_prepare event: END", e.xa_prepare(), AFTER_BEGIN, B.END),
    ("Stop: SELF (*1)", e.stop(), AFTER_END, B.SELF_CONTAINED),
    ("real Rotate: SELF (*1)", e.rotate(), AFTER_END, B.SELF_CONTAINED),
    ("fake Rotate (artificial, log_pos 0): IGNORE (*5)", e.rotate(artificial=True), OUTSIDE, B.IGNORE),
    ("Rotate in the middle of a transaction: IGNORE (D2.1)", e.rotate(), AFTER_BEGIN, B.IGNORE),
    ("Append_block: INSIDE", e.ev(T.APPEND_BLOCK), AFTER_BEGIN, B.INSIDE),
    ("Begin_load_query: INSIDE", e.ev(T.BEGIN_LOAD_QUERY), AFTER_BEGIN, B.INSIDE),
    ("Table_map: INSIDE", e.table_map(), AFTER_BEGIN, B.INSIDE),
    ("Write_rows v1: INSIDE", e.ev(T.WRITE_ROWS_V1), AFTER_BEGIN, B.INSIDE),
    ("Update_rows v1: INSIDE", e.ev(T.UPDATE_ROWS_V1), AFTER_BEGIN, B.INSIDE),
    ("Delete_rows v1: INSIDE", e.ev(T.DELETE_ROWS_V1), AFTER_BEGIN, B.INSIDE),
    ("Write_rows v2: INSIDE", e.write_rows({0: 1}), AFTER_BEGIN, B.INSIDE),
    ("Update_rows v2: INSIDE", e.update_rows(({0: 1}, {0: 2})), AFTER_BEGIN, B.INSIDE),
    ("Delete_rows v2: INSIDE", e.delete_rows({0: 1}), AFTER_BEGIN, B.INSIDE),
    ("pre-GA Write_rows: INSIDE", e.ev(T.PRE_GA_WRITE_ROWS), AFTER_BEGIN, B.INSIDE),
    ("Incident: SELF (*1)", e.ev(T.INCIDENT), AFTER_END, B.SELF_CONTAINED),
    ("Ignorable_log_event (28): IGNORE", e.ev(T.IGNORABLE, flags=0x80), AFTER_BEGIN, B.IGNORE),
    ("unknown type with LOG_EVENT_IGNORABLE_F: IGNORE (WL#4033)", e.ignorable(99), AFTER_BEGIN, B.IGNORE),
    ("unknown type without the flag: SELF (Unknown_log_event *1)", e.ev(99), OUTSIDE, B.SELF_CONTAINED),
    ("Rows_query: INSIDE", e.rows_query("INSERT INTO t VALUES (1)"), AFTER_BEGIN, B.INSIDE),
    ("Heartbeat: IGNORE (decision, D2.1)", e.ev(T.HEARTBEAT, log_pos=0), AFTER_BEGIN, B.IGNORE),
    ("Heartbeat v2: IGNORE (decision, D2.1)", e.ev(T.HEARTBEAT_V2), OUTSIDE, B.IGNORE),
    ("Gtid: START", e.mysql_gtid(), AFTER_END, B.START),
    ("Anonymous_gtid: START", e.mysql_gtid(anonymous=True), OUTSIDE, B.START),
    ("tagged Gtid (42): START", e.ev(T.GTID_TAGGED), OUTSIDE, B.START),
    ("Previous_gtids: SELF (*1)", e.ev(T.PREVIOUS_GTIDS), OUTSIDE, B.SELF_CONTAINED),
    ("Transaction_payload: END (carries its whole trx)", e.ev(T.TRANSACTION_PAYLOAD), AFTER_GTID, B.END),
    ("View_change: INSIDE (decision)", e.ev(T.VIEW_CHANGE), AFTER_BEGIN, B.INSIDE),
    ("Dummy Query placeholder: IGNORE (MariaDB dummy task)", e.dummy_query(), AFTER_BEGIN, B.IGNORE),
]

MARIADB_ONLY = [
    ("Annotate_rows: INSIDE (twin of Rows_query)",
     e.rows_query("INSERT", annotate=True), AFTER_BEGIN, B.INSIDE),
    ("transactional GTID: START", e.maria_gtid(), AFTER_END, B.START),
    ("standalone GTID: START", e.maria_gtid(standalone=True), OUTSIDE, B.START),
    ("DDL after standalone GTID: END (*2, M1b)", e.query("CREATE TABLE t (a INT)"),
     ParserContext(B.START, Opening.GTID), B.END),
    ("DML Query after transactional GTID: INSIDE", e.query("INSERT INTO t VALUES (1)"),
     ParserContext(B.START, Opening.EXPLICIT), B.INSIDE),
    ("Gtid_list: SELF (*1)", e.ev(T.GTID_LIST), OUTSIDE, B.SELF_CONTAINED),
    ("Binlog_checkpoint: SELF (*1)", e.ev(T.BINLOG_CHECKPOINT), AFTER_END, B.SELF_CONTAINED),
    ("Start_encryption: SELF (*1)", e.ev(T.START_ENCRYPTION), OUTSIDE, B.SELF_CONTAINED),
    ("Query_compressed COMMIT: END", e.ev(T.QUERY_COMPRESSED, e.query("COMMIT").body), AFTER_BEGIN, B.END),
    ("Write_rows_compressed v1: INSIDE", e.ev(T.WRITE_ROWS_COMPRESSED_V1), AFTER_BEGIN, B.INSIDE),
    ("Delete_rows_compressed: INSIDE", e.ev(T.DELETE_ROWS_COMPRESSED), AFTER_BEGIN, B.INSIDE),
]

MYSQL_ONLY = [  # MariaDB's 160-171 are unknown to a MySQL stream (WL#4033)
    ("type 160 in a MySQL stream, no flag: SELF (Unknown_log_event)",
     e.ev(T.ANNOTATE_ROWS), AFTER_END, B.SELF_CONTAINED),
    ("type 162 in a MySQL stream with LOG_EVENT_IGNORABLE_F: IGNORE",
     e.ev(T.MARIA_GTID, flags=0x80), AFTER_BEGIN, B.IGNORE),
]

UNMARKED = ([(f, *c) for c in BOTH_FLAVOURS for f in ("mysql", "mariadb")]
            + [("mariadb", *c) for c in MARIADB_ONLY] + [("mysql", *c) for c in MYSQL_ONLY])


@pytest.mark.parametrize("flavour,why,event,context,expected", UNMARKED,
                         ids=[f"{c[0]}:{c[1]}" for c in UNMARKED])
def test_unmarked_event_classified_by_type(flavour, why, event, context, expected):
    assert classify(event, flavour, context) is expected


def _marked(event: Event, boundary: B) -> Event:
    h = event.header
    header = Header(h.timestamp, h.type_code, h.server_id, h.event_size, h.log_pos,
                    with_boundary_marker(h.flags, boundary))
    return Event(header, event.pos, event.body, event.checksum_ok, event.file)


MARKED = [(f, why, _marked(event, marker), context, marker)
          for f, why, event, context, _ in UNMARKED[::3]
          for marker in (B.IGNORE, B.SELF_CONTAINED, B.START, B.INSIDE, B.END)]


@pytest.mark.parametrize("flavour,why,event,context,marker", MARKED,
                         ids=[f"{c[0]}:{c[4].name}:{c[1]}" for c in MARKED])
def test_marker_bits_override_the_type(flavour, why, event, context, marker):
    assert classify(event, flavour, context) is marker


@pytest.mark.parametrize("reserved", [6, 7])
def test_reserved_marker_values_fall_back_to_type(reserved):
    event = e.xid(flags=reserved << 10)
    assert classify(event, "mysql", AFTER_BEGIN) is B.END


def _run(events, flavour):
    context, out = INITIAL, []
    for event in events:
        step = advance(context, event, flavour)
        context = step.context
        out.append((step.boundary, step.warning))
    return context, out


STREAMS = {
    "mysql row trx (GTID, BEGIN, Rows_query, Table_map, Rows, Xid)": ("mysql", [
        e.mysql_gtid(), e.query("BEGIN"), e.rows_query("INSERT"), e.table_map(),
        e.write_rows({0: 1}), e.xid()],
        [B.START, B.INSIDE, B.INSIDE, B.INSIDE, B.INSIDE, B.END]),
    "mysql DDL (GTID, Query)": ("mysql", [
        e.mysql_gtid(), e.query("CREATE TABLE t (a INT)")],
        [B.START, B.END]),
    "mysql stmt DML with Intvar inside a GTID trx": ("mysql", [
        e.mysql_gtid(), e.query("BEGIN"), e.intvar(), e.query("INSERT INTO t VALUES (NULL)"), e.xid()],
        [B.START, B.INSIDE, B.INSIDE, B.INSIDE, B.END]),
    "no GTIDs: Intvar then statement (M2)": ("mysql", [
        e.intvar(), e.query("INSERT INTO t VALUES (NULL)"), e.query("DROP TABLE t")],
        [B.START, B.END, B.SELF_CONTAINED]),
    "mysql XA prepare then commit": ("mysql", [
        e.mysql_gtid(), e.query("XA START X'01',X'',1"), e.write_rows({0: 1}), e.query("XA END X'01',X'',1"),
        e.xa_prepare(), e.mysql_gtid(), e.query("XA COMMIT X'01',X'',1")],
        [B.START, B.INSIDE, B.INSIDE, B.INSIDE, B.END, B.START, B.END]),
    "mariadb trx (GTID, Annotate, Table_map, Rows, Xid)": ("mariadb", [
        e.maria_gtid(), e.rows_query("INSERT", annotate=True), e.table_map(), e.write_rows({0: 1}), e.xid()],
        [B.START, B.INSIDE, B.INSIDE, B.INSIDE, B.END]),
    "mariadb standalone GTID + DDL, then Gtid_list-like SELF": ("mariadb", [
        e.maria_gtid(standalone=True), e.query("CREATE TABLE t (a INT)"), e.ev(T.BINLOG_CHECKPOINT)],
        [B.START, B.END, B.SELF_CONTAINED]),
    "mariadb XA (GTID, Rows, XA END, XA_prepare, GTID, XA ROLLBACK)": ("mariadb", [
        e.maria_gtid(), e.write_rows({0: 1}), e.query("XA END X'01',X'',1"), e.xa_prepare(),
        e.maria_gtid(), e.query("XA ROLLBACK X'01',X'',1")],
        [B.START, B.INSIDE, B.INSIDE, B.END, B.START, B.END]),
    "mariadb capability-0 replica: GTID became BEGIN, DDL GTID became a dummy": ("mariadb", [
        e.query("BEGIN"), e.dummy_query(), e.write_rows({0: 1}), e.xid(),
        e.dummy_query(), e.query("DROP TABLE t")],
        [B.START, B.IGNORE, B.INSIDE, B.END, B.IGNORE, B.SELF_CONTAINED]),
    "fake rotate and FDE first, then a trx": ("mysql", [
        e.rotate(artificial=True), e.fde(), e.ev(T.PREVIOUS_GTIDS), e.mysql_gtid(),
        e.query("BEGIN"), e.xid()],
        [B.IGNORE, B.IGNORE, B.SELF_CONTAINED, B.START, B.INSIDE, B.END]),
}


@pytest.mark.parametrize("name", list(STREAMS))
def test_valid_streams_have_no_warnings(name):
    flavour, events, expected = STREAMS[name]
    context, out = _run(events, flavour)
    assert [b for b, _ in out] == expected
    assert all(w is None for _, w in out)


def test_stream_started_mid_transaction_warns_until_a_start():
    events = [e.table_map(), e.write_rows({0: 1}), e.xid(), e.mysql_gtid(), e.query("BEGIN")]
    context, out = _run(events, "mysql")
    assert out == [
        (None, "Unable to change boundary parser from Not Defined to Inside Transaction."),
        (None, "Unable to change boundary parser from Not Defined to Inside Transaction."),
        (None, "Unable to change boundary parser from Not Defined to End Transaction."),
        (B.START, None), (B.INSIDE, None)]
    assert context == ParserContext(B.INSIDE, Opening.EXPLICIT)


def test_truncated_transaction_is_reported_and_the_next_start_is_kept():
    events = [e.mysql_gtid(1), e.query("BEGIN"), e.write_rows({0: 1}), e.mysql_gtid(2), e.query("BEGIN")]
    context, out = _run(events, "mysql")
    assert out[3] == (B.START,
                      "Unable to change boundary parser from Inside Transaction to Start Transaction.")
    assert out[4] == (B.INSIDE, None)


def test_commit_after_self_contained_is_rejected_and_parser_reset():
    context, out = _run([e.query("CREATE TABLE t (a INT)"), e.query("COMMIT")], "mysql")
    assert out[1] == (None, "Unable to change boundary parser from Self Contained to End Transaction.")
    assert context == INITIAL

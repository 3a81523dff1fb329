"""Assembler scenarios that produce transactions: multi-statement, rollback, DDL, Intvar +
statement, XA, ignorable / dummy events skipped."""
from libs.stream.assembler import Assembler, InMemorySpillStore, to_change_records
from libs.binlog.constants import EventType as T
from libs.binlog import MysqlGtid
from tests.unit.assembler.stream import place, summary
from tests.unit.boundary import events as e

UUID = e.MYSQL_UUID


def run(events, flavour="mysql", **kw):
    assembler = Assembler("src1", InMemorySpillStore(), flavour=flavour, **kw)
    return assembler, assembler.feed(place(events))


def test_multi_statement_mysql_transaction():
    # positions: gtid 4..44, BEGIN 44..84, rq 84..124, tm 124..164, write 164..204,
    # rq 204..244, tm 244..284, update 284..324, xid 324..364
    events = [e.mysql_gtid(17, server_id=5), e.query("BEGIN"),
              e.rows_query("INSERT INTO orders VALUES (1,'a'),(2,'b')"),
              e.table_map(), e.write_rows({0: 1, 1: "a"}, {0: 2, 1: "b"}),
              e.rows_query("UPDATE orders SET note='c' WHERE id=2"), e.table_map(),
              e.update_rows(({0: 2, 1: "b"}, {0: 2, 1: "c"})), e.xid(9001, ts=1_700_000_123, server_id=5)]
    assembler, out = run(events)
    assert out.quarantined == [] and len(out.transactions) == 1
    trx = out.transactions[0]
    assert summary(trx) == {
        "trx_id": f"{UUID}:17", "gtid": f"{UUID}:17", "xid": 9001, "commit_ts": 1_700_000_123_000_000,
        "server_id": 5, "file": "bin.000001", "end_pos": 364,
        "payload": [("bin.000001", 84, T.ROWS_QUERY), ("bin.000001", 124, T.TABLE_MAP),
                    ("bin.000001", 164, T.WRITE_ROWS), ("bin.000001", 204, T.ROWS_QUERY),
                    ("bin.000001", 244, T.TABLE_MAP), ("bin.000001", 284, T.UPDATE_ROWS)]}
    records = to_change_records(trx)
    # change_seq = payload index * 2^20 + row index (schemas/change_record.avsc)
    assert [(r["change_seq"], r["op"], r["binlog_pos"], r["statement"]) for r in records] == [
        (2 * 2**20, "insert", 164, "INSERT INTO orders VALUES (1,'a'),(2,'b')"),
        (2 * 2**20 + 1, "insert", 164, "INSERT INTO orders VALUES (1,'a'),(2,'b')"),
        (5 * 2**20, "update", 284, "UPDATE orders SET note='c' WHERE id=2")]
    assert records[2]["before"] == [
        {"ordinal": 0, "name": "id", "type_code": 3, "text": "2", "binary": None},
        {"ordinal": 1, "name": "note", "type_code": 15, "text": "b", "binary": None}]
    assert (records[0]["database"] == "shop" and records[0]["table"] == "orders"
            and records[0]["before"] is None)
    assert records[0]["trx_end_pos"] == 364 and records[0]["commit_ts"] == 1_700_000_123_000_000
    assert out.counters["transactions_emitted"] == 1


def test_mysql8_gtid_commit_timestamp_in_microseconds_wins():
    gtid = e.ev(T.GTID, MysqlGtid(False, 1, UUID, 3, immediate_commit_ts=1_700_000_000_654_321))
    _, out = run([gtid, e.query("BEGIN"), e.table_map(), e.write_rows({0: 1}), e.xid()])
    assert out.transactions[0].commit_ts_micros == 1_700_000_000_654_321


def test_rollback_emits_nothing():
    _, out = run([e.mysql_gtid(), e.query("BEGIN"), e.table_map(), e.write_rows({0: 1}), e.query("ROLLBACK")])
    assert out.transactions == [] and out.quarantined == []
    assert out.counters["rollbacks"] == 1
    assert [r.trx_key for r in out.released] == ["bin.000001:4"]


def test_rollback_to_savepoint_does_not_end_the_transaction():
    _, out = run([e.query("BEGIN"), e.query("SAVEPOINT a"), e.query("INSERT INTO t VALUES (1)"),
                  e.query("ROLLBACK TO a"), e.query("COMMIT")])
    assert len(out.transactions) == 1
    assert [r["op"] for r in to_change_records(out.transactions[0])] == ["statement"]


def test_mysql_ddl_after_gtid():
    _, out = run([e.mysql_gtid(4), e.query("CREATE TABLE `shop`.`items` (id INT)", db="other")])
    [trx] = out.transactions
    assert trx.gtid == f"{UUID}:4" and trx.xid is None and trx.end_pos == 84
    [record] = to_change_records(trx)
    assert (record["op"], record["database"], record["table"]) == ("ddl", "shop", "items")
    assert record["statement"] == "CREATE TABLE `shop`.`items` (id INT)"


def test_mariadb_standalone_gtid_and_ddl_form_one_transaction():
    _, out = run([e.fde("mariadb"), e.maria_gtid(50, standalone=True), e.query("DROP TABLE t1")],
                 flavour="mariadb")
    [trx] = out.transactions
    assert trx.gtid == "0-1-50" and trx.trx_id == "0-1-50"
    assert [(r["op"], r["table"]) for r in to_change_records(trx)] == [("ddl", "t1")]


def test_ddl_without_gtid_is_self_contained_with_file_pos_identity():
    _, out = run([e.query("ALTER TABLE orders ADD COLUMN x INT")])
    [trx] = out.transactions
    assert (trx.trx_id, trx.gtid, trx.end_pos) == ("bin.000001:4", None, 44)
    assert [(r["op"], r["table"]) for r in to_change_records(trx)] == [("ddl", "orders")]


def test_intvar_then_statement_without_gtid():
    _, out = run([e.intvar(), e.query("INSERT INTO orders (note) VALUES ('x')")])
    [trx] = out.transactions
    assert trx.trx_id == "bin.000001:4" and trx.event_count == 2
    assert [f.event.header.type_code for f in trx.payload] == [T.INTVAR, T.QUERY]
    [record] = to_change_records(trx)
    assert (record["op"], record["database"], record["table"], record["binlog_pos"]) == (
        "statement", "shop", "orders", 44)


def test_mariadb_statement_trx_with_user_var():
    events = [e.fde("mariadb"), e.maria_gtid(7), e.ev(T.USER_VAR), e.query("UPDATE t SET a=@v"), e.xid(3)]
    _, out = run(events, flavour="mariadb")
    [trx] = out.transactions
    assert [f.event.header.type_code for f in trx.payload] == [T.USER_VAR, T.QUERY]


XA = "X'786131',X'',1"


def test_xa_prepare_is_held_until_xa_commit():
    prepare = [e.mysql_gtid(1), e.query(f"XA START {XA}"), e.rows_query("INSERT INTO orders VALUES (1,'xa')"),
               e.table_map(), e.write_rows({0: 1, 1: "xa"}), e.query(f"XA END {XA}"), e.xa_prepare(b"xa1")]
    commit = [e.mysql_gtid(2), e.query(f"XA COMMIT {XA}", ts=1_700_000_999)]
    assembler = Assembler("src1", InMemorySpillStore())
    inputs = place(prepare + commit)
    first = assembler.feed(inputs[:7])
    assert first.transactions == [] and first.quarantined == []
    assert list(assembler.state.xa_prepared) == ["1:786131:"]
    second = assembler.feed(inputs[7:])
    [trx] = second.transactions
    # prepare group: gtid 4, XA START 44, rq 84, tm 124, rows 164, XA END 204, XA_prepare 244..284
    assert summary(trx) == {
        "trx_id": f"{UUID}:2", "gtid": f"{UUID}:2", "xid": None, "commit_ts": 1_700_000_999_000_000,
        "server_id": 1, "file": "bin.000001", "end_pos": 364,
        "payload": [("bin.000001", 84, T.ROWS_QUERY), ("bin.000001", 124, T.TABLE_MAP),
                    ("bin.000001", 164, T.WRITE_ROWS)]}
    assert trx.xa_xid == "1:786131:"
    assert assembler.state.xa_prepared == {}
    assert [r["after"][1]["text"] for r in to_change_records(trx)] == ["xa"]


def test_mariadb_xa_rollback_drops_the_prepared_transaction():
    events = [e.fde("mariadb"), e.maria_gtid(1), e.table_map(), e.write_rows({0: 2}), e.query(f"XA END {XA}"),
              e.xa_prepare(b"xa1"), e.maria_gtid(2), e.query(f"XA ROLLBACK {XA}")]
    assembler, out = run(events, flavour="mariadb")
    assert out.transactions == [] and out.quarantined == []
    assert assembler.state.xa_prepared == {} and out.counters["rollbacks"] == 1
    # commit group, prepared group
    assert sorted(r.trx_key for r in out.released) == ["bin.000001:244", "bin.000001:44"]


def test_xa_commit_one_phase_is_a_normal_commit():
    _, out = run([e.mysql_gtid(1), e.query(f"XA START {XA}"), e.table_map(), e.write_rows({0: 3}),
                  e.query(f"XA END {XA}"), e.xa_prepare(b"xa1", one_phase=True)])
    [trx] = out.transactions
    assert [r["op"] for r in to_change_records(trx)] == ["insert"]


def test_xa_commit_of_unseen_prepare_is_quarantined():
    _, out = run([e.mysql_gtid(2), e.query(f"XA COMMIT {XA}")])
    assert out.transactions == []
    assert [(q.kind, q.binlog_pos) for q in out.quarantined] == [("xa_unknown", 4), ("xa_unknown", 44)]
    assert out.counters["xa_unknown"] == 1


def test_ignorable_and_dummy_events_are_skipped_and_counted():
    events = [e.query("BEGIN"), e.ignorable(99), e.dummy_query(),
              e.table_map(), e.write_rows({0: 1}), e.xid()]
    _, out = run(events)
    [trx] = out.transactions
    assert [f.pos for f in trx.payload] == [124, 164]
    assert out.counters["ignorable_skipped"] == 1 and out.counters["dummies_skipped"] == 1


def test_fake_rotate_and_heartbeat_do_not_count_as_positions():
    events = [e.rotate(artificial=True), e.fde(), e.query("BEGIN"), e.ev(T.HEARTBEAT, log_pos=0),
              e.table_map(), e.write_rows({0: 1}), e.xid()]
    _, out = run(events)
    assert len(out.transactions) == 1 and out.quarantined == []


def test_rows_after_their_statement_ended_carry_no_stale_statement():
    # annotate switched off for the second statement: its rows must not inherit the first text
    events = [e.query("BEGIN"), e.rows_query("INSERT INTO orders VALUES (1,'a')"), e.table_map(),
              e.write_rows({0: 1}, stmt_end=True), e.table_map(), e.write_rows({0: 2}), e.xid()]
    _, out = run(events)
    assert [r["statement"] for r in to_change_records(out.transactions[0])] == [
        "INSERT INTO orders VALUES (1,'a')", None]

"""libs/snapshot/source.py, chunks.py, table_filter.py against a fake connection that records
every statement (no server): the MariaDB and MySQL statement sequences, table selection, chunk
cutting, the records of a run and the start state read back from a last record."""
from __future__ import annotations

import io
import itertools

import pyarrow as pa
import pytest
from pymysql.err import OperationalError

from libs.source.privileges import SourceAccessError
from libs.contracts.topic import KafkaRecord, TopicKind
from libs.snapshot import chunk_values, source, values
from libs.snapshot.chunks import VALUE_OVERHEAD, TableProgress, cut_chunks, last_state, row_sizes
from libs.snapshot.protocol import LastRecord
from libs.contracts.position import BinlogPosition
from libs.snapshot.record import SnapshotRecord
from libs.snapshot.table_filter import TableFilter
from tests.unit.snapshot.row_packets import FakePackets, row_section

NOW = b"2024-05-06 07:08:09.123456"
NOW_US = 1714979289123456


class FakeCursor:
    def __init__(self, conn):
        self.conn, self.rows, self.description = conn, [], None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def execute(self, sql, args=None):
        self.conn.statements.append(sql if args is None else (sql, args))
        answer = self.conn.answer(sql, args)
        if isinstance(answer, Exception):
            raise answer
        self.rows = iter(answer)
        self.description = (("c",),)  # a result set (PyMySQL: None after SET, START ...)

    def fetchall(self):
        return list(self.rows)

    def fetchmany(self, n):
        return list(itertools.islice(self.rows, n))

    def close(self):
        pass


class FakeConn:
    """Answers by statement prefix; `answers` values are row lists, exceptions, or callables
    of the statement's arguments."""

    def __init__(self, server_info: str, answers: dict):
        self.server_info, self.answers = server_info, answers
        self.statements: list = []
        self.unbuffered: list[str] = []

    def get_server_info(self):
        return self.server_info

    def close(self):
        self.closed = True

    def cursor(self):
        return FakeCursor(self)

    def row_packets(self, sql):
        """What pymysql_wire.RowPackets reads of a SELECT: its row packets, a few bytes a read."""
        self.statements.append(sql)
        self.unbuffered.append(sql)
        answer = self.answer(sql, None)
        if isinstance(answer, Exception):
            raise answer
        return FakePackets(row_section(answer, seq=5)[0], seq=5, read=7)

    def answer(self, sql, args):
        for prefix, rows in self.answers.items():
            if sql.startswith(prefix):
                return rows(args) if callable(rows) else rows
        return []


@pytest.fixture(autouse=True)
def rows_from_the_fake(monkeypatch):
    """A SELECT's rows come from FakeConn.row_packets, parsed by the real row_stream."""
    monkeypatch.setattr(source.pymysql_wire, "RowPackets", lambda conn, sql: conn.row_packets(sql))


def mariadb_conn(gtids=(b"0-1-10", b"0-1-10")):
    gtid = iter(gtids)
    return FakeConn("10.11.19-MariaDB-log", {
        "SELECT @@gtid_binlog_pos,": lambda _args: [(next(gtid), b"7", NOW)],
        "SELECT @@gtid_binlog_pos": lambda _args: [(next(gtid),)],
        "SHOW STATUS LIKE 'binlog_snapshot_%'": [(b"Binlog_snapshot_file", b"mdb-bin.000003"),
                                                 (b"Binlog_snapshot_position", b"1234")],
    })


def session_statements():
    setup = values.SESSION_SETUP
    return [*source.SESSION_STATEMENTS, *([setup] if isinstance(setup, str) else setup)]


def test_mariadb_sequence_is_lock_free_and_reads_the_snapshot_position():
    conn = mariadb_conn()
    point = source.open_snapshot(conn)
    assert conn.statements == [
        *session_statements(),
        "SELECT @@gtid_binlog_pos",
        "START TRANSACTION WITH CONSISTENT SNAPSHOT",
        "SHOW STATUS LIKE 'binlog_snapshot_%'",
        "SELECT @@gtid_binlog_pos, @@server_id, UTC_TIMESTAMP(6)",
    ]
    assert source.SESSION_STATEMENTS[0] == "SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ"
    assert point == source.SnapshotPoint("mdb-bin.000003", 1234, "0-1-10", 7, NOW_US)


def test_mariadb_gtid_moving_during_start_retries_then_gives_no_gtid():
    conn = mariadb_conn([b"0-1-10", b"0-1-11", b"0-1-11", b"0-1-12", b"0-1-12", b"0-1-12"])
    point = source.open_snapshot(conn)  # third attempt: equal
    assert conn.statements.count("START TRANSACTION WITH CONSISTENT SNAPSHOT") == 3
    assert conn.statements.count("ROLLBACK") == 2
    assert point.gtid == "0-1-12"
    always_moving = mariadb_conn([f"0-1-{i}".encode() for i in range(6)])
    point = source.open_snapshot(always_moving)
    assert always_moving.statements.count("ROLLBACK") == source.GTID_ATTEMPTS - 1
    assert point.gtid is None and point.pos == 1234
    assert not any("FLUSH" in s or "LOCK" in s for s in always_moving.statements if isinstance(s, str))


def mysql_conn(version: str, status_fails: bool = False):
    status = [(b"binlog.000002", b"157", b"", b"", b"uuid:1-5")]
    fail = OperationalError(1227, "Access denied")
    return FakeConn(version, {
        "SHOW MASTER STATUS": fail if status_fails else status,
        "SHOW BINARY LOG STATUS": fail if status_fails else status,
        "SELECT @@gtid_executed": [(b"uuid:1-5", b"9", NOW)],
    })


@pytest.mark.parametrize("version, status_sql", [("8.0.36", "SHOW MASTER STATUS"),
                                                 ("8.4.0", "SHOW BINARY LOG STATUS"),
                                                 ("5.7.44-log", "SHOW MASTER STATUS")])
def test_mysql_sequence_reads_the_position_under_a_global_read_lock(version, status_sql):
    conn = mysql_conn(version)
    point = source.open_snapshot(conn)
    assert conn.statements == [
        *session_statements(),
        "FLUSH TABLES WITH READ LOCK",
        "START TRANSACTION WITH CONSISTENT SNAPSHOT",
        status_sql,
        "SELECT @@gtid_executed, @@server_id, UTC_TIMESTAMP(6)",
        "UNLOCK TABLES",
    ]
    assert point == source.SnapshotPoint("binlog.000002", 157, "uuid:1-5", 9, NOW_US)


def test_mysql_lock_is_released_when_reading_the_position_fails():
    conn = mysql_conn("8.0.36", status_fails=True)  # 1227: a privilege refusal, one line naming it
    with pytest.raises(SourceAccessError, match="access denied: .* for SHOW MASTER STATUS"):
        source.open_snapshot(conn)
    assert conn.statements[-1] == "UNLOCK TABLES"


def test_no_binlog_is_a_snapshot_error():
    conn = FakeConn("10.11.19-MariaDB", {"SELECT @@gtid_binlog_pos,": [(b"", b"1", NOW)],
                                         "SELECT @@gtid_binlog_pos": [(b"",)],
                                         "SHOW STATUS": [(b"Binlog_snapshot_file", b"")]})
    with pytest.raises(source.SnapshotError, match="log_bin"):
        source.open_snapshot(conn)


TABLE_ROWS = [(*row, b"BASE TABLE") for row in [
    (b"mysql", b"user", b"5"), (b"sys", b"x", b"1"), (b"information_schema", b"T", None),
    (b"performance_schema", b"p", b"0"), (b"d", b"a", b"10"), (b"d", b"ab", b"3"),
    (b"d", b"a", b"10"), (b"e", b"log", None), (b"e", b"z", b"2")]]


@pytest.mark.parametrize("include, exclude, expected", [
    ((), (), ["d.a", "d.ab", "e.log", "e.z"]),                    # system schemas never
    ((r"d\.a",), (), ["d.a"]),                                  # fullmatch, not search
    ((r"d\.a", r"d\..*"), (), ["d.a", "d.ab"]),                 # named twice: one table
    ((r"d\..*", r"e\.z"), (r"d\.ab",), ["d.a", "e.z"]),         # exclude wins
    ((), (r"e\..*",), ["d.a", "d.ab"]),
    ((r"mysql\..*",), (), []),                                  # not even when included
])
def test_list_tables_include_exclude(include, exclude, expected):
    conn = FakeConn("10.11.19-MariaDB", {"SELECT TABLE_SCHEMA": TABLE_ROWS})
    tables = source.list_tables(conn, TableFilter.compile(include, exclude))
    assert [t.qualified for t in tables] == expected
    assert conn.statements == [source.TABLES_QUERY]
    assert "'mysql', 'information_schema', 'performance_schema', 'sys'" in source.TABLES_QUERY
    assert "TABLE_TYPE IN ('BASE TABLE', 'SYSTEM VERSIONED')" in source.TABLES_QUERY
    if expected[:1] == ["d.a"]:
        assert tables[0].estimated_rows == 10


def test_bad_regex_names_flag_and_pattern():
    with pytest.raises(ValueError, match=r"--exclude '\(' is not a regular expression"):
        TableFilter.compile([r"d\..*"], ["("])


def batches_of(n, width=1, per_fetch=4):
    """Fetched batches of rows (id, b'x' * width), per_fetch rows a fetch."""
    rows = [(str(i).encode(), b"x" * width) for i in range(n)]
    return [chunk_values.batch(TWO, rows[i:i + per_fetch]) for i in range(0, n, per_fetch)]


TWO = (values.SourceColumn(0, "id", "int", "int(11)", None),
       values.SourceColumn(1, "v", "blob", "blob", None))


def ids(chunks):
    return [[int(v) for v in chunk.column(0).to_pylist()] for chunk in chunks]


def test_chunks_cut_by_rows_across_fetches():
    assert [c.num_rows for c in cut_chunks(batches_of(12), max_rows=5, max_bytes=10**9)] == [5, 5, 2]
    assert [c.num_rows for c in cut_chunks(batches_of(10, per_fetch=10),
                                           max_rows=5, max_bytes=10**9)] == [5, 5]
    assert ids(cut_chunks(batches_of(7, per_fetch=3), max_rows=4)) == [[0, 1, 2, 3], [4, 5, 6]]
    assert list(cut_chunks([], max_rows=5)) == []


def test_chunks_cut_by_bytes_and_a_big_row_goes_alone():
    per_row = 2 * VALUE_OVERHEAD + 1 + 1000
    assert list(row_sizes(batches_of(1, width=1000)[0])) == [per_row]
    chunks = list(cut_chunks(batches_of(10, width=1000), max_rows=100, max_bytes=3 * per_row + 1))
    assert [c.num_rows for c in chunks] == [3, 3, 3, 1]
    assert all(sum(map(int, row_sizes(b))) <= 3 * per_row + 1 for c in chunks for b in c.to_batches())
    mixed = [chunk_values.batch(TWO, [(b"0", b"x" * 1000), (b"1", b"x" * 1000), (b"2", b"y" * 5000),
                                      (b"3", b"x" * 1000)])]
    assert ids(cut_chunks(mixed, max_rows=100, max_bytes=2500)) == [[0, 1], [2], [3]]
    assert list(row_sizes(chunk_values.batch(TWO, [(None, b"ab")]))) == [2 * VALUE_OVERHEAD + 2]


def test_chunks_are_lazy_on_an_endless_stream():
    endless = (chunk_values.batch(TWO, [(str(i).encode(), b"")]) for i in itertools.count())
    assert ids([next(cut_chunks(endless, max_rows=4))]) == [[0, 1, 2, 3]]


COLUMNS = {
    ("d", "a"): [(b"1", b"id", b"int", b"int(11)", None),
                 (b"2", b"name", b"varchar", b"varchar(9)", b"utf8mb4")],
    ("d", "b"): [(b"1", b"k", b"int", b"int(11)", None)],
}
DATA = {"SELECT `id`, `name` FROM `d`.`a`": [(str(i).encode(), f"n{i}".encode()) for i in range(7)],
        "SELECT `k` FROM `d`.`b`": []}


def table_conn():
    return FakeConn("10.11.19-MariaDB", {
        "SHOW CREATE TABLE `d`.`a`": [(b"a", b"CREATE TABLE `a` (...)")],
        "SHOW CREATE TABLE `d`.`b`": [(b"b", b"CREATE TABLE `b` (...)")],
        values.COLUMNS_QUERY: lambda args: COLUMNS[args],
        **DATA})

POINT = source.SnapshotPoint("mdb-bin.000003", 1234, "0-1-10", 7, NOW_US)


def test_run_records_order_chunks_and_the_shrinking_tables_field():
    conn = table_conn()
    run = source.Run("src", "id1", POINT, chunk_rows=3, progress_s=3600)
    tables = [source.SourceTable("d", "a", 7), source.SourceTable("d", "b", 0)]
    records = list(source.run_records(conn, run, tables))
    got = [(r.kind, r.table, r.chunk_no, r.row_count if r.kind == "rows" else 0, r.tables) for r in records]
    both, only_b = ("d.a", "d.b"), ("d.b",)
    assert got == [
        ("begin", None, None, 0, both),
        ("table", "a", None, 0, both),
        ("rows", "a", 0, 3, both), ("rows", "a", 1, 3, both), ("rows", "a", 2, 1, both),
        ("table_end", "a", None, 0, only_b),
        ("table", "b", None, 0, only_b),
        ("table_end", "b", None, 0, ()),
        ("end", None, None, 0, ()),
    ]
    assert records[1].create_table == "CREATE TABLE `a` (...)"
    assert {r.statement for r in records if r.kind == "rows"} == {"SELECT `id`, `name` FROM `d`.`a`"}
    assert [r.row_count for r in records if r.kind == "table_end"] == [7, 0]
    assert all((r.snapshot_id, r.binlog_file, r.binlog_pos, r.gtid, r.server_id, r.snapshot_ts)
               == ("id1", "mdb-bin.000003", 1234, "0-1-10", 7, NOW_US) for r in records)
    first_row = records[2].row_images()[0]
    assert [(v["ordinal"], v["name"], v["text"]) for v in first_row] == [(0, "id", "0"), (1, "name", "n0")]
    assert conn.unbuffered == ["SELECT `id`, `name` FROM `d`.`a`", "SELECT `k` FROM `d`.`b`"]
    decoded = SnapshotRecord.decode(records[3].encode())
    assert decoded == records[3] and decoded.tables == both


def test_rows_are_read_by_the_row_stream_in_batches_of_half_the_chunk_budget():
    conn = FakeConn("10.11.19-MariaDB", {"SELECT": [(str(i).encode(), b"w" * 1000) for i in range(3000)]})
    batches = list(source.stream_batches(conn, "SELECT", list(TWO), max_bytes=100_000))
    assert conn.unbuffered == ["SELECT"] and conn.statements == ["SELECT"]
    per_row = 1000 + 3  # ids of 1-4 digits: values of 1,001-1,004 bytes
    assert batches[0].num_rows == 100_000 // 2 // per_row
    assert sum(b.num_rows for b in batches) == 3000
    narrow = FakeConn("10.11.19-MariaDB", {"SELECT": [(str(i).encode(), b"") for i in range(12)]})
    batches = source.stream_batches(narrow, "SELECT", list(TWO), 1 << 20, max_rows=5)
    assert [b.num_rows for b in batches] == [5, 5, 2]


def test_the_pure_python_fallback_gives_the_same_batches(monkeypatch):
    rows = [(str(i).encode(), None if i % 3 else b"v" * i) for i in range(2500)]
    conn = FakeConn("10.11.19-MariaDB", {"SELECT": rows})
    native = list(source.stream_batches(conn, "SELECT", list(TWO), 1 << 22))
    monkeypatch.setattr(source.row_stream, "NATIVE", False)
    conn = FakeConn("10.11.19-MariaDB", {"SELECT": rows})
    monkeypatch.setattr(source, "SSCursor", lambda c: FakeCursor(c))
    fallback = list(source.stream_batches(conn, "SELECT", list(TWO), 1 << 22))
    assert pa.Table.from_batches(fallback).equals(pa.Table.from_batches(native))


def test_without_the_compiled_reader_connect_says_so(monkeypatch):
    monkeypatch.setattr(source.row_stream, "NATIVE", False)
    monkeypatch.setattr(source.pymysql, "connect", lambda **kwargs: kwargs)
    lines = []
    kwargs = source.connect(source.ServerOptions("h", 3306, "u", "p"), warn=lines.append)
    assert len(lines) == 1 and "_textrows is not built" in lines[0]
    assert kwargs["use_unicode"] is False and kwargs["conv"] == source.pymysql_wire.RAW_BYTES["conv"]


def test_error_mid_table_names_source_table_and_position():
    conn = table_conn()
    conn.answers["SELECT `id`, `name` FROM `d`.`a`"] = OperationalError(2013, "Lost connection")
    run = source.Run("src", "id1", POINT)
    with pytest.raises(source.SnapshotError) as err:
        list(source.run_records(conn, run, [source.SourceTable("d", "a")]))
    assert str(err.value) == ("snapshot of table d.a failed: 2013: Lost connection "
                              "(source src, file mdb-bin.000003, pos 1234)")


def snapshot_kafka_record(kind, tables, header=("mdb-bin.000002", 120)):
    rec = SnapshotRecord(kind, "id1", "mdb-bin.000003", 1234, 7, NOW_US, tables=tables)
    return KafkaRecord("src", *header, rec.encode(), kind=TopicKind.SNAPSHOT)


def test_last_state_of_binlog_and_snapshot_records():
    assert last_state(None) is None
    event = KafkaRecord("src", "mdb-bin.000004", 500, bytes(19 + 10))
    assert last_state(event) == LastRecord(BinlogPosition("mdb-bin.000004", 529))
    C = BinlogPosition("mdb-bin.000002", 120)  # the header position, not the run's own P (1234)
    assert last_state(snapshot_kafka_record("rows", ("d.a", "d.b"))) == LastRecord(C, "rows", ("d.a", "d.b"))
    assert last_state(snapshot_kafka_record("table_end", ())) == LastRecord(C, "table_end", ())
    assert last_state(snapshot_kafka_record("end", None)) == LastRecord(C, "end", ())


def test_progress_line_rate_and_estimated_eta():
    t = [100.0]
    out = io.StringIO()
    p = TableProgress("src", "d.a", 1000, interval_s=5, out=out, clock=lambda: t[0])
    t[0] = 102.0
    p.add(200)  # 2 s < 5 s: no line yet
    assert out.getvalue() == ""
    t[0] = 105.0
    p.add(300)
    assert out.getvalue() == ("cdc-ship src: snapshot d.a: 500 rows, 100 rows/s, "
                              "ETA 5 s (of ~1,000 rows, estimated)\n")
    p.add(600)
    assert "past the estimate of ~1,000 rows" in p.line()
    assert "ETA ?" in TableProgress("s", "d.b", None, clock=lambda: 0.0).line()


def test_row_sizes_of_slices_with_nulls_count_a_null_as_empty():
    rows = [(str(i).encode(), None if i % 3 == 0 else b"x" * i) for i in range(40)]
    batch = chunk_values.batch(TWO, rows)
    expected = [2 * VALUE_OVERHEAD + len(a) + len(b or b"") for a, b in rows]
    assert list(row_sizes(batch)) == expected
    assert list(row_sizes(batch.slice(7, 20))) == expected[7:27]
    assert list(row_sizes(batch.slice(40))) == []
    garbage_under_null = pa.Array.from_buffers(pa.binary(), 2, [pa.py_buffer(b"\x02"), pa.py_buffer(
        b"\x00\x00\x00\x00\x03\x00\x00\x00\x05\x00\x00\x00"), pa.py_buffer(b"abcde")], null_count=1)
    assert list(row_sizes(pa.RecordBatch.from_arrays([garbage_under_null], names=["c0"]))) == [8, 8 + 2]

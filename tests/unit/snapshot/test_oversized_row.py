"""Issue #38 item 6 (pure parts): a snapshot row larger than the topic takes stops the shipper with
one line naming the table, the row, the size and the limit (not a bare binlog position); a restart
with --exclude takes a table out of the interrupted run's remaining tables, saying so."""
from __future__ import annotations

import pytest

from libs.shipper import kafka_sink, snapshot_run
from libs.source.errors import ShipError
from libs.shipper.kafka_sink import KafkaSink
from libs.contracts.topic import Origin
from libs.snapshot import oversized, source, values
from libs.snapshot.protocol import RUN, StartPlan
from libs.contracts.position import BinlogPosition
from libs.contracts.table_names import TableName
from tests.unit.snapshot.test_snapshot_source import POINT, FakeConn, rows_from_the_fake  # noqa: F401 - autouse

LIMIT = 2000  # the test's limit: the record of the 3000-byte row below is over it
BASE = b"BASE TABLE"
C = BinlogPosition("mdb-bin.000001", 4)


class FakeProducer:
    def __init__(self):
        self.values = []

    def produce(self, topic, *, value, **_kw):
        self.values.append(value)

    def poll(self, _timeout):
        return 0


def fake_sink(monkeypatch) -> KafkaSink:
    """A KafkaSink whose producer is a list; the limit lowered the way a test of the real one does."""
    monkeypatch.setattr(kafka_sink, "MAX_EVENT_BYTES", LIMIT)
    sink = KafkaSink.__new__(KafkaSink)
    sink.topic, sink.source, sink.key, sink.partition = "binlog", "src", b"src", 0
    sink.max_event_bytes, sink._error, sink.delivered = LIMIT, None, 0
    sink._producer = FakeProducer()
    return sink


def one_table_conn(create: bytes, rows: list[tuple]) -> FakeConn:
    return FakeConn("10.11.19-MariaDB", {
        "SELECT TABLE_SCHEMA": [(b"d", b"t", b"3", BASE)],
        "SHOW CREATE TABLE `d`.`t`": [(b"t", create)],
        values.COLUMNS_QUERY: lambda _args: [(b"1", b"id", b"int", b"int(11)", None),
                                             (b"2", b"body", b"blob", b"blob", None)],
        "SELECT `id`, `body` FROM `d`.`t`": rows})


def run_snapshot(monkeypatch, conn, snap=None, plan=StartPlan(RUN, None)):
    monkeypatch.setattr(source, "open_snapshot", lambda conn, settle: (settle(conn), POINT)[1])
    sink = fake_sink(monkeypatch)
    snapshot_run._run(conn, "src", sink, snap or snapshot_run.SnapshotOptions(), plan,
                      snapshot_run.SnapshotStats(), 3600, Origin("0-7"),
                      lambda: FakeConn("10.11.19-MariaDB", {}))
    return sink


ROWS = [(b"1", b"small"), (b"7", b"x" * 3000), (b"9", b"small")]


def test_an_oversized_row_names_table_key_size_limit_and_the_ways_on(monkeypatch):
    conn = one_table_conn(b"CREATE TABLE `t` (\n  `id` int(11) NOT NULL,\n  `body` blob,\n"
                          b"  PRIMARY KEY (`id`)\n) ENGINE=InnoDB", ROWS)
    with pytest.raises(ShipError) as err:
        run_snapshot(monkeypatch, conn)
    line = str(err.value)
    assert "\n" not in line
    assert "`d`.`t`" in line and "primary key id=7" in line
    size = int(line.split("record of ")[1].split(" bytes")[0])
    assert size > LIMIT and f"limit of {LIMIT} bytes" in line
    assert "message.max.bytes" in line and "--max-event-bytes" in line
    assert r"--exclude 'd\.t'" in line
    assert "(source src, file mdb-bin.000003, pos 1234)" in line  # the run's position P


def test_a_keyless_table_names_the_row_by_its_place(monkeypatch):
    conn = one_table_conn(b"CREATE TABLE `t` (\n  `id` int(11),\n  `body` blob\n) ENGINE=InnoDB", ROWS)
    with pytest.raises(ShipError,
                       match=r"`d`\.`t`: row 2 in the SELECT's order \(row 1 of chunk 1; no primary key\)"):
        run_snapshot(monkeypatch, conn)


def test_rows_under_the_limit_are_sent(monkeypatch):
    conn = one_table_conn(b"CREATE TABLE `t` (`id` int, `body` blob)", ROWS[:1])
    sink = run_snapshot(monkeypatch, conn)
    assert len(sink._producer.values) == 5  # begin, table, rows, table_end, end


REMAINING = ("d.a", "d.big", "`x.y`.`z`")


@pytest.mark.parametrize("include, exclude, kept, left_out", [
    ((), (), REMAINING, ()),
    ((), (r"d\.big",), ("d.a", "`x.y`.`z`"), (("d", "big"),)),
    ((), (r"x\.y\.z",), ("d.a", "d.big"), (("x.y", "z"),)),    # the joined text, as --exclude documents
    ((r"d\.a",), (), REMAINING, ()),                            # --include does not narrow a resumed run
    ((r"d\..*",), (r"d\.b.*", r"d\.a"), ("`x.y`.`z`",), (("d", "a"), ("d", "big"))),
])
def test_resume_tables_leaves_out_what_exclude_matches(include, exclude, kept, left_out):
    keep = source.TableFilter.compile(include, exclude)
    got_kept, got_out = oversized.resume_tables(REMAINING, keep.excludes)
    assert (tuple(got_kept), tuple(got_out)) == (kept, tuple(TableName(*p) for p in left_out))


def test_a_restart_with_exclude_takes_the_table_out_of_the_interrupted_run(capsys):
    conn = FakeConn("10.11.19-MariaDB", {"SELECT TABLE_SCHEMA": [
        (b"d", b"a", b"1", BASE), (b"d", b"big", b"1", BASE), (b"d", b"c", b"1", BASE)]})
    snap = snapshot_run.SnapshotOptions(exclude=(r"d\.big",))
    tables = snapshot_run._run_tables(conn, StartPlan(RUN, C, ("d.big", "d.c")), snap, "src")
    assert [t.pair for t in tables] == [("d", "c")]
    lines = [line for line in capsys.readouterr().err.splitlines() if "left out" in line]
    assert lines == ["cdc-ship src: snapshot: `d`.`big` left out of the interrupted run's remaining "
                     "tables (--exclude): its snapshot is abandoned, its binlog changes still flow"]


def test_the_largest_row_of_a_chunk_is_named_by_its_composite_key():
    per_column = [[b"1", b"2", b"3"], [b"a", b"b", b"c"], [b"s", b"x" * 10, None]]
    index, size = oversized.largest_row(per_column)
    assert (index, size) == (1, 12)
    assert oversized.row_label(["ID", "Code", "body"], per_column, index, ("id", "code"), 4, 100) == (
        "primary key id=2, code=b")
    assert oversized.row_label(["ID", "Code", "body"], per_column, index, (), 4, 100) == (
        "row 102 in the SELECT's order (row 2 of chunk 4; no primary key)")

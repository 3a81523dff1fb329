"""Row images read through the schema version in force at their position (issue #17 item 2;
libs/targets/decoding.py layouts, libs/stream/assembler/change_records.py): a Table_map without column
names takes each ordinal's name, UNSIGNED and labels from that version; an image that does not
fit it raises RowImageMismatch naming source, file and position; rows logged before and after a
DDL read with their own versions. The binlog is written by the simulator's codec."""
from __future__ import annotations

import pytest

from libs.stream.assembler import InMemorySpillStore
from libs.schema_history.history import SchemaHistory
from libs.schema_history.row_layout import RowLayout
from libs.targets.decoding import RowImageMismatch
from libs.schema_history.table_schema import TableSchema
from libs.simulator.master import Master, Session
from libs.simulator.schema import Table, int_col
from libs.simulator.sinks import FileSink
from libs.simulator.statements import Insert
from libs.contracts.position import BinlogPosition
from libs.stages.assembly import InputFrame, assemble_group, decode_segment
from libs.targets.decoding import DecodeHints

FILE = "sim-bin.000001"
SIM = Table("t", (int_col("id", nullable=False), int_col("x"), int_col("y")), primary_key=("id",))


def _segments(*rows):
    """One transaction per row of SIM, logged without column names (NO_LOG)."""
    sink = FileSink()
    master = Master([SIM], sink, flavour="mariadb", session=Session("ROW", "full", True))
    for row in rows:
        master.execute(Insert("t", (row,)))
    frames = [InputFrame(f.data, FILE, f.pos) for f in sink.frames]
    records, _ = assemble_group("src", None, frames, InMemorySpillStore())
    return [r for r in records if r["kind"] == "segment"][-len(rows):]  # after the master's own DDL


def _hints(history: SchemaHistory) -> DecodeHints:
    return DecodeHints((), {key: [(v.position.key(), v.schema and RowLayout.of(v.schema))
                                  for v in history.versions(*key)] for key in history.tables()})


def _rows(segments, hints):
    return [{v["name"]: v["text"] for v in c["after"]} for s in segments
            for c in decode_segment(s, hints=hints) if c["op"] == "insert"]


def test_each_row_takes_the_names_of_the_version_at_its_position():
    first, second = _segments({0: 1, 1: 10, 2: -1}, {0: 2, 1: 20, 2: -2})
    between = BinlogPosition(FILE, second["frames"][0]["pos"] - 1)  # a DDL logged between the two
    history = SchemaHistory()
    history.start("src", TableSchema.parse("CREATE TABLE sim.t (id INT PRIMARY KEY, a INT, b INT)", "sim"),
                  BinlogPosition(FILE, 4))
    history.apply("src", between, "ALTER TABLE t CHANGE a c INT UNSIGNED AFTER b", "sim")
    assert _rows([first, second], _hints(history)) == [
        {"id": "1", "a": "10", "b": "-1"},
        {"id": "2", "b": "20", "c": str(2**32 - 2)},  # the new version: c after b, UNSIGNED
    ]


def test_without_a_version_the_declaration_reads_as_before():
    (segment,) = _segments({0: 1, 1: 10, 2: -1})
    (change,) = [c for c in decode_segment(segment, hints=DecodeHints()) if c["op"] == "insert"]
    assert [v["name"] for v in change["after"]] == [None, None, None]


@pytest.mark.parametrize("create, reason", [
    ("CREATE TABLE sim.t (id INT PRIMARY KEY, a INT)",
     "the row image has 3 columns, the schema of sim.t in force at its position has 2 (id, a)"),
    ("CREATE TABLE sim.t (id INT PRIMARY KEY, a BIGINT, b INT)",
     "column 2 of the row image is logged as LONG, "
     "the schema of sim.t in force at its position has a BIGINT"),
])
def test_an_image_that_does_not_fit_its_version_is_refused_with_its_position(create, reason):
    (segment,) = _segments({0: 1, 1: 10, 2: -1})
    history = SchemaHistory()
    history.start("src", TableSchema.parse(create, "sim"), BinlogPosition(FILE, 4))
    (rows_pos,) = [c["binlog_pos"] for c in decode_segment(segment) if c["op"] == "insert"]
    with pytest.raises(RowImageMismatch) as err:
        decode_segment(segment, hints=_hints(history))
    assert str(err.value) == f"source src, {FILE}:{rows_pos}: {reason}"
    assert err.value.kind == "schema_mismatch"


def test_a_dropped_table_has_no_layout_and_reads_as_before():
    (segment,) = _segments({0: 1, 1: 10, 2: -1})
    history = SchemaHistory()
    history.start("src", TableSchema.parse("CREATE TABLE sim.t (id INT PRIMARY KEY, a INT)", "sim"),
                  BinlogPosition(FILE, 4))
    history.apply("src", BinlogPosition(FILE, 5), "DROP TABLE t", "sim")
    (change,) = [c for c in decode_segment(segment, hints=_hints(history)) if c["op"] == "insert"]
    assert [v["text"] for v in change["after"]] == ["1", "10", "-1"]

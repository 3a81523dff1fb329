"""The rows stage's mapInArrow function (pipelines/stages/rows.py DecodeSegments) on a real
binlog's segments, without a Spark session: its Arrow output is every segment's change records
in order, in full batches of OUT_BATCH_ROWS, and an undecodable segment becomes one error row."""
import pyarrow as pa
import pytest
from pyspark.sql.pandas.types import to_arrow_schema

from libs.stream.assembler import InMemorySpillStore
from libs.stages.assembly import assemble_group, decode_segment
from pipelines.job.schemas import ASSEMBLED_RECORD, spark_schema
from pipelines.stages import rows
from tests.unit.stream.test_stream_assembly import CORPUS, frames_of


@pytest.fixture(scope="module")
def segments() -> list[dict]:
    records, _ = assemble_group("src", None, frames_of(f"{CORPUS}/row_minimal/mdb-bin.000002"),
                                InMemorySpillStore(), now=0)
    return [r for r in records if r["kind"] == "segment"]


def _arrow_batches(segments: list[dict], per_batch: int) -> list[pa.RecordBatch]:
    schema = to_arrow_schema(spark_schema(ASSEMBLED_RECORD))
    return [pa.RecordBatch.from_pylist(segments[i:i + per_batch], schema=schema)
            for i in range(0, len(segments), per_batch)]


def _broken(segment: dict) -> dict:
    """The segment with its last content frame's row image cut short (size fields patched)."""
    frames = [dict(f) for f in segment["frames"]]
    raw = frames[-1]["raw"]
    cut = raw[:-6]
    frames[-1]["raw"] = cut[:9] + len(cut).to_bytes(4, "little") + cut[13:]
    return {**segment, "frames": frames}


def test_output_is_every_change_in_order_in_full_batches(segments, monkeypatch):
    monkeypatch.setattr(rows, "OUT_BATCH_ROWS", 50)
    expected = [c for s in segments for c in decode_segment(s)]
    assert len(expected) > 3 * 50  # several output batches, crossing segment boundaries

    out = list(rows.DecodeSegments()(iter(_arrow_batches(segments, per_batch=7))))

    assert [b.num_rows for b in out[:-1]] == [50] * (len(out) - 1) and 0 < out[-1].num_rows <= 50
    got = pa.Table.from_batches(out).to_pylist()
    assert [(c["trx_id"], c["change_seq"], c["op"]) for c in got] == \
           [(c["trx_id"], c["change_seq"], c["op"]) for c in expected]
    assert all(c["decode_error"] is None for c in got)


def test_an_undecodable_segment_becomes_one_error_row_between_the_others(segments):
    index = next(i for i, s in enumerate(segments) if s["frames"][-1]["raw"][4] in (23, 24, 25, 30, 31, 32))
    broken = segments[:index] + [_broken(segments[index])] + segments[index + 1:]

    got = pa.Table.from_batches(
        list(rows.DecodeSegments()(iter(_arrow_batches(broken, per_batch=5))))).to_pylist()

    errors = [c for c in got if c["decode_error"] is not None]
    assert [(e["trx_id"], e["source"]) for e in errors] == [(segments[index]["trx_id"], "src")]
    assert errors[0]["error_kind"]
    good = [c["trx_id"] for c in got if c["decode_error"] is None]
    assert segments[index]["trx_id"] not in good
    assert good == [c["trx_id"] for s in segments if s is not segments[index] for c in decode_segment(s)]


def test_an_image_that_does_not_fit_its_schema_version_is_one_error_row_the_others_decode():
    """Issue #17: a row image whose Table_map does not fit the table's schema version at its
    position (here a version logged between the first and second transaction says two columns,
    the images have three) becomes its transaction's error row, kind schema_mismatch, naming the
    position; the transactions before and after (a later version fits again) decode by name."""
    from libs.schema_history.history import SchemaHistory
    from libs.schema_history.row_layout import history_layouts
    from libs.schema_history.table_schema import TableSchema
    from libs.contracts.position import BinlogPosition
    from libs.targets.decoding import DecodeHints
    from tests.unit.schema_history.test_rows_by_version import FILE, _segments

    segs = _segments({0: 1, 1: 10, 2: -1}, {0: 2, 1: 20, 2: -2}, {0: 3, 1: 30, 2: -3})
    history = SchemaHistory()
    history.start("src", TableSchema.parse("CREATE TABLE sim.t (id INT PRIMARY KEY, x INT, y INT)", "sim"),
                  BinlogPosition(FILE, 4))
    history.apply("src", BinlogPosition(FILE, segs[1]["frames"][0]["pos"] - 1), "ALTER TABLE t DROP y",
                  "sim")
    history.apply("src", BinlogPosition(FILE, segs[2]["frames"][0]["pos"] - 1), "ALTER TABLE t ADD y INT",
                  "sim")
    hints = DecodeHints((), history_layouts(history, {}))

    got = pa.Table.from_batches(
        list(rows.DecodeSegments(hints=hints)(iter(_arrow_batches(segs, per_batch=2))))).to_pylist()

    (error,) = [c for c in got if c["decode_error"] is not None]
    assert error["trx_id"] == segs[1]["trx_id"] and error["error_kind"] == "schema_mismatch"
    (rows_pos,) = [c["binlog_pos"] for c in decode_segment(segs[1]) if c["op"] == "insert"]
    assert error["decode_error"] == (f"source src, {FILE}:{rows_pos}: the row image has 3 columns, "
                                     f"the schema of sim.t in force at its position has 2 (id, x)")
    inserts = [c for c in got if c["decode_error"] is None and c["op"] == "insert"]
    assert [(c["trx_id"], [(v["name"], v["text"]) for v in c["after"]]) for c in inserts] == [
        (segs[0]["trx_id"], [("id", "1"), ("x", "10"), ("y", "-1")]),
        (segs[2]["trx_id"], [("id", "3"), ("x", "30"), ("y", "-3")])]

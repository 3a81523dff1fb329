"""The rows stage's mapInArrow function (pipelines/stages/rows.py DecodeSegments) on a real
binlog's segments, without a Spark session: its Arrow output is every segment's change records
in order, in full batches of OUT_BATCH_ROWS, and an undecodable segment becomes one error row."""
import pyarrow as pa
import pytest
from pyspark.sql.pandas.types import to_arrow_schema

from libs.assembler import InMemorySpillStore
from libs.stream_assembly import assemble_group, decode_segment
from pipelines.schemas import ASSEMBLED_RECORD, spark_schema
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

    got = pa.Table.from_batches(list(rows.DecodeSegments()(iter(_arrow_batches(broken, per_batch=5))))).to_pylist()

    errors = [c for c in got if c["decode_error"] is not None]
    assert [(e["trx_id"], e["source"]) for e in errors] == [(segments[index]["trx_id"], "src")]
    assert errors[0]["error_kind"]
    good = [c["trx_id"] for c in got if c["decode_error"] is None]
    assert segments[index]["trx_id"] not in good
    assert good == [c["trx_id"] for s in segments if s is not segments[index] for c in decode_segment(s)]

"""libs/snapshot/row_stream.py over a fake packet source: batches equal chunk_values.batch of the
same rows whatever the reads' sizes, limits, the terminator handed back, errors."""
from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st
from pymysql import err

from libs.snapshot import chunk_values, row_stream
from libs.snapshot.values import SourceColumn
from tests.unit.snapshot.row_packets import EOF_PAYLOAD, FakePackets, err_payload, row_section


def columns(n: int):
    return [SourceColumn(i, f"c{i}", "blob", "blob", None) for i in range(n)]


def read_all(rows, width, *, read=7, max_rows=1000, max_bytes=1 << 20, seq=3):
    data, next_seq = row_section(rows, seq=seq)
    source = FakePackets(data, seq=seq, read=read)
    batches = list(row_stream.batches(source, columns(width), max_rows=max_rows, max_bytes=max_bytes))
    assert source.finished == (next_seq, EOF_PAYLOAD) and source.at == len(data)
    return batches


value = st.one_of(st.none(), st.binary(max_size=40), st.binary(min_size=250, max_size=300))


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 5).flatmap(lambda n: st.tuples(st.just(n),
                                                     st.lists(st.tuples(*[value] * n), max_size=30))),
       st.integers(1, 600), st.integers(1, 12), st.integers(1, 2000), st.integers(0, 255))
def test_batches_equal_chunk_values_batch_of_the_same_rows(shaped, read, max_rows, max_bytes, seq):
    width, rows = shaped
    batches = read_all(rows, width, read=read, max_rows=max_rows, max_bytes=max_bytes, seq=seq)
    at = 0
    for batch in batches:
        assert 0 < batch.num_rows <= max_rows
        assert batch.equals(chunk_values.batch(columns(width), rows[at:at + batch.num_rows]))
        at += batch.num_rows
    assert at == len(rows)


def test_batches_are_cut_by_rows_then_by_bytes():
    rows = [(str(i).encode(), b"w" * 1000) for i in range(300)]
    assert [b.num_rows for b in read_all(rows, 2, read=5000, max_rows=128)] == [128, 128, 44]
    sizes = [b.num_rows for b in read_all(rows, 2, read=5000, max_bytes=50_000)]
    assert sizes[0] == 49 and sum(sizes) == 300     # 1,001-1,003 bytes a row
    assert read_all([], 3) == []


def test_a_row_larger_than_the_buffer_grows_it():
    rows = [(b"1", b"x" * (3 << 20)), (b"2", b"y")]
    batches = read_all(rows, 2, read=1 << 20, max_bytes=1000)
    assert [b.num_rows for b in batches] == [1, 1]
    assert batches[0].column(1)[0].as_py() == rows[0][1]


def test_err_packet_raises_the_servers_error_after_the_rows_before_it():
    data, _ = row_section([(b"1",), (b"2",)], seq=3, end=err_payload(1317, "Query execution was interrupted"))
    source = FakePackets(data)
    got = []
    with pytest.raises(err.OperationalError, match="interrupted"):
        for batch in row_stream.batches(source, columns(1), max_rows=1, max_bytes=100):
            got.append(batch.column(0)[0].as_py())
    assert got == [b"1", b"2"] and source.finished[0] == 6 and not source.abandoned


def test_malformed_packets_and_early_stops_abandon_the_connection():
    data, _ = row_section([(b"1",), (b"2",)], seq=4)
    bad = FakePackets(data, seq=3)
    with pytest.raises(row_stream.RowStreamError, match="sequence id 4, expected 3"):
        list(row_stream.batches(bad, columns(1), max_rows=10, max_bytes=100))
    assert bad.abandoned and bad.finished is None
    data, _ = row_section([(b"1",), (b"2",)], seq=3)
    stopped = FakePackets(data)
    stream = row_stream.batches(stopped, columns(1), max_rows=1, max_bytes=100)
    next(stream)
    stream.close()
    assert stopped.abandoned
    trailing = FakePackets(data + b"\x01\x00\x00\x07x", read=1000)
    with pytest.raises(row_stream.RowStreamError, match="5 bytes after the result set's end"):
        list(row_stream.batches(trailing, columns(1), max_rows=10, max_bytes=100))
    assert trailing.abandoned

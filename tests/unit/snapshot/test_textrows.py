"""libs/snapshot/_textrows.c `parse` as a table of hand-built row sections (row_packets.py):
value encodings, partial packets, terminators, malformed packets (an error, never a crash)."""
from __future__ import annotations

import pyarrow as pa
import pytest

from libs.snapshot import chunk_values, row_stream
from libs.snapshot.values import SourceColumn
from tests.unit.snapshot.row_packets import EOF_PAYLOAD, err_payload, lenenc, packet, row_section

parse = row_stream.parse
BIG = 1 << 40


def columns(n: int):
    return [SourceColumn(i, f"c{i}", "blob", "blob", None) for i in range(n)]


def as_batch(n: int, parsed) -> pa.RecordBatch:
    _consumed, rows, _seq, _end, _term, _need, arrays = parsed
    return pa.RecordBatch.from_arrays([row_stream._array(rows, *a) for a in arrays],
                                      schema=chunk_values.schema(columns(n)))


def test_the_extension_is_built_in_this_environment():
    """setup.py builds it (not optional); a silent fallback to PyMySQL would be ~5x slower."""
    assert row_stream.NATIVE


VALUES = [
    ("null", None), ("empty", b""), ("one byte", b"x"), ("250: 1-byte length", b"a" * 250),
    ("251: 0xFC length", b"b" * 251), ("65535: last 0xFC", b"c" * 65535),
    ("65536: 0xFD length", b"d" * 65536), ("0xFB byte inside", b"\xfb\xfe\xff\x00"),
]


@pytest.mark.parametrize("name, value", VALUES, ids=[v[0] for v in VALUES])
def test_each_value_encoding(name, value):
    rows = [(b"1", value, b"z"), (value, None, b"")]
    data, seq = row_section(rows, seq=3)
    parsed = parse(data, 3, 3, 100, BIG)
    consumed, n, next_seq, end, terminator, need, _ = parsed
    assert (consumed, n, next_seq, end, terminator, need) == (len(data), 2, seq, 1, EOF_PAYLOAD, 0)
    assert as_batch(3, parsed).equals(chunk_values.batch(columns(3), rows))


@pytest.mark.parametrize("width", [2, 3, 8])
def test_wider_length_than_needed_is_read(width):
    data = packet(lenenc(b"abc", width) + lenenc(None), 0) + packet(EOF_PAYLOAD, 1)
    assert as_batch(2, parse(data, 2, 0, 10, BIG)).column(0).to_pylist() == [b"abc"]


def test_zero_rows_is_the_eof_alone():
    data, seq = row_section([], seq=9)
    consumed, rows, next_seq, end, terminator, need, arrays = parse(data, 2, 9, 100, BIG)
    assert (consumed, rows, next_seq, end, terminator) == (len(data), 0, 10, 1, EOF_PAYLOAD)
    assert as_batch(2, (consumed, rows, next_seq, end, terminator, need, arrays)).equals(
        chunk_values.batch(columns(2), []))


def test_a_partial_packet_is_left_unconsumed_with_what_it_needs():
    rows = [(b"1", b"x" * 100), (b"2", b"y" * 100)]
    data, _ = row_section(rows, seq=0, end=None)
    first = len(row_section(rows[:1], end=None)[0])
    for cut in (first, first + 2, first + 4, first + 50, len(data) - 1):
        consumed, n, seq, end, terminator, need, _ = parse(data[:cut], 2, 0, 100, BIG)
        assert (consumed, n, seq, end, terminator) == (first, 1, 1, 0, None)
        assert need == (4 - (cut - first) if cut - first < 4 else len(data) - cut)
    assert parse(b"", 2, 0, 100, BIG)[:6] == (0, 0, 0, 0, None, 4)


def test_row_and_byte_limits_stop_before_a_row():
    rows = [(str(i).encode(), b"v" * 10) for i in range(10)]
    data, _ = row_section(rows, seq=250)  # the sequence id wraps at 256
    consumed, n, seq, end, _t, need, _ = parse(data, 2, 250, 4, BIG)
    assert (n, seq, end, need) == (4, 254, 0, 0)
    assert consumed == len(row_section(rows[:4], end=None)[0])
    assert parse(data, 2, 250, 100, 22)[1] == 2    # 11 bytes of values a row
    assert parse(data, 2, 250, 100, 1)[1] == 1     # one row larger than the budget goes alone
    assert parse(data, 2, 250, 0, BIG)[:2] == (0, 0)
    whole = parse(data, 2, 250, 100, BIG)
    assert whole[1:4] == (10, (250 + 11) % 256, 1)


def test_err_packet_ends_the_rows_and_is_returned():
    payload = err_payload(1317, "Query execution was interrupted", "70100")
    data, _ = row_section([(b"1",)], seq=1, end=payload)
    consumed, n, seq, end, terminator, need, _ = parse(data, 1, 1, 100, BIG)
    assert (consumed, n, seq, end, terminator, need) == (len(data), 1, 3, 2, payload, 0)


def test_split_row_of_16_mb_and_more_is_joined():
    big = bytes(range(256)) * (0x10000 + 7)   # 16,779,008 bytes: 0xFFFFFF + more
    rows = [(b"1", big), (b"2", None), (b"3", b"x" * (0xFFFFFF - 6))]  # payload exactly 0xFFFFFF: + empty
    data, seq = row_section(rows, seq=0)
    parsed = parse(data, 2, 0, 100, BIG)
    assert parsed[1:5] == (3, seq, 1, EOF_PAYLOAD)
    assert as_batch(2, parsed).equals(chunk_values.batch(columns(2), rows))
    assert parse(data[:len(data) // 2], 2, 0, 100, BIG)[:2] == (0, 0)  # incomplete: nothing taken


@pytest.mark.parametrize("name, data, message", [
    ("bad sequence id", packet(lenenc(b"a"), 4), "sequence id 4, expected 3"),
    ("value past its packet", packet(b"\x05abc", 3) + b"de", "run past the packet"),
    ("length past its packet", packet(b"\xfc\x01", 3), "length of column 1 runs past"),
    ("too few values", packet(lenenc(b"a"), 3), "ends before column 2"),
    ("bytes after the values", packet(lenenc(b"a") + lenenc(b"b") + b"!", 3), "1 bytes after"),
    ("0xFF starting a value", packet(lenenc(b"a") + b"\xff", 3), "starts with 0xFF"),
    ("huge 8-byte length", packet(b"\xfe" + b"\xff" * 8 + b"x" * 8, 3), "run past the packet"),
], ids=lambda v: v if isinstance(v, str) and len(v) < 30 else "")
def test_malformed_packets_are_errors(name, data, message):
    with pytest.raises(ValueError, match=message):
        parse(data + packet(EOF_PAYLOAD, 4), 2, 3, 100, BIG)


def test_truncated_input_of_any_length_never_crashes():
    data, _ = row_section([(b"1", b"x" * 300, None), (b"", b"\xfb" * 3, b"y" * 70000)], seq=0)
    for cut in range(0, len(data), 97):
        consumed, *_ = parse(data[:cut], 3, 0, 100, BIG)
        assert consumed <= cut
    for flip in range(0, 400, 3):  # a corrupted byte: parsed or refused, never read out of bounds
        corrupt = bytearray(data)
        corrupt[flip] ^= 0x5A
        try:
            parse(bytes(corrupt), 3, 0, 100, BIG)
        except ValueError:
            pass


def test_arguments_are_checked():
    with pytest.raises(ValueError):
        parse(b"", 0, 0, 1, 1)
    with pytest.raises(ValueError):
        parse(b"", 1, 256, 1, 1)

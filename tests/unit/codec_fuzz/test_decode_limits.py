"""Decode limits (libs/binlog/limits.py) on hostile frames built with the codec's own encoders:
each is refused with a typed error naming its position, before the work it would cost is done."""
from __future__ import annotations

import struct
import tracemalloc

import pytest

from libs.binlog import (CompressedQuery, DecodeContext, DecodeLimits, LimitError, MalformedError,
                         RowChange, Rows, TableMap, decode_event)
from libs.binlog.constants import ColumnType as T
from libs.binlog.constants import EventType
from libs.binlog.json_binary import json_binary_to_text
from libs.binlog.rows import compress_payload, decode_rows, encode_rows
from libs.binlog.temporal import TIMEF_OFS, make_datetime2, make_time2, make_timestamp2
from tests.unit.codec_fuzz.hostile import (COMPRESSION_ZSTD, MYSQL8_FILE, context_after_fde,
                                           frame, nested_payload, payload, zlib_bomb, zstd_bomb)

MB = 1 << 20


def peak_mb(fn) -> float:
    """Peak Python heap growth while fn() runs (it must raise a BinlogError)."""
    tracemalloc.start()
    try:
        with pytest.raises(MalformedError):
            fn()
        return tracemalloc.get_traced_memory()[1] / MB
    finally:
        tracemalloc.stop()


@pytest.fixture
def ctx() -> DecodeContext:
    return context_after_fde(MYSQL8_FILE)[0]


# ---- Transaction_payload ------------------------------------------------------------------

def test_a_nested_payload_is_a_limit_error_naming_its_position(ctx):
    assert decode_event(nested_payload(ctx, 1), 4, ctx).body.events  # one level: a real payload
    with pytest.raises(LimitError, match="nested") as err:
        decode_event(nested_payload(ctx, 2), 1234, ctx)
    assert (err.value.pos, err.value.file, err.value.type_code) == (1234, MYSQL8_FILE.name, 40)


def test_deep_payload_nesting_never_recurses(ctx):
    # ~25 bytes a level: decoded recursively without a limit, 1,000 levels exhaust the
    # interpreter's stack (a RecursionError, not a BinlogError: a poison pill for the job)
    with pytest.raises(LimitError):
        decode_event(nested_payload(ctx, 1000), 4, ctx)
    assert ctx.payload_depth == 0


def test_zstd_payload_declaring_more_than_the_limit_is_refused_before_inflating(ctx):
    ctx.limits = DecodeLimits(max_decompressed_bytes=MB)
    bomb = zstd_bomb(2 * MB)
    hostile = payload(ctx, b"", ctype=COMPRESSION_ZSTD, usize=2 * MB, data=bomb)
    with pytest.raises(LimitError, match="max_decompressed_bytes"):
        decode_event(hostile, 4, ctx)


def test_zstd_frame_inflating_beyond_its_declared_size_costs_no_memory(ctx):
    # the zstd frame header says 64 MiB; the payload declares 1,000 bytes: only ~1,000 are made
    hostile = payload(ctx, b"", ctype=COMPRESSION_ZSTD, usize=1000, data=zstd_bomb(64 * MB))
    assert peak_mb(lambda: decode_event(hostile, 4, ctx)) < 8


# ---- MariaDB compressed events ------------------------------------------------------------

def _int_table(ctx: DecodeContext, ncols: int = 1) -> TableMap:
    tm = TableMap(7, 0, "d", "t", (T.LONG,) * ncols, (0,) * ncols, (True,) * ncols)
    ctx.table_maps[7] = tm
    return tm


def _rows_body(ctx, kind, type_code, changes, before=(True,), after=(True,)) -> bytes:
    rows = Rows(kind, 7, 1, b"", len(after if kind == "insert" else before),
                before if kind != "insert" else None,
                after if kind != "delete" else None, tuple(changes), type_code=type_code)
    return encode_rows(type_code, rows, ctx)


def test_compressed_rows_zlib_bomb_costs_no_memory(ctx):
    _int_table(ctx)
    plain = _rows_body(ctx, "insert", EventType.WRITE_ROWS_COMPRESSED, [RowChange(None, {0: 1})])
    head = plain[:len(plain) - len(compress_payload(b"\0\x01\0\0\0"))]  # up to the bitmaps
    bomb = zlib_bomb(64 * MB)
    body = head + bytes((0x82,)) + (5).to_bytes(2, "big") + bomb  # declares 5 bytes
    assert peak_mb(lambda: decode_rows(EventType.WRITE_ROWS_COMPRESSED, body, ctx)) < 8


def test_compressed_rows_declaring_more_than_the_limit(ctx):
    _int_table(ctx)
    ctx.limits = DecodeLimits(max_decompressed_bytes=1000)
    body = _rows_body(ctx, "insert", EventType.WRITE_ROWS_COMPRESSED,
                      [RowChange(None, {0: i}) for i in range(300)])  # 1,500 bytes of rows
    with pytest.raises(LimitError, match="max_decompressed_bytes"):
        decode_rows(EventType.WRITE_ROWS_COMPRESSED, body, ctx)


def test_compressed_query_declaring_more_than_the_limit(ctx):
    ctx.limits = DecodeLimits(max_decompressed_bytes=100)
    text = b"INSERT INTO t VALUES " + b",".join(b"(1)" for _ in range(100))
    hostile = frame(ctx, EventType.QUERY_COMPRESSED,
                    CompressedQuery(1, 0, 0, "test", text, b"", {}))
    with pytest.raises(LimitError):
        decode_event(hostile, 4, ctx)


# ---- rows per event ----------------------------------------------------------------------------

def test_update_with_an_empty_after_image_is_malformed(ctx):
    # accepted, one small compressed event fabricates a row change per byte of its inflated rows
    _int_table(ctx)
    changes = [RowChange({0: None}, {})] * 200_000
    body = _rows_body(ctx, "update", EventType.UPDATE_ROWS_COMPRESSED, changes, after=(False,))
    assert len(body) < 2000
    with pytest.raises(MalformedError, match="after image"):
        decode_rows(EventType.UPDATE_ROWS_COMPRESSED, body, ctx)


def test_update_with_an_empty_before_image_is_malformed(ctx):
    _int_table(ctx)
    body = _rows_body(ctx, "update", EventType.UPDATE_ROWS, [RowChange({}, {0: 1})], before=(False,))
    with pytest.raises(MalformedError, match="before image"):
        decode_rows(EventType.UPDATE_ROWS, body, ctx)


def test_rows_per_event_are_bounded(ctx):
    _int_table(ctx)
    limit = ctx.limits.max_rows_per_event
    at_limit = _rows_body(ctx, "insert", EventType.WRITE_ROWS, [RowChange(None, {0: None})] * limit)
    assert len(decode_rows(EventType.WRITE_ROWS, at_limit, ctx).rows) == limit
    over = _rows_body(ctx, "insert", EventType.WRITE_ROWS, [RowChange(None, {0: None})] * (limit + 1))
    with pytest.raises(LimitError, match="max_rows_per_event"):
        decode_rows(EventType.WRITE_ROWS, over, ctx)


# ---- columns per table --------------------------------------------------------------------

def test_table_map_above_4096_columns_is_a_limit_error(ctx):
    from libs.binlog.tablemap import decode_table_map, encode_table_map

    wide = TableMap(7, 0, "d", "t", (T.LONG,) * 4097, (0,) * 4097, (True,) * 4097)
    with pytest.raises(LimitError, match="max_columns"):
        decode_table_map(encode_table_map(wide, ctx), ctx)


def test_a_raised_column_limit_decodes_wide_tables(ctx):
    # 20,000 columns: a NULL mask written as a decimal literal exceeds Python's int-string limit
    ctx.limits = DecodeLimits(max_columns=20_000)
    _int_table(ctx, 20_000)
    row = {i: (None if i % 3 else i) for i in range(20_000)}
    body = _rows_body(ctx, "insert", EventType.WRITE_ROWS, [RowChange(None, row)] * 2,
                      after=(True,) * 20_000)
    assert [c.after for c in decode_rows(EventType.WRITE_ROWS, body, ctx).rows] == [row, row]


# ---- JSON ---------------------------------------------------------------------------------------

def _json_array(values: list[bytes]) -> bytes:
    """A small JSON array of doubles (type 0x0b, values stored after the entries)."""
    n = len(values)
    header = 4 + 3 * n
    entries = b"".join(bytes((0x0B,)) + struct.pack("<H", header + 8 * i) for i in range(n))
    return b"\x02" + struct.pack("<HH", n, header + 8 * n) + entries + b"".join(values)


@pytest.mark.parametrize("value", [float("inf"), float("-inf"), float("nan")])
def test_json_double_that_is_not_finite_is_malformed(value):
    # MySQL stores no inf/NaN in JSON; printed, it is not JSON
    assert json_binary_to_text(_json_array([struct.pack("<d", 1.5)])) == "[1.5]"
    with pytest.raises(MalformedError, match="double"):
        json_binary_to_text(_json_array([struct.pack("<d", value)]))


def test_json_values_per_document_are_bounded():
    doc = _json_array([struct.pack("<d", 1.0)] * 10)
    assert json_binary_to_text(doc, max_fields=10).count("1") == 10
    with pytest.raises(LimitError, match="max_json_fields"):
        json_binary_to_text(doc, max_fields=9)


# ---- temporal fractions ---------------------------------------------------------------------

def test_time2_fraction_of_a_million_microseconds_or_more_is_malformed():
    decode, encode, _ = make_time2(6)
    packed = ((1 << 12 | 2 << 6 | 3) << 24) + 999_999
    assert decode((packed + TIMEF_OFS).to_bytes(6, "big"), 0)[0] == "01:02:03.999999"
    with pytest.raises(MalformedError, match="fractional"):
        decode((packed + 1 + TIMEF_OFS).to_bytes(6, "big"), 0)
    hundredths = make_time2(2)[0]  # one fraction byte holds hundredths: 0..99
    assert hundredths(bytes((0x80, 0x10, 0x83, 99)), 0)[0] == "01:02:03.99"
    with pytest.raises(MalformedError):
        hundredths(bytes((0x80, 0x10, 0x83, 100)), 0)


def test_datetime2_and_timestamp2_fractions_out_of_range_are_malformed():
    for make, head in ((make_datetime2, (0x80 << 32).to_bytes(5, "big")), (make_timestamp2, bytes(4))):
        decode = make(2)[0]
        decode(head + bytes((99,)), 0)
        with pytest.raises(MalformedError):
            decode(head + bytes((100,)), 0)

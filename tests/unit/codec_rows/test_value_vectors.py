"""Annotated byte vectors per column type: decode, then encode back to the same bytes.
Vectors are hand-built from the format specs (cited per row) or taken from corpus events."""
from decimal import Decimal

import pytest

from libs.binlog.constants import ColumnType as T
from libs.binlog.errors import UnsupportedError
from libs.binlog.values import ColumnSpec, column_codec, enum_label, set_members, split_geometry

V = pytest.param
VECTORS = [
    # (type, meta, unsigned, wire bytes, value)  -- integers little endian (rows_event.h)
    V(T.TINY, 0, False, b"\x80", -128, id="tiny-min"),
    V(T.TINY, 0, True, b"\xff", 255, id="tiny-unsigned-max"),
    V(T.SHORT, 0, False, b"\x00\x80", -32768, id="short-min"),
    V(T.INT24, 0, False, b"\x00\x00\x80", -8388608, id="int24-min"),
    V(T.INT24, 0, True, b"\xff\xff\xff", 16777215, id="int24-unsigned-max"),
    V(T.LONG, 0, True, b"\xff\xff\xff\xff", 4294967295, id="long-unsigned"),
    V(T.LONGLONG, 0, False, b"\xff" * 7 + b"\x7f", 2**63 - 1, id="longlong-max"),
    V(T.LONGLONG, 0, True, b"\xff" * 8, 2**64 - 1, id="longlong-unsigned-max"),
    V(T.FLOAT, 4, False, b"\x00\x00\xc0\x3f", 1.5, id="float"),
    V(T.DOUBLE, 8, False, b"\x00\x00\x00\x00\x00\x00\x00\x80", -0.0, id="double-neg-zero"),
    # NEWDECIMAL(5,2): 3 int digits -> 2 bytes, 2 frac digits -> 1 byte; sign bit flipped,
    # negative = all bytes inverted (decimal.cc)
    V(T.NEWDECIMAL, 5 << 8 | 2, False, bytes.fromhex("7c189c"), Decimal("-999.99"), id="decimal-5-2-neg"),
    V(T.NEWDECIMAL, 12 << 8 | 2, False, bytes.fromhex("800000000001"), Decimal("0.01"), id="decimal-12-2"),
    V(T.NEWDECIMAL, 30 << 8 | 30, False, bytes.fromhex("875bcd1500bc614e35b7bf87037a"),
      Decimal("0.123456789012345678901234567890"), id="decimal-30-30"),
    V(T.YEAR, 0, False, b"\x7c", 2024, id="year"),
    V(T.YEAR, 0, False, b"\x00", 0, id="year-zero"),
    # DATE: 3 bytes LE, day 5 bits | month 4 bits | year
    V(T.DATE, 0, False, ((2024 << 9) | (2 << 5) | 29).to_bytes(3, "little"), "2024-02-29", id="date"),
    V(T.DATE, 0, False, b"\x00\x00\x00", "0000-00-00", id="date-zero-kept-as-text"),
    V(T.DATE, 0, False, (2024 << 9).to_bytes(3, "little"), "2024-00-00", id="date-partial-zero"),
    # TIME2(0): 3 bytes BE, offset 0x800000; (h<<12 | m<<6 | s)
    V(T.TIME2, 0, False, (0x800000 + ((12 << 12) | (34 << 6) | 56)).to_bytes(3, "big"),
      "12:34:56", id="time2-0"),
    V(T.TIME2, 6, False,
      (0x800000000000 - (((838 << 12) | (59 << 6) | 59) << 24) - 999999).to_bytes(6, "big"),
      "-838:59:59.999999", id="time2-6-min"),
    V(T.TIME2, 1, False, bytes.fromhex("7ffffff6"), "-00:00:00.1", id="time2-1-small-negative"),
    V(T.DATETIME2, 3, False, None, "2024-02-29 12:34:56.123", id="datetime2-3"),
    V(T.DATETIME2, 0, False, bytes.fromhex("8000000000"), "0000-00-00 00:00:00", id="datetime2-zero"),
    V(T.TIMESTAMP2, 6, False, bytes.fromhex("5e0be100000000"), "1577836800.000000", id="timestamp2-6"),
    V(T.TIMESTAMP2, 0, False, b"\0\0\0\0", "0", id="timestamp2-zero"),
    V(T.TIMESTAMP, 0, False, (1709210096).to_bytes(4, "little"), "1709210096", id="timestamp-old"),
    V(T.DATETIME, 0, False, (20240229123456).to_bytes(8, "little"), "2024-02-29 12:34:56", id="datetime-old"),
    V(T.TIME, 0, False, (-123456).to_bytes(3, "little", signed=True), "-12:34:56", id="time-old"),
    # strings: length prefix 1 byte when max length < 256, else 2
    V(T.VARCHAR, 20, False, b"\x03abc", b"abc", id="varchar-1-byte-len"),
    V(T.VARCHAR, 1020, False, b"\x02\x00\xc3\xa9", b"\xc3\xa9", id="varchar-2-byte-len"),
    V(T.STRING, 0xFE3C, False, b"\x02a ", b"a ", id="char-60"),
    V(T.STRING, 0xCEFC, False, b"\x01\x00x", b"x", id="char-1020-bytes-bug37426"),
    V(T.BLOB, 3, False, b"\x02\x00\x00\x00\x01", b"\x00\x01", id="mediumblob"),
    V(T.BLOB, 4, False, b"\x00\x00\x00\x00", b"", id="longblob-empty"),
    V(T.ENUM, 0xF702, False, b"\x2c\x01", 300, id="enum-2-bytes"),
    V(T.SET, 0xF808, False, bytes.fromhex("0100008001000080"), 0x8000000180000001, id="set-64"),
    # BIT(10): meta bits%8=2 | bytes=1 << 8; 2 bytes big endian
    V(T.BIT, 0x0102, False, b"\x02\x01", 0b1000000001, id="bit-10"),
    V(T.GEOMETRY, 4, False, b"\x19\x00\x00\x00" + b"\xe6\x10\x00\x00\x01\x01\x00\x00\x00" + b"\0" * 16,
      b"\xe6\x10\x00\x00\x01\x01\x00\x00\x00" + b"\0" * 16, id="geometry-point-srid-4326"),
    V(T.VECTOR, 4, False, b"\x08\x00\x00\x00\x00\x00\x80\x3f\x00\x00\x80\xbf", (1.0, -1.0), id="vector"),
    V(T.NULL, 0, False, b"", None, id="null-type"),
]


@pytest.mark.parametrize("ctype, meta, unsigned, wire, value", VECTORS)
def test_decode_and_encode_round_trip(ctype, meta, unsigned, wire, value):
    decode, encode = column_codec(ColumnSpec(ctype, meta, unsigned))
    if wire is None:  # value-first vector: the encoding must decode back to the value
        wire = encode(value)
    got, end = decode(b"\xaa" + wire + b"\xbb", 1)  # neighbours must not leak in
    assert got == value
    assert end == 1 + len(wire)
    assert encode(value) == wire


def test_json_column_decodes_text_and_reencodes_server_bytes():
    # {"a": 1}: small object, 1 member, size 12, key entry (offset 11, len 1), value inlined int16
    doc = bytes.fromhex("00" "0100" "0c00" "0b00" "0100" "05" "0100" "61")
    decode, encode = column_codec(ColumnSpec(T.JSON, 4))
    value, _ = decode(len(doc).to_bytes(4, "little") + doc, 0)
    assert value == '{"a": 1}'
    assert encode(value) == len(doc).to_bytes(4, "little") + doc
    assert encode('{"a": 1}') == len(doc).to_bytes(4, "little") + doc  # built from text


def test_old_decimal_is_refused_with_a_codec_error():
    with pytest.raises(UnsupportedError):
        column_codec(ColumnSpec(T.DECIMAL, 0))


def test_helpers():
    assert enum_label(2, (b"a", b"b")) == b"b"
    assert set_members(0b101, (b"x", b"y", b"z")) == (b"x", b"z")
    assert split_geometry(b"\xe6\x10\0\0WKB") == (4326, b"WKB")


def test_render_text_uses_the_collation():
    from libs.binlog.values import render_text
    assert render_text(b"\xe9", 8) == "é"  # latin1_swedish_ci
    assert render_text(b"\xc3\xa9", 224) == "é"  # utf8mb4_unicode_ci
    assert render_text(b"\x00\xe9", 35) == "é"  # ucs2 (big endian)
    assert render_text(b"\xff", 63) == b"\xff"  # binary stays bytes

"""Regression tests for codec bugs found by bench/fuzz_codec.py: each hostile input must raise a
BinlogError subclass promptly (never hang, recurse or blow up memory)."""
from __future__ import annotations

import signal
import struct

import pytest

from libs.binlog import DecodeContext, MalformedError, TableMap
from libs.binlog.json_binary import json_binary_to_text
from libs.binlog.rows import decode_rows


@pytest.fixture
def deadline():
    """Fail instead of hanging: SIGPROF after 5 s of this process's CPU (not of the wall clock:
    the unit tier runs beside the Spark tier at idle priority, scripts/dev)."""
    def boom(signum, frame):
        raise TimeoutError("codec did not return within 5 s of CPU")
    old = signal.signal(signal.SIGPROF, boom)
    signal.setitimer(signal.ITIMER_PROF, 5)
    yield
    signal.setitimer(signal.ITIMER_PROF, 0)
    signal.signal(signal.SIGPROF, old)


def _small_array(entries: list[tuple[int, int]], size: int | None = None) -> bytes:
    """Small JSON array (type 0x02) header + value entries (type, u16 offset)."""
    body = b"".join(bytes((t,)) + struct.pack("<H", off) for t, off in entries)
    size = size if size is not None else 4 + len(body)
    return struct.pack("<HH", len(entries), size) + body


def test_json_container_pointing_at_itself(deadline):
    # fuzz: json-opaque.binlog, bit flip -> a value offset of 0 = the container itself
    # (was RecursionError)
    doc = b"\x02" + _small_array([(0x02, 0)])
    with pytest.raises(MalformedError):
        json_binary_to_text(doc)


def test_json_siblings_sharing_one_offset(deadline):
    # two entries pointing at the container itself: the work doubles per level
    doc = b"\x02" + _small_array([(0x02, 0), (0x02, 0)])
    with pytest.raises(MalformedError):
        json_binary_to_text(doc)


def test_json_too_deep(deadline):
    inner = b""
    for _ in range(150):  # [[[...]]] 150 deep, each level a one-entry small array at offset 7
        inner = _small_array([(0x02, 7)], 7 + len(inner)) + inner if inner else _small_array([])
    with pytest.raises(MalformedError, match="deeper"):
        json_binary_to_text(b"\x02" + inner)


def test_json_valid_nesting_still_decodes():
    inner = _small_array([])
    for _ in range(20):
        inner = _small_array([(0x02, 7)], 7 + len(inner)) + inner
    assert json_binary_to_text(b"\x02" + inner) == "[" * 21 + "]" * 21


def _ctx_with_int_table() -> DecodeContext:
    ctx = DecodeContext()
    ctx.table_maps[1] = TableMap(1, 0, "d", "t", (3,), (0,), (False,))
    return ctx


def test_rows_event_with_no_columns_present_but_row_bytes(deadline):
    # fuzz: vector.binlog Write_rows with the columns-present bitmap zeroed: zero-byte images,
    # the row loop never advanced (hang + unbounded memory)
    body = (1).to_bytes(6, "little") + b"\x00\x00" + b"\x01" + b"\x00" + b"\x00\x2a\x00\x00\x00"
    for type_code in (23, 25):
        with pytest.raises(MalformedError, match="no columns present"):
            decode_rows(type_code, body, _ctx_with_int_table())
    update = (1).to_bytes(6, "little") + b"\x00\x00" + b"\x01" + b"\x00\x00" + b"\x00"
    with pytest.raises(MalformedError, match="no columns present"):
        decode_rows(24, update, _ctx_with_int_table())


def test_rows_event_with_no_columns_and_no_rows_is_fine():
    body = (1).to_bytes(6, "little") + b"\x00\x00" + b"\x01" + b"\x00"
    assert decode_rows(23, body, _ctx_with_int_table()).rows == ()


def test_rows_event_int_row_still_decodes():
    body = (1).to_bytes(6, "little") + b"\x00\x00" + b"\x01" + b"\x01" + b"\x00\x2a\x00\x00\x00"
    assert decode_rows(23, body, _ctx_with_int_table()).rows[0].after == {0: 42}

"""Fuzz: mutated / truncated corpus frames either decode or raise a BinlogError subclass, never
anything else (go-mysql style "returns or errors, never crashes")."""
from __future__ import annotations

from hypothesis import HealthCheck, given, settings, strategies as st

from libs.binlog import BinlogError, DecodeContext, decode_event, iter_events, iter_frames

from .corpus import MARIADB, MYSQL

_SOURCES = [MARIADB / "mixed_stmt" / "mdb-bin.000007", MARIADB / "misc" / "mdb-bin.000012",
            MARIADB / "compressed" / "mdb-bin.000011",
            MYSQL / "rust_mysql_common-test-data" / "transaction_compression.000001",
            MYSQL / "rust_mysql_common-test-data" / "binlog_transaction_with_GTID_TAG.000001",
            MYSQL / "mysql-5.7.22" / "suite/binlog/std_data/binlog_old_version_4_1.000001"]
FRAMES = []
FDES = []
for _p in _SOURCES:
    _data = _p.read_bytes()
    _ctx = DecodeContext()
    for _ev in iter_events(_data, ctx=_ctx):
        if _ev.type_code not in (19, 23, 24, 25, 30, 31, 32, 166, 167, 168):  # rows: rows tests
            FRAMES.append((_data[_ev.pos:_ev.end_pos], len(FDES)))
    FDES.append(_ctx.fde)


@settings(max_examples=3000, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.data())
def test_mutated_frames_only_raise_binlog_errors(data):
    frame, fde_index = data.draw(st.sampled_from(FRAMES))
    frame = bytearray(frame)
    for _ in range(data.draw(st.integers(0, 4))):
        i = data.draw(st.integers(0, len(frame) - 1))
        frame[i] = data.draw(st.integers(0, 255))
    cut = data.draw(st.integers(0, len(frame)))
    frame = bytes(frame[:cut]) if data.draw(st.booleans()) else bytes(frame)
    ctx = DecodeContext(fde=FDES[fde_index])
    verify = data.draw(st.booleans())
    try:
        decode_event(frame, 4, ctx, verify_checksum=verify)
    except BinlogError:
        pass


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=300))
def test_random_files_only_raise_binlog_errors(blob):
    try:
        for _ in iter_events(b"\xfebin" + blob):
            pass
    except BinlogError:
        pass
    try:
        list(iter_frames(blob, 0))
    except BinlogError:
        pass

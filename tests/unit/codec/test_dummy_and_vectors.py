"""Dummy-event encoder against the server's real bytes (corpus/mariadb/replica_captures), and
annotated byte vectors for framing, the registry default (WL#4033) and typed errors."""
from __future__ import annotations

import json
import struct
import zlib

import pytest

from libs.binlog import (ChecksumError, DecodeContext, DummyEvent, Ignorable, MalformedError,
                         NoFormatDescriptionError, TruncatedError, UnknownEventError, Xid,
                         decode_event, decode_headers, encode_event, iter_events, iter_frames,
                         make_dummy, substitute_for_replica)
from libs.binlog.dummy import dummy_text_type

from .corpus import MARIADB

CAPS = MARIADB / "replica_captures"
ORIGINAL = {"row_full": MARIADB / "row_full" / "mdb-bin.000001",
            "compressed": MARIADB / "compressed" / "mdb-bin.000011",
            "mixed_stmt.stmt": MARIADB / "mixed_stmt" / "mdb-bin.000007",
            "misc": MARIADB / "misc" / "mdb-bin.000012"}


def _captures():
    manifest = json.loads((CAPS / "manifest.json").read_text())
    return [c for c in manifest["captures"] if (CAPS / c["capture"]).exists()]


@pytest.mark.parametrize("cap", _captures(), ids=lambda c: c["capture"])
def test_substitution_is_byte_identical_to_server(cap):
    """Walk the original file; what substitute_for_replica makes must equal, frame by frame,
    what the server sent (after its artificial Rotate)."""
    scenario = cap["capture"].split(".cap")[0]
    original = ORIGINAL[scenario].read_bytes()
    sent = [f for _, f in iter_frames((CAPS / cap["capture"]).read_bytes())][1:]  # skip artificial Rotate
    it = iter(sent)
    n = 0
    try:
        for _, frame in iter_frames(original):
            out = substitute_for_replica(frame, cap["capability"], dump_flags=cap["dump_flags"])
            if out is None:
                continue
            assert out == next(it), f"event {n}"
            n += 1
    except MalformedError as err:  # misc cap0: the server failed the same way (error 1236)
        assert "Failed to replace GTID event" in err.message and scenario == "misc"
        assert n == len(sent)
        return
    assert n == len(sent)


def test_dummy_text_forms():
    assert dummy_text_type(b"# Du") == (True, None)
    assert dummy_text_type(b"# Dummy event replacing event type 16") == (True, None)  # cut 160
    assert dummy_text_type(b"# Dummy event replacing event type 160 that") == (True, 160)
    full = b"# Dummy event replacing event type 161 that slave cannot handle.   "
    assert dummy_text_type(full) == (True, 161)
    assert dummy_text_type(b"# Dx") == (False, None)
    assert dummy_text_type(b"BEGIN") == (False, None)


def test_make_dummy_sizes():
    hdr = struct.pack("<IBIIIH", 7, 163, 1, 29, 100, 0)
    frame = hdr + bytes(6)
    frame += struct.pack("<I", zlib.crc32(frame))
    out = make_dummy(frame, checksum=True)
    assert len(out) == 29 and out[4] == 14 and out[23:24] == b"!"  # User_var name "!"
    ctx = DecodeContext()
    ctx.fde = next(iter_events((MARIADB / "nochecksum" / "mdb-bin.000014").read_bytes())).body
    ctx.fde = type(ctx.fde)(4, "10.11.19-MariaDB", 0, 19, ctx.fde.post_header_lengths, 1, "mariadb")
    ev = decode_event(out, 100, ctx)
    assert isinstance(ev.body, DummyEvent) and ev.body.carrier == "user_var"


# ---- annotated vectors -----------------------------------------------------------------------

def _ctx_crc():
    """A context with a MariaDB FDE (CRC32) taken from the corpus."""
    data = (MARIADB / "misc" / "mdb-bin.000012").read_bytes()
    ctx = DecodeContext()
    next(iter(iter_events(data, ctx=ctx)))
    return ctx


def _frame(type_code, body, flags=0, crc=True):
    size = 19 + len(body) + (4 if crc else 0)
    f = struct.pack("<IBIIIH", 1700000000, type_code, 1, size, 1000, flags) + body
    return f + struct.pack("<I", zlib.crc32(f)) if crc else f


def test_xid_vector_roundtrip():
    # header: ts, type 16 (XID), server 1, size 31, log_pos 1000, flags 0 | body: xid u64 = 42
    ctx = _ctx_crc()
    frame = _frame(16, struct.pack("<Q", 42))
    ev = decode_event(frame, 900, ctx)
    assert ev.body == Xid(42) and ev.checksum_ok is True and ev.end_pos == 931
    assert encode_event(ev, ctx) == frame


def test_checksum_error_keeps_raw_and_position():
    ctx = _ctx_crc()
    frame = bytearray(_frame(16, struct.pack("<Q", 42)))
    frame[20] ^= 0xFF
    with pytest.raises(ChecksumError) as info:
        decode_event(bytes(frame), 900, ctx)
    assert (info.value.pos, info.value.type_code, info.value.raw) == (900, 16, bytes(frame))


def test_body_not_consumed_is_malformed():
    ctx = _ctx_crc()
    with pytest.raises(MalformedError, match="not fully consumed"):
        decode_event(_frame(16, struct.pack("<Q", 42) + b"\0"), 4, ctx)


def test_unknown_type_wl4033():
    ctx = _ctx_crc()
    ev = decode_event(_frame(99, b"abc", flags=0x80), 4, ctx)  # LOG_EVENT_IGNORABLE_F
    assert ev.body == Ignorable(99, b"abc")
    assert encode_event(ev, ctx) == _frame(99, b"abc", flags=0x80)
    with pytest.raises(UnknownEventError) as info:
        decode_event(_frame(99, b"abc"), 4, ctx)
    assert (info.value.pos, info.value.type_code) == (4, 99)


def test_truncated_vs_malformed_framing():
    with pytest.raises(TruncatedError):
        list(iter_frames(b"\xfebin" + _frame(16, bytes(8))[:25]))
    bad = bytearray(_frame(16, bytes(8)))
    struct.pack_into("<I", bad, 9, 10)  # event_size 10 < 19
    with pytest.raises(MalformedError):
        list(iter_frames(b"\xfebin" + bytes(bad)))
    with pytest.raises(NoFormatDescriptionError):
        list(iter_events(b"\xfebin" + _frame(16, bytes(8))))


def test_vectorized_headers_match_struct():
    data = (MARIADB / "mixed_stmt" / "mdb-bin.000008").read_bytes()
    frames = [f for _, f in iter_frames(data)]
    out = decode_headers(frames + [b"short"]).to_pylist()
    for f, row in zip(frames, out):
        ts, t, sid, size, lp, fl = struct.unpack_from("<IBIIIH", f)
        assert (row["timestamp"], row["type_code"], row["server_id"], row["event_size"],
                row["log_pos"], row["flags"], row["size_ok"]) == (ts, t, sid, size, lp, fl, True)
        assert row["crc_stored"] == struct.unpack_from("<I", f, len(f) - 4)[0]
    assert out[-1] is None

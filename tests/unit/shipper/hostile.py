"""Hostile binlog files built from real corpus frames and the codec's own encoder."""
from __future__ import annotations

import dataclasses
import struct
from pathlib import Path

from libs.binlog import DecodeContext, Rotate, encode_event, iter_events

from .frames import HEADER, ROW_FULL, with_crc


def events_of(path: Path):
    return list(iter_events(path.read_bytes()))


def with_rotate_to(name: str, src: Path = ROW_FULL) -> bytes:
    """`src` (which ends with a Rotate) with its Rotate re-encoded to name `name`, valid CRC."""
    data = src.read_bytes()
    events = events_of(src)
    last = events[-1]
    assert isinstance(last.body, Rotate)
    ctx = DecodeContext()
    for _ in iter_events(data[:events[1].pos], ctx=ctx):  # the FDE: the context for encoding
        pass
    rotate = dataclasses.replace(last, body=Rotate(last.body.position, name))
    return data[:last.pos] + encode_event(rotate, ctx)


def with_raw_rotate(body: bytes, src: Path = ROW_FULL) -> bytes:
    """`src` with its last event replaced by a Rotate of this raw body (CRC32 recomputed)."""
    data = src.read_bytes()
    last = events_of(src)[-1]
    h = last.header
    frame = HEADER.pack(h.timestamp, 4, h.server_id, 19 + len(body) + 4, 0, 0) + body
    return data[:last.pos] + with_crc(frame)


def flip_body_byte(data: bytes, pos: int, offset: int = 25) -> bytes:
    """One byte of the event at `pos` changed (its size and stored CRC unchanged)."""
    out = bytearray(data)
    out[pos + offset] ^= 0x5A
    return bytes(out)


def rotate_body(position: int, name: bytes) -> bytes:
    return struct.pack("<Q", position) + name

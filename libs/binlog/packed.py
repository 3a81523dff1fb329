"""Packed integers (net_field_length) and bitmaps used by Table_map and rows events.

Packed integer (rows_event.h "Packed integer", MySQL net_field_length): first byte < 251 is the
value; 0xFC + 2 bytes, 0xFD + 3 bytes, 0xFE + 8 bytes, little endian (0xFB = SQL NULL is not
valid inside these events). Bitmaps are LSB first: bit i of the bitmap is (byte[i // 8] >> (i % 8)) & 1.
"""
from __future__ import annotations

from itertools import chain

from libs.binlog.errors import MalformedError

_BYTE_BITS = tuple(tuple(bool(b >> i & 1) for i in range(8)) for b in range(256))  # LSB first


def read_packed(buf, pos: int, end: int | None = None) -> tuple[int, int]:
    """(value, position after it). Raises MalformedError (never IndexError): these reads happen
    inside a body the framing layer already proved complete, so running past its end means the
    bytes are impossible, not that the stream ended early (STYLE.md practice 4)."""
    if end is None:
        end = len(buf)
    if pos >= end:
        raise MalformedError("packed integer past the end of the body")
    first = buf[pos]
    if first < 251:
        return first, pos + 1
    width = {0xFC: 2, 0xFD: 3, 0xFE: 8}.get(first)
    if width is None:
        raise MalformedError(f"invalid packed integer prefix 0x{first:02x}")
    if pos + 1 + width > end:
        raise MalformedError("packed integer runs past the end of the body")
    return int.from_bytes(buf[pos + 1:pos + 1 + width], "little"), pos + 1 + width


def write_packed(value: int) -> bytes:
    if value < 251:
        return bytes((value,))
    if value < 1 << 16:
        return b"\xfc" + value.to_bytes(2, "little")
    if value < 1 << 24:
        return b"\xfd" + value.to_bytes(3, "little")
    return b"\xfe" + value.to_bytes(8, "little")


def read_bitmap(buf, pos: int, nbits: int, end: int | None = None) -> tuple[tuple[bool, ...], int]:
    nbytes = (nbits + 7) >> 3
    if end is None:
        end = len(buf)
    if pos + nbytes > end:
        raise MalformedError("bitmap runs past the end of the body")
    # per byte, from a table: one shift of an n-bit integer per bit made wide tables quadratic
    bits = tuple(chain.from_iterable(map(_BYTE_BITS.__getitem__, buf[pos:pos + nbytes])))
    return bits[:nbits], pos + nbytes


def write_bitmap(bits, pad_with_ones: bool = False) -> bytes:
    """Bitmap bytes for `bits`; `pad_with_ones` sets the unused high bits (as servers do for
    the columns-present bitmaps of full images)."""
    nbits = len(bits)
    value = 0
    for i, bit in enumerate(bits):
        if bit:
            value |= 1 << i
    nbytes = (nbits + 7) >> 3
    if pad_with_ones:
        value |= ((1 << (nbytes * 8)) - 1) ^ ((1 << nbits) - 1)
    return value.to_bytes(nbytes, "little")


def read_msb_bitmap(buf, pos: int, nbits: int) -> tuple[bool, ...]:
    """MSB-first bitmap (Table_map optional metadata SIGNEDNESS / COLUMN_VISIBILITY)."""
    return tuple(bool((buf[pos + (i >> 3)] >> (7 - (i & 7))) & 1) for i in range(nbits))


def write_msb_bitmap(bits) -> bytes:
    out = bytearray((len(bits) + 7) >> 3)
    for i, bit in enumerate(bits):
        if bit:
            out[i >> 3] |= 0x80 >> (i & 7)
    return bytes(out)

"""Byte-level helpers shared by the event decoders/encoders: a bounds-checked cursor over one
event body, MySQL packed integers (`net_field_length`, pack.cc), and Layout (a field list from
the spec tables compiled once to struct.Struct).

Every read past the end of the body raises MalformedError: the framing layer already proved the
frame itself is complete, so a body shorter than its own length fields is *malformed*, never
*truncated* (STYLE.md practice 4).
"""
from __future__ import annotations

import dataclasses
import struct
from typing import Iterable

from libs.binlog.packed import write_packed

from libs.binlog.errors import MalformedError
from libs.binlog.fastrec import fast_constructor

U8 = struct.Struct("<B")
U16 = struct.Struct("<H")
U32 = struct.Struct("<I")
U64 = struct.Struct("<Q")


class Layout:
    """A fixed-width field table (name, struct code) mirroring a spec table, compiled once."""

    __slots__ = ("names", "struct", "size")

    def __init__(self, fields: Iterable[tuple[str, str]]):
        fields = list(fields)
        self.names = tuple(n for n, _ in fields)
        self.struct = struct.Struct("<" + "".join(c for _, c in fields))
        self.size = self.struct.size

    def unpack(self, buf, offset: int = 0) -> tuple:
        if len(buf) - offset < self.size:
            raise MalformedError(f"need {self.size} bytes for fixed fields, have {len(buf) - offset}")
        return self.struct.unpack_from(buf, offset)

    def pack(self, *values) -> bytes:
        return self.struct.pack(*values)


def layout_codec(layout: Layout, record):
    """(decode, encode) for an event body that is exactly one fixed field table whose names are
    `record`'s fields in order: decode reads the table and proves the body ends there."""
    names = tuple(f.name for f in dataclasses.fields(record))
    if names != layout.names:
        raise TypeError(f"{record.__name__} fields {names} are not the layout's {layout.names}")
    size, unpack = layout.size, layout.struct.unpack
    make = fast_constructor(record)  # Xid: one per transaction

    def decode(header, body, ctx):
        if len(body) != size:
            # Malformed either way; the cursor raises the error naming the overrun or the bytes
            # left over. A well-formed body skips it: one unpack (Xid is one per transaction).
            cur = Cursor(body)
            cur.fields(layout)
            cur.end()
        return make(*unpack(body))

    def encode(rec, header, ctx) -> bytes:
        return layout.pack(*(getattr(rec, name) for name in names))

    # named after the record so profiles and tracebacks tell Xid's decode from Intvar's
    decode.__name__ = decode.__qualname__ = f"decode_{record.__name__}"
    encode.__name__ = encode.__qualname__ = f"encode_{record.__name__}"
    return decode, encode


class Cursor:
    """Reads one event body left to right; `end()` proves it was fully consumed."""

    __slots__ = ("buf", "pos", "limit")

    def __init__(self, buf, pos: int = 0, limit: int | None = None):
        self.buf = buf
        self.pos = pos
        self.limit = len(buf) if limit is None else limit

    @property
    def remaining(self) -> int:
        return self.limit - self.pos

    def _need(self, n: int, what: str) -> None:
        if n < 0 or self.pos + n > self.limit:
            raise MalformedError(f"{what}: need {n} bytes at body offset {self.pos}, "
                                 f"{self.limit - self.pos} left")

    def take(self, n: int, what: str = "bytes") -> bytes:
        self._need(n, what)
        start = self.pos
        self.pos += n
        return bytes(self.buf[start:self.pos])

    def rest(self) -> bytes:
        start = self.pos
        self.pos = self.limit
        return bytes(self.buf[start:self.limit])

    def u8(self, what: str = "u8") -> int:
        self._need(1, what)
        v = self.buf[self.pos]
        self.pos += 1
        return v

    def _unpack(self, st: struct.Struct, what: str) -> int:
        self._need(st.size, what)
        v = st.unpack_from(self.buf, self.pos)[0]
        self.pos += st.size
        return v

    def u16(self, what: str = "u16") -> int:
        return self._unpack(U16, what)

    def u24(self, what: str = "u24") -> int:
        return self.uint(3, what)

    def u32(self, what: str = "u32") -> int:
        return self._unpack(U32, what)

    def u64(self, what: str = "u64") -> int:
        return self._unpack(U64, what)

    def uint(self, n: int, what: str = "uint") -> int:
        """Little-endian unsigned integer of n bytes (e.g. 7-byte commit timestamps)."""
        return int.from_bytes(self.take(n, what), "little")

    def fields(self, layout: Layout) -> tuple:
        values = layout.unpack(self.buf, self.pos)
        if self.pos + layout.size > self.limit:
            raise MalformedError(f"need {layout.size} bytes for fixed fields at {self.pos}")
        self.pos += layout.size
        return values

    def packed_int(self, what: str = "packed integer") -> int:
        """net_field_length_ll (pack.cc): 1 byte < 251, 0xfc+2, 0xfd+3, 0xfe+8. 0xfb (NULL)
        and 0xff are not valid lengths in an event body."""
        first = self.u8(what)
        if first < 251:
            return first
        if first == 0xFC:
            return self.uint(2, what)
        if first == 0xFD:
            return self.uint(3, what)
        if first == 0xFE:
            return self.uint(8, what)
        raise MalformedError(f"{what}: invalid packed-integer prefix 0x{first:02x}")

    def cstring(self, what: str = "string") -> bytes:
        """NUL-terminated string (the NUL is consumed, not returned)."""
        end = bytes(self.buf[self.pos:self.limit]).find(b"\0") if isinstance(self.buf, memoryview) \
            else self.buf.find(b"\0", self.pos, self.limit)
        if end < 0:
            raise MalformedError(f"{what}: missing NUL terminator")
        if isinstance(self.buf, memoryview):
            end += self.pos
        s = bytes(self.buf[self.pos:end])
        self.pos = end + 1
        return s

    def end(self, what: str = "event body") -> None:
        if self.pos != self.limit:
            raise MalformedError(f"{what} not fully consumed: {self.limit - self.pos} bytes left "
                                 f"at body offset {self.pos}")


# Inverse of Cursor.packed_int (net_store_length, minimal form): one encoder for the codec.
pack_int = write_packed


def uint_bytes(value: int, n: int) -> bytes:
    return value.to_bytes(n, "little")

"""Hand-built text-protocol packets (MySQL client/server protocol, "Text Resultset") and a fake
packet source for libs/snapshot/row_stream.py: what a server sends after the column definitions."""
from __future__ import annotations

import struct

EOF_PAYLOAD = b"\xfe\x00\x00\x22\x00"  # 0 warnings, status SERVER_STATUS_AUTOCOMMIT | NO_INDEX_USED
MAX_PAYLOAD = 0xFFFFFF


def lenenc(value: bytes | None, width: int | None = None) -> bytes:
    """A value as a length-encoded string; `width` forces a wider length than needed."""
    if value is None:
        return b"\xfb"
    n = len(value)
    width = width or (1 if n < 0xFB else 2 if n < 1 << 16 else 3 if n < 1 << 24 else 8)
    if width == 1:
        return bytes([n]) + value
    prefix = {2: b"\xfc", 3: b"\xfd", 8: b"\xfe"}[width]
    return prefix + n.to_bytes(width, "little") + value


def packet(payload: bytes, seq: int) -> bytes:
    return struct.pack("<I", len(payload))[:3] + bytes([seq & 0xFF]) + payload


def packets(payload: bytes, seq: int) -> tuple[bytes, int]:
    """A payload as one packet, or split in MAX_PAYLOAD pieces (then one shorter, maybe empty);
    (bytes, next sequence id)."""
    out = bytearray()
    while True:
        piece, payload = payload[:MAX_PAYLOAD], payload[MAX_PAYLOAD:]
        out += packet(piece, seq)
        seq += 1
        if len(piece) < MAX_PAYLOAD:
            return bytes(out), seq & 0xFF


def row_section(rows, seq: int = 3, end: bytes | None = EOF_PAYLOAD) -> tuple[bytes, int]:
    """The row packets of `rows` (tuples of bytes / None) from sequence id `seq`, then `end`
    (EOF by default, None: no terminator); (bytes, next sequence id)."""
    out = bytearray()
    for row in rows:
        data, seq = packets(b"".join(lenenc(v) for v in row), seq)
        out += data
    if end is not None:
        out += packet(end, seq)
        seq = (seq + 1) & 0xFF
    return bytes(out), seq


def err_payload(code: int, message: str, state: str = "HY000") -> bytes:
    return b"\xff" + struct.pack("<H", code) + b"#" + state.encode() + message.encode()


class FakePackets:
    """row_stream.Packets over prepared bytes, `read` bytes a read at most (small: packets
    split across reads)."""

    def __init__(self, data: bytes, seq: int = 3, read: int = 7):
        self.data, self.seq, self.read, self.at = data, seq, read, 0
        self.finished: tuple | None = None
        self.abandoned = False

    def readinto1(self, view) -> int:
        if self.at >= len(self.data):
            raise AssertionError("read past the end of the result: would wait forever")
        n = min(self.read, len(view), len(self.data) - self.at)
        view[:n] = self.data[self.at:self.at + n]
        self.at += n
        return n

    def finish(self, seq: int, terminator: bytes) -> None:
        self.finished = (seq, terminator)
        if terminator[:1] == b"\xff":
            from pymysql import err
            err.raise_mysql_exception(terminator)

    def abandon(self) -> None:
        self.abandoned = True

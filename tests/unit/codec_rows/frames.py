"""Private test helper: walk the frames of a binlog file (not the codec's framing layer).

Layout (binlog_event.h Log_event_header): after the 4-byte magic, each event starts with a
19-byte little-endian common header: timestamp u32, type u8, server_id u32, event_size u32,
log_pos u32, flags u16. The Format_description's last byte before its CRC32 is the checksum
algorithm (1 = CRC32: every later event ends with 4 checksum bytes).
"""
from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path

_HEADER = struct.Struct("<IBIIIH")
FDE = 15


@dataclass(frozen=True)
class Frame:
    pos: int
    type_code: int
    flags: int
    body: bytes  # after the common header, without the checksum


def walk(path: Path | str) -> list[Frame]:
    data = Path(path).read_bytes()
    assert data[:4] == b"\xfebin", path
    frames: list[Frame] = []
    pos, checksum_len = 4, 0
    while pos + 19 <= len(data):
        _ts, type_code, _sid, size, _log_pos, flags = _HEADER.unpack_from(data, pos)
        event = data[pos:pos + size]
        if type_code == FDE:
            # 2-byte version, 50-byte server version, 4-byte timestamp, header length, then the
            # post-header table; a checksum-aware FDE ends with alg byte + 4 CRC bytes.
            checksum_len = 4 if event[-5] == 1 else 0
            frames.append(Frame(pos, type_code, flags, event[19:size - checksum_len]))
        else:
            frames.append(Frame(pos, type_code, flags, event[19:size - checksum_len]))
        pos += size
    return frames

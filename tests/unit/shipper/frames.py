"""Helpers building replica packet streams from real corpus frames (MariaDB 10.11 captures)."""
from __future__ import annotations

import struct
import zlib
from pathlib import Path

from libs.binlog import iter_frames
from libs.binlog.constants import COMMON_HEADER
from libs.runtime.paths import CORPUS_DIR

CORPUS = Path(str(CORPUS_DIR / "mariadb"))
ROW_FULL = CORPUS / "row_full" / "mdb-bin.000001"
MISC = CORPUS / "misc" / "mdb-bin.000012"
CAPTURES = CORPUS / "replica_captures"
HEADER = COMMON_HEADER


def frames_of(path: Path) -> list[tuple[int, bytes]]:
    return list(iter_frames(path.read_bytes(), 4))


def with_crc(frame_without_crc: bytes) -> bytes:
    return frame_without_crc + struct.pack("<I", zlib.crc32(frame_without_crc))


def fake_rotate(name: str, position: int, *, checksum: bool = True) -> bytes:
    """The master's fake Rotate: timestamp 0, log_pos 0, LOG_EVENT_ARTIFICIAL_F (0x20)."""
    body = struct.pack("<Q", position) + name.encode()
    size = 19 + len(body) + (4 if checksum else 0)
    frame = HEADER.pack(0, 4, 1, size, 0, 0x20) + body
    return with_crc(frame) if checksum else frame


def artificial_fde(fde: bytes) -> bytes:
    """The Format_description the master re-sends when a dump starts mid-file: log_pos 0."""
    out = bytearray(fde[:-4])
    struct.pack_into("<I", out, 13, 0)
    return with_crc(bytes(out))


def heartbeat(name: str, log_pos: int) -> bytes:
    body = name.encode()
    return with_crc(HEADER.pack(0, 27, 1, 19 + len(body) + 4, log_pos, 0x20) + body)

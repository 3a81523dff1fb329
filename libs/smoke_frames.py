"""Binlog-like frames for the foundation smoke path (Kafka -> Spark -> pandas_udf -> Delta).

Each frame is a real 19-byte common header (binlog_event.h: timestamp u32, type u8, server_id u32,
event_size u32, log_pos u32, flags u16, little endian) followed by `body_len` body bytes, laid out
as consecutive events of one file so log_pos = start + size, as a server writes them.
"""
from __future__ import annotations

import struct

HEADER = struct.Struct("<IBIIIH")
FIRST_POS = 4  # after the binlog magic


def smoke_frames(count: int, *, server_id: int = 7, t0: int = 1_790_000_000) -> list[tuple[int, bytes]]:
    """`count` frames as (start position, bytes); sizes and types vary so every field is exercised."""
    out, pos = [], FIRST_POS
    for i in range(count):
        body = bytes((i + k) & 0xFF for k in range(8 + i % 23))
        size = HEADER.size + len(body)
        type_code = (2, 16, 19, 30, 31, 32, 162)[i % 7]
        out.append((pos, HEADER.pack(t0 + i, type_code, server_id, size, pos + size, i % 3 * 8) + body))
        pos += size
    return out


HEADER_FIELDS = (("timestamp", "long"), ("type_code", "int"), ("server_id", "long"),
                 ("event_size", "long"), ("log_pos", "long"), ("flags", "int"))


def decode_header_columns(frames) -> "pandas.DataFrame":
    """Header stub for the smoke path: the 19-byte header of every frame, decoded column-wise
    with numpy (no per-row Python objects). Frames shorter than a header give nulls."""
    import numpy as np
    import pandas as pd

    lens = np.fromiter((len(f) for f in frames), dtype=np.int64, count=len(frames))
    ok = lens >= HEADER.size
    buf = np.zeros((len(frames), HEADER.size), dtype=np.uint8)
    for i in np.flatnonzero(ok):  # copying 19 bytes per frame; the fields below are column ops
        buf[i] = np.frombuffer(frames[i], dtype=np.uint8, count=HEADER.size)

    def field(offset: int, width: int) -> np.ndarray:
        dtype = {1: "<u1", 2: "<u2", 4: "<u4"}[width]
        return buf[:, offset:offset + width].copy().view(dtype).reshape(-1).astype(np.int64)

    cols = {"timestamp": field(0, 4), "type_code": field(4, 1), "server_id": field(5, 4),
            "event_size": field(9, 4), "log_pos": field(13, 4), "flags": field(17, 2)}
    return pd.DataFrame({k: pd.arrays.IntegerArray(v, ~ok) for k, v in cols.items()})  # mask = null

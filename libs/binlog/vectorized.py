"""Vectorised decode of the fixed 19-byte common header for the Spark pandas_udf: column/numpy
operations over the Arrow binary buffer, no per-row Python objects (binlog_event.h
Log_event_header: timestamp u32, type u8, server_id u32, event_size u32, log_pos u32, flags u16).

`size_ok` says the frame length equals event_size; `crc_stored` is the last 4 bytes
(little endian) of frames long enough to carry a checksum. The CRC itself is verified per
frame by the decoder (it depends on the stream's Format_description).
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa

HEADER_FIELDS = [
    ("timestamp", pa.uint32()), ("type_code", pa.uint8()), ("server_id", pa.uint32()),
    ("event_size", pa.uint32()), ("log_pos", pa.uint32()), ("flags", pa.uint16()),
    ("frame_len", pa.int64()), ("size_ok", pa.bool_()), ("crc_stored", pa.uint32()),
]
HEADER_TYPE = pa.struct([pa.field(n, t) for n, t in HEADER_FIELDS])
# (name, offset, width) in the common header
_LAYOUT = (("timestamp", 0, 4), ("type_code", 4, 1), ("server_id", 5, 4), ("event_size", 9, 4),
           ("log_pos", 13, 4), ("flags", 17, 2))


def _as_binary(frames) -> pa.Array:
    if isinstance(frames, pa.ChunkedArray):
        frames = frames.combine_chunks()
    if not isinstance(frames, pa.Array):
        frames = pa.array(frames, type=pa.binary())
    if pa.types.is_large_binary(frames.type):
        return frames
    return frames.cast(pa.large_binary())  # int64 offsets: one code path


def _le(data: np.ndarray, starts: np.ndarray, width: int) -> np.ndarray:
    out = np.zeros(len(starts), dtype=np.uint64)
    for i in range(width):
        out |= data[starts + i].astype(np.uint64) << np.uint64(8 * i)
    return out


def decode_headers(frames) -> pa.StructArray:
    """frames: pyarrow binary array (or list of bytes) -> StructArray of header fields; null
    rows for null input or frames shorter than 19 bytes."""
    arr = _as_binary(frames)
    n = len(arr)
    offsets = np.frombuffer(arr.buffers()[1], dtype=np.int64)[arr.offset:arr.offset + n + 1]
    data_buf = arr.buffers()[2]
    data = np.frombuffer(data_buf, dtype=np.uint8) if data_buf is not None else np.zeros(0, np.uint8)
    starts = offsets[:-1]
    lengths = offsets[1:] - starts
    valid = lengths >= 19
    if arr.null_count:
        valid &= ~np.asarray(arr.is_null().to_numpy(zero_copy_only=False))
    # read headers of valid rows only; invalid rows read row 0's bytes and are masked
    safe = np.where(valid, starts, 0)
    if not valid.any():
        safe = np.zeros(n, dtype=np.int64)
        data = np.zeros(19, dtype=np.uint8)
    mask = ~valid
    cols = {}
    for name, off, width in _LAYOUT:
        cols[name] = _le(data, safe + off, width)
    has_crc = valid & (lengths >= 23)
    crc_start = np.where(has_crc, starts + lengths - 4, 0)
    crc = _le(data, crc_start, 4) if has_crc.any() else np.zeros(n, dtype=np.uint64)
    arrays = []
    for name, typ in HEADER_FIELDS:
        if name == "frame_len":
            arrays.append(pa.array(lengths, type=typ))
        elif name == "size_ok":
            arrays.append(pa.array(valid & (cols["event_size"] == lengths.astype(np.uint64)),
                                   type=typ, mask=mask))
        elif name == "crc_stored":
            arrays.append(pa.array(crc.astype(np.uint32), type=typ, mask=~has_crc))
        else:
            arrays.append(pa.array(cols[name].astype(typ.to_pandas_dtype()), type=typ, mask=mask))
    return pa.StructArray.from_arrays(arrays, fields=list(HEADER_TYPE), mask=pa.array(mask))

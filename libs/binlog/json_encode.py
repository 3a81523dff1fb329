"""JSON text -> MySQL binary JSON (inverse of json_binary.py) for values built by hand; decoded
values keep the server's bytes in JsonText.binary and never come here. Keys are sorted by length
then bytes, as the server stores them (json_binary.cc serialize_json_object)."""
from __future__ import annotations

import json
import struct

from libs.binlog.json_binary import write_varlen


def _scalar(v) -> tuple[int, bytes]:
    if v is None:
        return 0x04, b"\x00"
    if v is True:
        return 0x04, b"\x01"
    if v is False:
        return 0x04, b"\x02"
    if isinstance(v, int):
        if -(1 << 15) <= v < 1 << 15:
            return 0x05, struct.pack("<h", v)
        if -(1 << 31) <= v < 1 << 31:
            return 0x07, struct.pack("<i", v)
        if -(1 << 63) <= v < 1 << 63:
            return 0x09, struct.pack("<q", v)
        return 0x0A, struct.pack("<Q", v)
    if isinstance(v, float):
        return 0x0B, struct.pack("<d", v)
    if isinstance(v, str):
        b = v.encode("utf-8")
        return 0x0C, write_varlen(len(b)) + b
    if isinstance(v, dict):
        return _container(v, True)
    return _container(list(v), False)


def _container(v, is_object: bool) -> tuple[int, bytes]:
    for large in (False, True):
        out = _try_container(v, is_object, large)
        if out is not None:
            return out
    raise ValueError("JSON document too large")


def _try_container(v, is_object: bool, large: bool):
    w, fmt = (4, "<I") if large else (2, "<H")
    items = sorted(v.items(), key=lambda kv: (len(kv[0].encode()), kv[0].encode())) if is_object \
        else list(enumerate(v))
    n = len(items)
    header = 2 * w + (n * (w + 2) if is_object else 0) + n * (1 + w)
    keys = b"".join(k.encode() for k, _ in items) if is_object else b""
    offset = header + len(keys)
    key_entries, value_entries, payloads = bytearray(), bytearray(), bytearray()
    koff = header
    for k, val in items:
        if is_object:
            kb = k.encode()
            key_entries += struct.pack(fmt, koff) + struct.pack("<H", len(kb))
            koff += len(kb)
        t, data = _scalar(val)
        inline = t == 0x04 or t in (0x05, 0x06) or (large and t in (0x07, 0x08))
        if inline:
            value_entries += bytes((t,)) + data.ljust(w, b"\0")
        else:
            value_entries += bytes((t,)) + struct.pack(fmt, offset + len(payloads))
            payloads += data
    size = offset + len(payloads)
    if not large and size > 0xFFFF:
        return None
    body = struct.pack(fmt, n) + struct.pack(fmt, size) + key_entries + value_entries + keys + payloads
    return (0x01 if large else 0x00) if is_object else (0x03 if large else 0x02), bytes(body)


def json_text_to_binary(text: str) -> bytes:
    t, data = _scalar(json.loads(text))
    return bytes((t,)) + data

"""MySQL Partial_update_rows (39) JSON diffs (json_diff.h enum_json_diff_operation; rows_event.h
Partial_update_rows_event): the record, the after-image decoder and the encoder.

  after image: value_options (packed); bit 1 (PARTIAL_JSON_UPDATES) adds a bitmap, one bit per
               JSON column of the table: set = the value is a Json_diff vector (u32 length,
               then per diff: op u8, path (packed length), value (packed length, binary JSON)
               unless op = remove); then the image, a JSON column whose bit is set holding its
               diff vector instead of the document.
"""
from __future__ import annotations

from dataclasses import dataclass

from libs.binlog.constants import ColumnType as T
from libs.binlog.errors import MalformedError
from libs.binlog.json_binary import decode_json_value
from libs.binlog.packed import read_packed, write_packed
from libs.binlog.tablemap import TableMap

PARTIAL_JSON_UPDATES = 1  # value_options bit: a partial-JSON bitmap follows
JSON_DIFF_OPS = ("replace", "insert", "remove")


@dataclass(frozen=True, slots=True)
class JsonDiff:
    """One MySQL partial JSON update (Partial_update_rows, 39): json_diff.h enum_json_diff_operation."""

    operation: str  # "replace" | "insert" | "remove"
    path: str
    value: str | None  # JSON text; None for remove


def _json_columns(tm: TableMap) -> list[int]:
    return [i for i, t in enumerate(tm.column_types) if t == T.JSON]


def partial_after_decoder(present, decoders, tm: TableMap, json_limits: tuple[int, int], full):
    """Partial_update_rows after image: value_options, partial-JSON bitmap, then the image with
    Json_diff vectors in place of the JSON columns whose bit is set (json_diff.h). `full`: the
    plain image decoder, for an image without partial columns."""
    json_cols = _json_columns(tm)
    nbytes = (len(json_cols) + 7) >> 3
    cols = [i for i, p in enumerate(present) if p]
    null_bytes = (len(cols) + 7) >> 3

    def decode(buf, pos):
        options, pos = read_packed(buf, pos)
        if not options & PARTIAL_JSON_UPDATES:
            return full(buf, pos)
        bits = int.from_bytes(buf[pos:pos + nbytes], "little")
        pos += nbytes
        partial = {c for k, c in enumerate(json_cols) if bits >> k & 1}
        nulls = int.from_bytes(buf[pos:pos + null_bytes], "little")
        pos += null_bytes
        row = {}
        for k, ordinal in enumerate(cols):
            if nulls >> k & 1:
                row[ordinal] = None
            elif ordinal in partial:
                row[ordinal], pos = _decode_json_diffs(buf, pos, json_limits)
            else:
                row[ordinal], pos = decoders[ordinal](buf, pos)
        return row, pos

    return decode


def _decode_json_diffs(buf, pos, json_limits: tuple[int, int]):
    length = int.from_bytes(buf[pos:pos + 4], "little")
    pos += 4
    end = pos + length
    if end > len(buf):
        raise MalformedError("JSON diff vector longer than the image")
    diffs = []
    while pos < end:
        op = buf[pos]
        if op >= len(JSON_DIFF_OPS):
            raise MalformedError(f"unknown JSON diff operation {op}")
        n, pos = read_packed(buf, pos + 1, end)
        path = bytes(buf[pos:pos + n]).decode("utf-8", "surrogateescape")
        pos += n
        value = None
        if JSON_DIFF_OPS[op] != "remove":
            n, pos = read_packed(buf, pos, end)
            if pos + n > end:
                raise MalformedError("JSON diff value longer than its vector")
            value = decode_json_value(bytes(buf[pos:pos + n]), *json_limits)
            pos += n
        diffs.append(JsonDiff(JSON_DIFF_OPS[op], path, value))
    if pos != end:
        raise MalformedError("JSON diff vector overruns its length")
    return tuple(diffs), end


def encode_json_diffs(diffs) -> bytes:
    from libs.binlog.json_encode import json_text_to_binary
    out = bytearray()
    for d in diffs:
        path = d.path.encode("utf-8", "surrogateescape")
        out.append(JSON_DIFF_OPS.index(d.operation))
        out += write_packed(len(path)) + path
        if d.operation != "remove":
            binary = getattr(d.value, "binary", None)
            if binary is None:
                binary = json_text_to_binary(str(d.value))
            out += write_packed(len(binary)) + binary
    return len(out).to_bytes(4, "little") + bytes(out)


def encode_partial_after(row: dict, tm: TableMap, image: bytes) -> bytes:
    """value_options and the partial-JSON bitmap for `row`, then its encoded `image`."""
    json_cols = _json_columns(tm)
    bits = 0
    for k, c in enumerate(json_cols):
        v = row.get(c)
        if isinstance(v, tuple) and v and isinstance(v[0], JsonDiff):
            bits |= 1 << k
    if not bits:
        return write_packed(0) + image
    return (write_packed(PARTIAL_JSON_UPDATES) + bits.to_bytes((len(json_cols) + 7) >> 3, "little")
            + image)

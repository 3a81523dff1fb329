"""MySQL binary JSON (sql-common/json_binary.cc, WL#8132) -> JSON text.

  doc    := type:u8 value
  type   := 0x00 small object | 0x01 large object | 0x02 small array | 0x03 large array
          | 0x04 literal (0 null, 1 true, 2 false) | 0x05 int16 | 0x06 uint16 | 0x07 int32
          | 0x08 uint32 | 0x09 int64 | 0x0a uint64 | 0x0b double | 0x0c utf8 string
          | 0x0f opaque (field type u8, data with a variable length)
  object := count size key-entry* value-entry* keys values   (2-byte fields when small, 4 when large)
  key-entry := offset length:u16;  value-entry := type (offset | inlined scalar)
Variable lengths use 7 bits per byte, low group first, high bit = more bytes follow.
Text follows MySQL's JSON printer: `{"k": v, ...}`, `[a, b]`; opaque DATE/TIME/DATETIME/
TIMESTAMP/DECIMAL print as their SQL text, any other opaque as "base64:typeNN:...".
"""
from __future__ import annotations

import base64
import json
import math
import struct

from libs.binlog.decimal_codec import make_decimal_decoder
from libs.binlog.errors import LimitError, MalformedError
from libs.binlog.limits import DEFAULT_LIMITS, SERVER_JSON_MAX_DEPTH

_INT = {0x05: "<h", 0x06: "<H", 0x07: "<i", 0x08: "<I", 0x09: "<q", 0x0A: "<Q", 0x0B: "<d"}
_SIZES = {"<h": 2, "<H": 2, "<i": 4, "<I": 4, "<q": 8, "<Q": 8, "<d": 8}


class JsonText(str):
    """JSON text that remembers the binary it came from (for byte-exact re-encoding)."""

    binary: bytes = b""


def read_varlen(buf, pos: int, end: int) -> tuple[int, int]:
    value = shift = 0
    for _ in range(5):
        if pos >= end:
            raise MalformedError("JSON variable length runs past the end of the body")
        byte = buf[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, pos
        shift += 7
    raise MalformedError("JSON variable length longer than 5 bytes")


def write_varlen(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


def _double_text(v: float) -> str:
    if not math.isfinite(v):
        # JSON has no inf/NaN and the server never stores one (its JSON parser and DOUBLE
        # columns refuse them): such bytes are malformed, and would print as invalid JSON.
        raise MalformedError(f"JSON double {v!r}: not a value MySQL can store")
    text = repr(v)
    if "e" in text:
        mant, exp = text.split("e")
        text = f"{mant}e{int(exp)}"
    elif text.endswith(".0"):
        text = text[:-2]
    return text


def _packed_time_parts(packed: int) -> tuple[bool, int, int]:
    neg = packed < 0
    packed = -packed if neg else packed
    return neg, packed >> 24, packed & 0xFFFFFF


def _opaque_text(field_type: int, data: bytes) -> str:
    if field_type in (7, 12, 17, 18) and len(data) == 8:  # TIMESTAMP(2) / DATETIME(2)
        _, ymdhms, usec = _packed_time_parts(struct.unpack("<q", data)[0])
        ymd, hms = ymdhms >> 17, ymdhms & 0x1FFFF
        ym = ymd >> 5
        return json.dumps(f"{ym // 13:04d}-{ym % 13:02d}-{ymd & 31:02d} {hms >> 12:02d}:"
                          f"{(hms >> 6) & 63:02d}:{hms & 63:02d}.{usec:06d}")
    if field_type in (10, 14) and len(data) == 8:  # DATE
        _, ymdhms, _ = _packed_time_parts(struct.unpack("<q", data)[0])
        ymd = ymdhms >> 17
        ym = ymd >> 5
        return json.dumps(f"{ym // 13:04d}-{ym % 13:02d}-{ymd & 31:02d}")
    if field_type in (11, 19) and len(data) == 8:  # TIME(2)
        neg, hms, usec = _packed_time_parts(struct.unpack("<q", data)[0])
        return json.dumps(f"{'-' if neg else ''}{(hms >> 12) & 0x3FF:02d}:{(hms >> 6) & 63:02d}:"
                          f"{hms & 63:02d}.{usec:06d}")
    if field_type == 246 and len(data) >= 2:  # NEWDECIMAL: precision, scale, binary decimal
        decode, size = make_decimal_decoder(data[0] << 8 | data[1])
        if 2 + size > len(data):
            raise MalformedError("JSON opaque DECIMAL runs past the end of the body")
        return format(decode(data, 2)[0], "f")
    return json.dumps(f"base64:type{field_type}:{base64.b64encode(data).decode('ascii')}")


# Hostile documents (fuzz finds): a container whose value offset points back at itself recurses
# forever, and sibling values sharing one offset double the work per level. A valid document
# has at most one value per byte, so more visits than bytes means overlapping values. Depth and
# the count of values are bounded by DecodeLimits (max_json_depth: the server's own
# JSON_DOCUMENT_MAX_DEPTH, 100; max_json_fields).
MAX_DEPTH = SERVER_JSON_MAX_DEPTH


class _Budget:
    """What is left to spend on one document: value visits (bytes), values (fields), depth."""

    __slots__ = ("visits", "fields", "max_depth", "max_fields")

    def __init__(self, size: int, max_depth: int, max_fields: int):
        self.visits, self.fields = size, max_fields
        self.max_depth, self.max_fields = max_depth, max_fields


def _value(buf, type_code: int, pos: int, end: int, budget: _Budget, depth: int = 0) -> str:
    """Text of the value of type `type_code` stored at buf[pos:end]."""
    if type_code in (0x00, 0x01, 0x02, 0x03):
        if depth >= budget.max_depth:
            raise LimitError(f"JSON document nested deeper than max_json_depth {budget.max_depth}")
        return _container(buf, type_code, pos, end, budget, depth + 1)
    if type_code == 0x04:
        if pos >= end:
            raise MalformedError("JSON literal runs past the end of the body")
        return _literal(buf[pos])
    fmt = _INT.get(type_code)
    if fmt is not None:
        if pos + _SIZES[fmt] > end:
            raise MalformedError("JSON scalar runs past the end of the body")
        v = struct.unpack_from(fmt, buf, pos)[0]
        return _double_text(v) if type_code == 0x0B else str(v)
    if type_code == 0x0C:
        length, pos = read_varlen(buf, pos, end)
        if pos + length > end:
            raise MalformedError("JSON string runs past the end of the body")
        return json.dumps(bytes(buf[pos:pos + length]).decode("utf-8", "surrogateescape"),
                          ensure_ascii=False)
    if type_code == 0x0F:
        if pos >= end:
            raise MalformedError("JSON opaque runs past the end of the body")
        field_type = buf[pos]
        length, pos = read_varlen(buf, pos + 1, end)
        if pos + length > end:
            raise MalformedError("JSON opaque runs past the end of the body")
        return _opaque_text(field_type, bytes(buf[pos:pos + length]))
    raise MalformedError(f"unknown JSON value type 0x{type_code:02x}")


def _literal(code: int) -> str:
    try:
        return ("null", "true", "false")[code]
    except IndexError:
        raise MalformedError(f"unknown JSON literal 0x{code:02x}") from None


def _container(buf, type_code: int, start: int, end: int, budget: _Budget, depth: int) -> str:
    large = type_code in (0x01, 0x03)
    is_object = type_code in (0x00, 0x01)
    w = 4 if large else 2
    fmt = "<I" if large else "<H"
    if start + 2 * w > end:
        raise MalformedError("JSON container header runs past the end of the body")
    count, size = struct.unpack_from(fmt + fmt[1], buf, start)
    budget.visits -= count + 1
    if budget.visits < 0:
        raise MalformedError("JSON values overlap (more values than the document has bytes)")
    budget.fields -= count
    if budget.fields < 0:
        raise LimitError(f"JSON document holds more than max_json_fields {budget.max_fields} values")
    if start + size > end:
        raise MalformedError("JSON container larger than its value")
    cend = start + size
    entry = start + 2 * w
    keys = []
    if is_object:
        for _ in range(count):
            if entry + w + 2 > cend:
                raise MalformedError("JSON key entry runs past the end of the body")
            koff = struct.unpack_from(fmt, buf, entry)[0]
            klen = struct.unpack_from("<H", buf, entry + w)[0]
            if start + koff + klen > cend:
                raise MalformedError("JSON key runs past the end of the body")
            keys.append(bytes(buf[start + koff:start + koff + klen]).decode("utf-8", "surrogateescape"))
            entry += w + 2
    values = []
    for _ in range(count):
        if entry + 1 + w > cend:
            raise MalformedError("JSON value entry runs past the end of the body")
        vtype = buf[entry]
        inlined = vtype == 0x04 or vtype in (0x05, 0x06) or (large and vtype in (0x07, 0x08))
        if inlined:
            if vtype == 0x04:
                values.append(_literal(buf[entry + 1]))
            else:
                ifmt = _INT[vtype]
                values.append(str(struct.unpack_from(ifmt, buf, entry + 1)[0]))
        else:
            off = struct.unpack_from(fmt, buf, entry + 1)[0]
            values.append(_value(buf, vtype, start + off, cend, budget, depth))
        entry += 1 + w
    if is_object:
        return "{" + ", ".join(f"{json.dumps(k, ensure_ascii=False)}: {v}"
                               for k, v in zip(keys, values)) + "}"
    return "[" + ", ".join(values) + "]"


def json_binary_to_text(data, max_depth: int = MAX_DEPTH,
                        max_fields: int = DEFAULT_LIMITS.max_json_fields) -> str:
    """MySQL binary JSON document -> JSON text. Empty input is JSON null (Field_json)."""
    if len(data) == 0:
        return "null"
    try:
        return _value(data, data[0], 1, len(data), _Budget(len(data), max_depth, max_fields))
    except (struct.error, IndexError, UnicodeDecodeError) as exc:
        raise MalformedError(f"bad binary JSON: {exc}") from None


def decode_json_value(data: bytes, max_depth: int = MAX_DEPTH,
                      max_fields: int = DEFAULT_LIMITS.max_json_fields) -> JsonText:
    text = JsonText(json_binary_to_text(data, max_depth, max_fields))
    text.binary = bytes(data)
    return text

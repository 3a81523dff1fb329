"""Per-type Table_map field metadata layout (rows_event.h Table_map_event, "field metadata";
MariaDB rpl_utility.cc table_def) as data: how many bytes each wire type stores and how they
combine into the one integer `mariadb-binlog -vv` prints as `meta=`.
"""
from __future__ import annotations

from libs.binlog.constants import ColumnType as T
from libs.binlog.errors import MalformedError

ONE_BYTE, U16_LE, U16_BE = "u8", "u16le", "u16be"

META_LAYOUT: dict[int, str] = {
    T.FLOAT: ONE_BYTE, T.DOUBLE: ONE_BYTE,                      # 4 / 8 (pack length)
    T.TINY_BLOB: ONE_BYTE, T.MEDIUM_BLOB: ONE_BYTE, T.LONG_BLOB: ONE_BYTE,
    T.BLOB: ONE_BYTE, T.GEOMETRY: ONE_BYTE, T.JSON: ONE_BYTE,   # bytes of the length prefix
    T.VECTOR: ONE_BYTE,
    T.TIME2: ONE_BYTE, T.DATETIME2: ONE_BYTE, T.TIMESTAMP2: ONE_BYTE,  # fsp
    T.VARCHAR: U16_LE, T.VAR_STRING: U16_LE,                    # max byte length
    T.BIT: U16_LE,                                              # bits % 8, then whole bytes
    T.STRING: U16_BE, T.ENUM: U16_BE, T.SET: U16_BE,            # real type, length / pack len
    T.NEWDECIMAL: U16_BE,                                       # precision, scale
}
_WIDTH = {ONE_BYTE: 1, U16_LE: 2, U16_BE: 2}

ENUM_OR_SET = (T.ENUM, T.SET)


def read_metas(wire_types, block: bytes) -> tuple[int, ...]:
    metas = []
    pos = 0
    for t in wire_types:
        layout = META_LAYOUT.get(t)
        if layout is None:
            metas.append(0)
            continue
        width = _WIDTH[layout]
        if pos + width > len(block):
            raise MalformedError(f"Table_map metadata too short for column type {t}")
        if layout == ONE_BYTE:
            metas.append(block[pos])
        elif layout == U16_LE:
            metas.append(block[pos] | block[pos + 1] << 8)
        else:
            metas.append(block[pos] << 8 | block[pos + 1])
        pos += width
    return tuple(metas)


def write_metas(wire_types, metas) -> bytes:
    out = bytearray()
    for t, m in zip(wire_types, metas):
        layout = META_LAYOUT.get(t)
        if layout == ONE_BYTE:
            out.append(m)
        elif layout == U16_LE:
            out += m.to_bytes(2, "little")
        elif layout == U16_BE:
            out += m.to_bytes(2, "big")
    return bytes(out)


def real_type(wire_type: int, meta: int) -> int:
    """ENUM and SET travel as STRING with the real type in the metadata's first byte."""
    if wire_type == T.STRING and (meta >> 8) in ENUM_OR_SET:
        return meta >> 8
    return wire_type


def string_max_length(meta: int) -> int:
    """CHAR(N) byte length from STRING metadata. Lengths > 255 steal two bits of the type byte,
    stored inverted (MySQL bug #37426): len = byte1 | (((byte0 & 0x30) ^ 0x30) << 4)."""
    byte0, byte1 = meta >> 8, meta & 0xFF
    if meta < 256:
        return meta
    if (byte0 & 0x30) != 0x30:
        return byte1 | (((byte0 & 0x30) ^ 0x30) << 4)
    return byte1

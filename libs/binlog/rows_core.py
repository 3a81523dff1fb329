"""The compiled row-image core (_rowimages.c): plans of row images for it, and its entry point.

A plan is (ops, keys, calls): per present column one 4-byte op (kind, a, b, 0) naming how the C
core reads the value, the row dict's key (the column's 0-based ordinal) and, for columns the core
does not read itself, the column's values.py decoder, which it calls. Each op mirrors the
values.py decoder of its type exactly (same value, same type, same text, same end position);
rows_images' generated decoders stay the reference (tests/unit/codec_fuzz/test_row_core.py
compares the two on the corpus and on mutated bytes).

Errors: the core raises ValueError on anything it cannot decode (a value past the end of the
body, a DECIMAL group or a fraction out of range, too many rows, a failing column decoder), and
rows.py then decodes the event with the Python decoders, which raise the error the codec
reports. The core is thus only ever a faster route to the Python decoders' own result.
"""
from __future__ import annotations

from libs.binlog import _rowimages
from libs.binlog.column_meta import string_max_length
from libs.binlog.constants import ColumnType as T

OP_INT, OP_UINT, OP_UINT_BE, OP_FLOAT, OP_DOUBLE, OP_BYTES = 1, 2, 3, 4, 5, 6
OP_DECIMAL, OP_DATETIME2, OP_TIMESTAMP2, OP_YEAR, OP_DATE, OP_CALL = 7, 8, 9, 10, 11, 12

KIND_CODES = {"insert": 0, "update": 1, "delete": 2}

_INT_WIDTH = {T.TINY: 1, T.SHORT: 2, T.INT24: 3, T.LONG: 4, T.LONGLONG: 8}
_BLOB_TYPES = frozenset((T.TINY_BLOB, T.MEDIUM_BLOB, T.LONG_BLOB, T.BLOB, T.GEOMETRY))

read_changes = _rowimages.read_changes
decode_image = _rowimages.decode_image


def column_op(t: int, meta: int, unsigned: bool) -> tuple[int, int, int]:
    """(op, a, b) reading a column of real type `t` as values.COLUMN_CODECS does, OP_CALL for
    the types the core leaves to their Python decoder (JSON, VECTOR, TIME2, the pre-5.6
    temporal types and MariaDB's hires ones, NULL). Only called once table_codecs built the
    layout's decoders, so the metadata passed their checks (DECIMAL precision/scale, fsp 0-6,
    BLOB prefix 1-4, ENUM/SET/BIT sizes)."""
    width = _INT_WIDTH.get(t)
    if width is not None:
        return (OP_UINT if unsigned else OP_INT), width, 0
    if t == T.FLOAT:
        return OP_FLOAT, 0, 0
    if t == T.DOUBLE:
        return OP_DOUBLE, 0, 0
    if t == T.NEWDECIMAL:
        return OP_DECIMAL, meta >> 8, meta & 0xFF
    if t == T.DATETIME2:
        return OP_DATETIME2, meta, 0
    if t == T.TIMESTAMP2:
        return OP_TIMESTAMP2, meta, 0
    if t == T.YEAR:
        return OP_YEAR, 0, 0
    if t in (T.DATE, T.NEWDATE):
        return OP_DATE, 0, 0
    if t in (T.VARCHAR, T.VAR_STRING):
        return OP_BYTES, 1 if meta < 256 else 2, 0
    if t == T.STRING:
        return OP_BYTES, 1 if string_max_length(meta) < 256 else 2, 0
    if t in _BLOB_TYPES:
        return OP_BYTES, meta, 0
    if t in (T.ENUM, T.SET):
        return OP_UINT, meta & 0xFF, 0  # little-endian index / bitmask of the pack length
    if t == T.BIT:
        nbits = (meta >> 8) * 8 + (meta & 0xFF)
        return OP_UINT_BE, (nbits + 7) // 8, 0
    return OP_CALL, 0, 0


def image_plan(present, types, metas, unsigned, decoders) -> tuple[bytes, tuple, tuple]:
    """The plan of one image under a columns-present bitmap; `unsigned(ordinal)` as
    rows_images._is_unsigned, `decoders` the layout's values.py decoders."""
    ops, keys, calls = bytearray(), [], []
    for i, p in enumerate(present):
        if p:
            op, a, b = column_op(types[i], metas[i], unsigned(i))
            ops += bytes((op, a, b, 0))
            keys.append(i)
            calls.append(decoders[i] if op == OP_CALL else None)
    return bytes(ops), tuple(keys), tuple(calls)

"""A snapshot chunk's values -> its rows' after images as ONE Arrow column (no Spark): the
ColumnValue lists `chunk_values.row_images` makes, built column by column with Arrow kernels
instead of one dict per cell (issue #37 goal c: the rows stage's share of a snapshot).

The rules stay libs/snapshot/values.py `column_value`'s, and a column a kernel cannot prove
equal to them goes cell by cell through that function. A kernel takes a column only where its
text is the server's bytes unchanged or the integer the bytes spell:

| columns                                          | kernel                                    |
|--------------------------------------------------|-------------------------------------------|
| tinyint smallint mediumint int bigint year       | bytes -> int64 -> text (ZEROFILL's '007': '7'); |
|                                                  | a value beyond int64: cell by cell        |
| date time datetime timestamp                     | the bytes as text, when every value is ASCII |
| char varchar *text, charset ascii/utf8/latin1    | the bytes as text, when every value is ASCII |
|                                                  | (the three decode ASCII alike)            |
| binary data: varbinary *blob, no charset         | the bytes                                 |
Everything else (decimal, float, double, bit, enum, set, json, binary(n), uuid, inet, geometry,
any non-ASCII text): `column_value`, cell by cell.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from libs.stream.assembler.values import CHARACTER_TYPES
from libs.binlog import charsets
from libs.snapshot import chunk_values
from libs.snapshot.values import SourceColumn, column_value, type_code

_INTEGERS = frozenset({"tinyint", "smallint", "mediumint", "int", "bigint", "year"})
_TEMPORAL = frozenset({"date", "time", "datetime", "timestamp"})
_BYTES = frozenset({"char", "varchar", "varbinary", "tinytext", "text", "mediumtext", "longtext",
                    "tinyblob", "blob", "mediumblob", "longblob"})
_ASCII_ALIKE = frozenset({"utf-8", "latin1-mysql", "ascii"})  # codecs that decode ASCII bytes as ASCII

COLUMN_VALUE = pa.struct([("ordinal", pa.int32()), ("name", pa.string()), ("type_code", pa.int32()),
                          ("text", pa.string()), ("binary", pa.binary())])


def after_images(columns: Sequence[SourceColumn], raw: bytes) -> pa.ListArray:
    """Each row's ColumnValues, every column in ordinal order (= chunk_values.row_images, as one
    list<ColumnValue> array); ValueError when the chunk does not decode."""
    table = chunk_values.table(columns, raw)
    order = sorted(range(len(columns)), key=lambda i: columns[i].ordinal)
    n, k = table.num_rows, len(order)
    parts = [_column_values(columns[i], table.column(i).combine_chunks()) for i in order]
    # row-major: row r's k values are entries r*k .. r*k+k-1 of the flat values
    flat = pa.concat_arrays(parts) if parts else pa.array([], COLUMN_VALUE)
    interleave = (np.arange(k, dtype=np.int64)[None, :] * n + np.arange(n, dtype=np.int64)[:, None]).ravel()
    values = flat.take(pa.array(interleave, pa.int64()))
    return pa.ListArray.from_arrays(pa.array(np.arange(n + 1, dtype=np.int32) * k), values)


def _column_values(column: SourceColumn, raw: pa.BinaryArray) -> pa.StructArray:
    """One column's ColumnValues (struct COLUMN_VALUE), one per row."""
    code = type_code(column)  # (an unknown type raises here, as column_value does)
    n = len(raw)
    converted = _by_kernel(column, raw, code)
    if converted is None:
        cells = [column_value(column, v) for v in raw.to_pylist()]
        text = pa.array([c["text"] for c in cells], pa.string())
        binary = pa.array([c["binary"] for c in cells], pa.binary())
    else:
        text, binary = converted
    return pa.StructArray.from_arrays(
        [pa.array(np.full(n, column.ordinal, np.int32)), pa.array([column.name] * n, pa.string()),
         pa.array(np.full(n, code, np.int32)), text, binary], fields=list(COLUMN_VALUE))


def _by_kernel(column: SourceColumn, raw: pa.BinaryArray, type_code: int) -> tuple[pa.Array, pa.Array] | None:
    """(text, binary) of the column by the table's kernels, or None: cell by cell."""
    no_binary = pa.nulls(len(raw), pa.binary())
    kind = column.data_type
    if kind in _INTEGERS:
        try:
            return pc.cast(raw.cast(pa.string()), pa.int64()).cast(pa.string()), no_binary
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            return None
    if kind in _TEMPORAL:
        text = _ascii_text(raw)
        return None if text is None else (text, no_binary)
    if kind not in _BYTES:
        return None
    codec = None if column.charset is None else charsets.python_codec(column.charset)
    if codec is None or type_code not in CHARACTER_TYPES:
        return pa.nulls(len(raw), pa.string()), raw.cast(pa.binary())  # bytes stay bytes
    if codec not in _ASCII_ALIKE:
        return None
    text = _ascii_text(raw)
    return None if text is None else (text, no_binary)


def _ascii_text(raw: pa.BinaryArray) -> pa.Array | None:
    """The bytes as text when every value is ASCII, else None."""
    try:
        text = raw.cast(pa.string())
    except pa.ArrowInvalid:  # not even UTF-8
        return None
    return text if pc.all(pc.string_is_ascii(text)).as_py() in (True, None) else None

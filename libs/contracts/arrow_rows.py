"""Arrow table -> list of row dicts, equal to `pa.Table.to_pylist()`, column by column.

Why: to_pylist builds every nested value through pyarrow's generic per-element path. A change
record's row images (list<struct<ordinal, name, type_code, text, binary>>) cost ~53 us per
change that way, most of the ~85 us of collecting a batch's changes on the driver
(bench/README.md, session 5). Here every leaf column is converted in one call and the dicts are
zipped together in Python.

Handled column by column: numbers, booleans, strings and binaries (through numpy), struct<flat...>
and list<struct<flat...>> / list<flat>. Any other type (timestamps, decimals, maps, deeper
nesting) falls back to that column's own to_pylist, so the result is always to_pylist's.
"""
from __future__ import annotations

from typing import Any

import pyarrow as pa


def rows(table: pa.Table | pa.RecordBatch) -> list[dict[str, Any]]:
    """The rows of `table` as dicts, exactly as table.to_pylist() gives them."""
    return _dicts(table.schema.names, [column_values(table.column(i)) for i in range(table.num_columns)],
                  table.num_rows)


def _dicts(names: list[str], columns: list[list[Any]], length: int) -> list[dict[str, Any]]:
    """Row dicts from same-length value lists, one per name (a table's columns, a struct's fields)."""
    return [dict(zip(names, values)) for values in zip(*columns)] if names else [{} for _ in range(length)]


def column_values(column: pa.Array | pa.ChunkedArray) -> list[Any]:
    """One column as Python values (column.to_pylist()), nested list/struct columns faster."""
    if isinstance(column, pa.ChunkedArray):
        out: list[Any] = []
        for chunk in column.chunks:
            out.extend(column_values(chunk))
        return out
    kind = column.type
    if pa.types.is_struct(kind) and _flat_struct(kind):
        return _structs(column)
    if (pa.types.is_list(kind) or pa.types.is_large_list(kind)) and _flat_or_flat_struct(kind.value_type):
        return _lists(column)
    return _flat_values(column)


def _flat_values(array: pa.Array) -> list[Any]:
    """Array.to_pylist() builds a scalar object per element (~0.5 us an int, ~1 us a string);
    numpy's tolist() makes the same Python ints, floats, str and bytes ~10x faster. Other
    types (timestamps, decimals, ...) keep to_pylist: their Python values differ in numpy."""
    kind = array.type
    if pa.types.is_integer(kind) or pa.types.is_floating(kind) or pa.types.is_boolean(kind):
        if not array.null_count:
            return array.to_numpy(zero_copy_only=False).tolist()
        values = (array.fill_null(False if pa.types.is_boolean(kind) else 0)
                  .to_numpy(zero_copy_only=False).tolist())
        return [v if ok else None for v, ok in zip(values, array.is_valid().to_numpy(zero_copy_only=False))]
    if pa.types.is_string(kind) or pa.types.is_large_string(kind) or pa.types.is_binary(kind) \
            or pa.types.is_large_binary(kind):
        return array.to_numpy(zero_copy_only=False).tolist()  # str / bytes, None for nulls
    return array.to_pylist()


def _flat(kind: pa.DataType) -> bool:
    return not (pa.types.is_nested(kind) or pa.types.is_dictionary(kind)
                or isinstance(kind, pa.ExtensionType))


def _flat_struct(kind: pa.StructType) -> bool:
    return all(_flat(kind.field(i).type) for i in range(kind.num_fields))


def _flat_or_flat_struct(kind: pa.DataType) -> bool:
    return _flat(kind) or (pa.types.is_struct(kind) and _flat_struct(kind))


def _structs(array: pa.StructArray) -> list[dict[str, Any] | None]:
    names = [array.type.field(i).name for i in range(array.type.num_fields)]
    # flatten(): one array per field, with the struct's offset and null bitmap applied
    values = _dicts(names, [_flat_values(child) for child in array.flatten()], len(array))
    if array.null_count:
        return [v if ok else None for v, ok in zip(values, array.is_valid().to_pylist())]
    return values


def _lists(array: pa.ListArray) -> list[list[Any] | None]:
    # offsets index into .values (the whole child, whatever the slice of `array`)
    offsets = array.offsets.to_pylist()
    lo, hi = offsets[0], offsets[-1]
    items = column_values(array.values.slice(lo, hi - lo))
    valid = array.is_valid().to_pylist() if array.null_count else None
    out = []
    for i in range(len(array)):
        if valid is not None and not valid[i]:
            out.append(None)
        else:
            out.append(items[offsets[i] - lo:offsets[i + 1] - lo])
    return out

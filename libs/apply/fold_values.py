"""Row images as target columns, one Arrow array per column (the fold's input, libs/apply/fold.py).

    entries = ImageEntries.of(target, images)    # images: list<ColumnValue> per change
    entries.values(k) -> ColumnValues             # target column k: every value of it, typed

A change's image is a list of present columns (schemas/change_record.avsc ColumnValue). Flattened,
it is one entry per present column: the change it belongs to (`parent`) and the target column
it feeds (`column`, -1 for a source column the target lacks: ignored, as a replica ignores extra
master columns, libs/replay/images.py). Each column's values are converted in one pass: the
families whose value is the canonical text itself, and integers, with Arrow kernels; every
other family value by value through libs/targets/values.py, the one conversion rule, so the
fold and the replay hold the same values. A value that does not convert is marked `bad` (the
replay stops the batch on it: the fold leaves its row to the replay), a JSON diff `partial`
(it applies to the stored document: left to the replay too).
"""
from __future__ import annotations

import dataclasses
import datetime as dt
from typing import Any, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from libs.replay.json_diff import is_json_diff
from libs.targets import values
from libs.targets.model import Column, Target

TEXT_FAMILIES = frozenset({"string", "enum", "set", "json", "time", "uuid", "inet4", "inet6", "decimal_text"})
"""Families whose Python value is the canonical text itself (values.from_text)."""


@dataclasses.dataclass(frozen=True)
class ColumnValues:
    """One target column's entries: `at` their positions among all entries, `values` typed (SQL
    NULL and unread values null), `sql_null` (no text, no binary), `bad` (does not convert),
    `partial` (a JSON diff)."""

    at: np.ndarray
    values: pa.Array
    sql_null: np.ndarray
    bad: np.ndarray
    partial: np.ndarray


@dataclasses.dataclass(frozen=True)
class ImageEntries:
    target: Target
    parent: np.ndarray  # entry -> the change (row of the images array) it belongs to
    column: np.ndarray  # entry -> target column index, -1: none
    text: pa.Array
    binary: pa.Array
    converted: dict = dataclasses.field(default_factory=dict, compare=False)  # values() asked before

    @classmethod
    def of(cls, target: Target, images: pa.Array | pa.ChunkedArray) -> "ImageEntries":
        if isinstance(images, pa.ChunkedArray):
            images = images.combine_chunks() if images.num_chunks != 1 else images.chunk(0)
        flat = pc.list_flatten(images)
        parent = pc.list_parent_indices(images).to_numpy(zero_copy_only=False).astype(np.int64)
        ordinals = flat.field("ordinal").to_numpy(zero_copy_only=False)
        names = flat.field("name").to_pylist()
        index = {c.name: k for k, c in enumerate(target.columns)}
        fed: dict[tuple[int, str | None], int] = {}
        column = np.empty(len(flat), np.int64)
        for k, key in enumerate(zip(ordinals.tolist(), names)):
            found = fed.get(key)
            if found is None:
                target_column = target.column_for_source(*key)
                found = fed[key] = -1 if target_column is None else index[target_column.name]
            column[k] = found
        return cls(target, parent, column, flat.field("text"), flat.field("binary"))

    def values(self, k: int, kind: pa.DataType) -> ColumnValues:
        """Target column k's entries as `kind` (the column's Arrow type), converted once."""
        if (k, kind) not in self.converted:
            self.converted[(k, kind)] = self._convert(k, kind)
        return self.converted[(k, kind)]

    def _convert(self, k: int, kind: pa.DataType) -> ColumnValues:
        at = np.flatnonzero(self.column == k)
        take = pa.array(at, pa.int64())
        text, binary = self.text.take(take), self.binary.take(take)
        sql_null = (text.is_null() if len(text) else pa.array([], pa.bool_()))
        sql_null = np.logical_and(sql_null.to_numpy(zero_copy_only=False),
                                  binary.is_null().to_numpy(zero_copy_only=False))
        column = self.target.columns[k]
        converted = _vectorised(column, text, binary, kind)
        if converted is not None:
            return ColumnValues(at, converted, sql_null, np.zeros(len(at), bool), _partial(column, text))
        typed, bad = _one_by_one(column, text.to_pylist(), binary.to_pylist())
        return ColumnValues(at, pa.array(typed, kind), sql_null, bad, _partial(column, text))


_MISSING = object()  # a key column the image does not hold


def plain(value: Any) -> Any:
    """A value read from Arrow as the replay holds it: an aware timestamp as naive UTC
    (pipelines/apply/tables.python_rows)."""
    if isinstance(value, dt.datetime) and value.tzinfo is not None:
        return value.astimezone(dt.timezone.utc).replace(tzinfo=None)
    return value


def image_keys(entries: ImageEntries, key: Sequence[str], n: int, kinds: Sequence[pa.DataType]
               ) -> tuple[list[tuple | None], np.ndarray]:
    """Per change of `n`: its image's values of the `key` columns as a tuple, typed as the replay
    types them (None when a column is missing, NULL or does not convert: libs/replay/images.py
    typed_key), and whether the image holds any key column."""
    names = entries.target.column_names
    columns = [[_MISSING] * n for _ in key]
    for j, (name, kind) in enumerate(zip(key, kinds)):
        cv = entries.values(names.index(name), kind)
        for parent, value, bad in zip(entries.parent[cv.at].tolist(), cv.values.to_pylist(), cv.bad.tolist()):
            columns[j][parent] = None if bad else plain(value)
    keys = [None if any(v is _MISSING or v is None for v in kv) else kv for kv in zip(*columns)]
    held = np.array([not all(v is _MISSING for v in kv) for kv in zip(*columns)], bool)
    return keys, held


def _vectorised(column: Column, text: pa.Array, binary: pa.Array, kind: pa.DataType) -> pa.Array | None:
    """The column's values by Arrow kernels, or None when this column needs the value-by-value
    rule (a binary value, a family without a kernel here, a text the kernel refuses)."""
    if binary.null_count != len(binary):
        return None
    if column.family in TEXT_FAMILIES and pa.types.is_string(kind):
        return text.cast(pa.string())
    if column.family == "int" and pa.types.is_integer(kind):
        try:
            return pc.cast(text, kind)  # canonical decimal text; out of range raises: value by value
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            return None
    return None


def _one_by_one(column: Column, texts: list, binaries: list) -> tuple[list, np.ndarray]:
    typed, bad = [], np.zeros(len(texts), bool)
    for k, (text, binary) in enumerate(zip(texts, binaries)):
        try:
            typed.append(values.from_column_value(column, text, binary) if not is_json_diff(text) else None)
        except values.ValueConversionError:
            typed.append(None)
            bad[k] = True
    return typed, bad


def _partial(column: Column, text: pa.Array) -> np.ndarray:
    if column.family != "json":
        return np.zeros(len(text), bool)
    return np.array([is_json_diff(t) for t in text.to_pylist()], bool)

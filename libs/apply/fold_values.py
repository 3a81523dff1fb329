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

from libs.binlog.file_names import binlog_sort_key
from libs.replay.json_diff import is_json_diff
from libs.replay.lineage import to_utc_naive
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
        return cls(target, parent, _target_columns(target, flat), flat.field("text"), flat.field("binary"))

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


def _target_columns(target: Target, flat: pa.StructArray) -> np.ndarray:
    """Entry -> the index of the target column its (ordinal, name) feeds (Target.column_for_source),
    -1: none; asked once per distinct pair."""
    ordinals = flat.field("ordinal").to_numpy(zero_copy_only=False).astype(np.int64)
    names = flat.field("name").dictionary_encode()
    name_codes = names.indices.fill_null(-1).to_numpy(zero_copy_only=False).astype(np.int64) + 1
    pairs, inverse = np.unique(ordinals * (len(names.dictionary) + 1) + name_codes, return_inverse=True)
    labels = names.dictionary.to_pylist()
    index = {c.name: k for k, c in enumerate(target.columns)}
    lookup = np.empty(len(pairs), np.int64)
    for k, pair in enumerate(pairs.tolist()):
        ordinal, code = divmod(pair, len(labels) + 1)
        column = target.column_for_source(ordinal, labels[code - 1] if code else None)
        lookup[k] = -1 if column is None else index[column.name]
    return lookup[inverse] if len(pairs) else np.zeros(0, np.int64)


def plain(value: Any) -> Any:
    """A value read from Arrow as the replay holds it: a timestamp as naive UTC (to_utc_naive, as
    pipelines/apply/tables.python_rows reads stored rows)."""
    return to_utc_naive(value) if isinstance(value, dt.datetime) else value


def image_keys(entries: ImageEntries, key: Sequence[str], n: int, kinds: Sequence[pa.DataType]
               ) -> tuple[list[tuple | None], np.ndarray]:
    """Per change of `n`: its image's values of the `key` columns as a tuple, typed as the replay
    types them (None when a column is missing, NULL or does not convert: libs/replay/images.py
    typed_key), and whether the image holds any key column."""
    names = entries.target.column_names
    values, held, usable = [], np.zeros(n, bool), np.ones(n, bool)
    for name, kind in zip(key, kinds):
        cv = entries.values(names.index(name), kind)
        parents = entries.parent[cv.at]
        column = np.full(n, None, dtype=object)  # (a later entry of a change overwrites: the last wins)
        column[parents] = [plain(v) for v in cv.values.to_pylist()] if pa.types.is_timestamp(kind) \
            else cv.values.to_pylist()
        present = np.zeros(n, bool)
        present[parents] = True
        unusable = np.zeros(n, bool)
        unusable[parents[cv.bad]] = True
        held |= present
        usable &= present & ~unusable & np.not_equal(column, None)
        values.append(column.tolist())
    keys = [kv if ok else None for kv, ok in zip(zip(*values), usable.tolist())]
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


def commit_order_of(changes: pa.Table) -> np.ndarray:
    """Row indices of `changes` in Change.source_order (source, then the
    binlog file in the servers' order, end position, commit time, change_seq), sorted by columns:
    binlog_sort_key is asked once per distinct file."""
    def ranks(column: pa.ChunkedArray, key=None) -> np.ndarray:
        codes = column.combine_chunks().dictionary_encode()
        labels = codes.dictionary.to_pylist()
        rank = np.empty(len(labels), np.int64)
        rank[sorted(range(len(labels)),
                    key=lambda k: key(labels[k]) if key else labels[k])] = np.arange(len(labels))
        return rank[codes.indices.to_numpy(zero_copy_only=False)] if len(labels) else np.zeros(0, np.int64)

    numbers = [changes.column(c).to_numpy() for c in ("change_seq", "commit_ts", "trx_end_pos")]
    return np.lexsort([*numbers, ranks(changes.column("trx_file"), binlog_sort_key),
                       ranks(changes.column("source"))])

"""The touched part of one target table, in memory, searched the way a replica searches.

Rows keep their scan order (current rows in the order given, then inserts appended): a
replica's table scan returns "the first row fetched from the SE that matches" (WL#5092 R1,
index structures), so among identical rows of a keyless table the first in scan order changes.
Indexes: one hash index per enforced key (PRIMARY KEY, UNIQUE keys) and, for the table scan
with a full before image, one on the whole row.

Value comparison is Python equality of typed values (binary collation): case-insensitive or
PAD SPACE collations of the replica are not modelled.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping

from libs.replay.lineage import Lineage
from libs.targets.model import Target


@dataclass(eq=False)
class Row:
    """A row of the in-memory table: identity, values by target column, last writer."""

    row_id: str
    values: dict[str, Any]
    order: int
    existed: bool  # came from current_rows (so deleting it is a Delta delete)
    lineage: Lineage | None = None  # set when this batch wrote the row
    alive: bool = True
    written: Lineage | None = None  # the change of this batch that last wrote `values` (a delete keeps it)


@dataclass
class TableState:
    target: Target
    rows: list[Row] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._columns = self.target.column_names
        self._key_index: dict[tuple[str, ...], dict[tuple, Row]] = {k: {} for k in self.target.enforced_keys}
        self._full_index: dict[tuple, list[Row]] = {}
        self._next_order = 0

    @classmethod
    def load(cls, target: Target, rows: Iterable[tuple[str, Mapping[str, Any]]]) -> "TableState":
        state = cls(target)
        for row_id, values in rows:
            state.add(row_id, {c: values.get(c) for c in state._columns}, existed=True)
        return state

    # -- index maintenance -------------------------------------------------------------------
    def _key_of(self, key: tuple[str, ...], values: Mapping[str, Any]) -> tuple | None:
        key_values = tuple([values[c] for c in key])  # a list display: no generator per call
        return None if None in key_values else key_values  # NULLs never collide

    def _full_of(self, values: Mapping[str, Any]) -> tuple:
        return tuple([values[c] for c in self._columns])

    def _index(self, row: Row) -> None:
        for key, index in self._key_index.items():
            kv = self._key_of(key, row.values)
            if kv is not None:
                index[kv] = row
        bucket = self._full_index.setdefault(self._full_of(row.values), [])
        bisect.insort(bucket, row, key=lambda r: r.order)

    def _unindex(self, row: Row) -> None:
        for key, index in self._key_index.items():
            kv = self._key_of(key, row.values)
            if kv is not None and index.get(kv) is row:
                del index[kv]
        bucket = self._full_index.get(self._full_of(row.values), [])
        if row in bucket:
            bucket.remove(row)

    # -- operations --------------------------------------------------------------------------
    def add(self, row_id: str, values: dict[str, Any], *, existed: bool = False,
            lineage: Lineage | None = None) -> Row:
        row = Row(row_id, values, self._next_order, existed, lineage, written=lineage)
        self._next_order += 1
        self.rows.append(row)
        self._index(row)
        return row

    def update(self, row: Row, values: dict[str, Any], lineage: Lineage) -> None:
        self._unindex(row)
        row.values = values
        row.lineage = row.written = lineage
        self._index(row)

    def delete(self, row: Row, lineage: Lineage) -> None:
        self._unindex(row)
        row.alive = False
        row.lineage = lineage

    # -- search ------------------------------------------------------------------------------
    def find(self, image: Mapping[str, Any]) -> Row | None:
        """The row a replica would pick for a before image (values of target columns only).

        WL#5092 find_row: the target PRIMARY KEY when the image holds all its columns, else a
        NOT NULL UNIQUE key it holds (no further comparison: the key is unique), else a table
        scan comparing every column present in the image; first match in scan order.
        """
        for key in self.target.lookup_keys:
            if all(c in image for c in key):
                kv = self._key_of(key, image)
                return None if kv is None else self._key_index[key].get(kv)
        if len(image) == len(self._columns):
            bucket = self._full_index.get(self._full_of(image), [])
            return bucket[0] if bucket else None
        for row in self.rows:
            if row.alive and all(row.values[c] == v for c, v in image.items()):
                return row
        return None

    def conflicts(self, values: Mapping[str, Any],
                  exclude: Row | None = None) -> list[tuple[tuple[str, ...], Row]]:
        """Rows that `values` would duplicate on an enforced key (ER_DUP_ENTRY 1062), key order."""
        found: list[tuple[tuple[str, ...], Row]] = []
        for key, index in self._key_index.items():
            kv = self._key_of(key, values)
            other = index.get(kv) if kv is not None else None
            if other is not None and other is not exclude and all(other is not r for _, r in found):
                found.append((key, other))
        return found

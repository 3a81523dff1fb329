"""A driver-side copy of a whole target table, kept in step with the applier's own MERGEs.

Why (bench/README.md "Session 4"): replaying a batch needs the current target rows it touches;
reading them from Delta is a Spark job per table per batch (~3 s of an ~11 s apply batch).
After each of its own MERGEs the applier knows the table's content exactly. The mirror holds it,
tagged with the Delta version it equals; the applier uses it only while the table is still at
that version and reads from Delta again otherwise (another writer, a RESTORE, a commit it did
not see): correctness does not rest on the applier being the only writer, only the saving does.
Tables above `max_rows` are not mirrored (memory is the driver's).

Rows are dicts of the target's column values plus `_row_id`, in the representation the
applier's Delta reads produce (pipelines.apply.tables.python_rows): callers put rows in through
that same function, so a lookup answered here equals the one Delta would answer. Each row's
`_lineage` is kept beside it, not in it: lookups return what a touched-row read returns (no
lineage), and `whole_rows` gives the table's complete content for a whole-table write.

A soft-delete target's deleted rows (libs/apply/modes/soft_delete.py) are kept apart too: in
`whole_rows`, never in a lookup (the replay never sees them).

Lookup semantics equal the applier's touched-row read (libs.apply.plan.Lookups): a row is
selected when its values on a lookup's columns equal one of the lookup's tuples; Python
equality, so None equals None (by-image lookups are null-safe; by-key tuples hold no None).
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping

from libs.apply.modes.soft_delete import is_deleted
from libs.apply.plan import Lookups
from libs.replay import LINEAGE_COLUMN, ROW_ID_COLUMN

Row = dict[str, Any]


class MirrorOverflow(Exception):
    """The table outgrew max_rows: the caller drops the mirror and reads from Delta."""


class TargetMirror:
    holds_whole_rows = True  # every row with its `_lineage`: a whole-table overwrite's source
    positions_behind = False  # it keeps no stored positions (libs/apply/keyed_copy.py does)

    def __init__(self, rows: Iterable[Mapping[str, Any]], version: int | None, max_rows: int):
        """`version`: the Delta version these rows are (None: the table does not exist yet).
        A row's `_lineage` key, when present, is kept apart (see whole_rows)."""
        self.version = version
        self.max_rows = max_rows
        self._rows: dict[str, Row] = {}
        self._lineage: dict[str, Any] = {}
        self._deleted: dict[str, Row] = {}  # soft-deleted rows, whole (lineage included)
        # columns -> values tuple -> row ids; built on first use of a column set, then kept
        # up to date by apply() (a batch's lookups use the same few column sets every time).
        self._indexes: dict[tuple[str, ...], dict[tuple, set[str]]] = {}
        for row in rows:
            self._put(dict(row))
        if len(self._rows) > max_rows:
            raise MirrorOverflow(f"{len(self._rows)} rows > {max_rows}")

    def __len__(self) -> int:
        return len(self._rows) + len(self._deleted)

    def _index(self, columns: tuple[str, ...]) -> dict[tuple, set[str]]:
        index = self._indexes.get(columns)
        if index is None:
            index = {}
            for row_id, row in self._rows.items():
                index.setdefault(tuple(row[c] for c in columns), set()).add(row_id)
            self._indexes[columns] = index
        return index

    def select(self, lookups: Lookups) -> list[Row]:
        """Copies of the rows matching any lookup, each once, in _row_id order."""
        found: set[str] = set()
        for columns, tuples in (*lookups.by_key.items(), *lookups.by_image.items()):
            if not tuples:
                continue
            index = self._index(columns)
            for values in tuples:
                found.update(index.get(tuple(values), ()))
        return [dict(self._rows[row_id]) for row_id in sorted(found)]

    def whole_rows(self) -> list[Row]:
        """Every row with its `_lineage`, deleted ones too, in _row_id order: the table's content
        at `version`."""
        rows = {**self._deleted, **{row_id: {**row, LINEAGE_COLUMN: self._lineage.get(row_id)}
                                    for row_id, row in self._rows.items()}}
        return [rows[row_id] for row_id in sorted(rows)]

    def apply(self, upserts: Iterable[Mapping[str, Any]], deleted_row_ids: Iterable[str],
              version: int | None, soft: Mapping[str, Mapping[str, Any]] | None = None) -> None:
        """The applier's write of a batch: rows by _row_id replaced or added (with their
        `_lineage`), and rows deleted; `soft`: row id -> soft-delete columns, rows that stay,
        flagged, out of every lookup. `version`: the Delta version that write committed, or
        None while it is not committed yet (set `version` once it is; until then the mirror
        equals no Delta version). Raises MirrorOverflow (the mirror is then unusable) past
        max_rows."""
        for row_id in [*deleted_row_ids, *(soft or {})]:
            row = self._rows.pop(row_id, None)
            lineage = self._lineage.pop(row_id, None)
            if row is not None:
                self._unindex(row_id, row)
                if soft and row_id in soft:
                    self._deleted[row_id] = {**row, LINEAGE_COLUMN: lineage, **soft[row_id]}
        for upsert in upserts:
            row = dict(upsert)
            old = self._rows.get(row[ROW_ID_COLUMN])
            if old is not None:
                self._unindex(row[ROW_ID_COLUMN], old)
            self._put(row)
        self.version = version
        if len(self._rows) > self.max_rows:
            raise MirrorOverflow(f"{len(self._rows)} rows > {self.max_rows}")

    def _put(self, row: Row) -> None:
        row_id = row[ROW_ID_COLUMN]
        if is_deleted(row):
            old = self._rows.pop(row_id, None)
            if old is not None:
                self._unindex(row_id, old)
            self._lineage.pop(row_id, None)
            self._deleted[row_id] = row
            return
        if LINEAGE_COLUMN in row:
            self._lineage[row_id] = row.pop(LINEAGE_COLUMN)
        self._rows[row_id] = row
        for columns, index in self._indexes.items():
            index.setdefault(tuple(row[c] for c in columns), set()).add(row_id)

    def _unindex(self, row_id: str, row: Row) -> None:
        for columns, index in self._indexes.items():
            values = tuple(row[c] for c in columns)
            ids = index.get(values)
            if ids is not None:
                ids.discard(row_id)
                if not ids:
                    del index[values]

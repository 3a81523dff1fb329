"""Where each stored row of a current target sits: `_row_id` -> (data file, row index), valid at
one Delta version of the table (issue #57 item 3). With it a batch's write needs no scan of the
table: the stored rows it updates or deletes get deletion vectors at their positions, and the
upserts' new images are appended (pipelines/apply/position_writes.py, pipelines/delta/dv_commit.py).

The index is of one version only: a table whose latest version is another one was written by
something the index did not see (a compaction, another writer, a MERGE the applier fell back
to) and is read again. A data file is named as Delta's AddFile.path names it.

It is held column-wise, sorted by row id (numpy: the ids as UTF-8 bytes, a file number and a
row index per row, ~50 bytes a row for 32-character ids): a batch's lookups are one binary
search each, a commit is one sorted insert and one delete (a copy of the arrays, ~20 ms at
1,000,000 rows), and a table of millions of rows fits the driver, where a dict of Python
objects per row would take ~200 bytes a row and seconds to build.
"""
from __future__ import annotations

from typing import Iterable, NamedTuple, Sequence

import numpy as np
import pyarrow as pa


class DuplicateRowId(ValueError):
    """Two stored rows with one `_row_id`: positions cannot say which one a change means."""


class Positions(NamedTuple):
    """Rows' positions, column-wise: the i-th row is row_ids[i] at row row_indexes[i] of files[i].
    With `file_names`, files[i] is a number into it (a read's dictionary-encoded file column)."""

    row_ids: Sequence[str] | pa.Array
    files: Sequence[str] | Sequence[int]
    row_indexes: Sequence[int]
    file_names: Sequence[str] | None = None


class PositionIndex:
    """Every stored row's position at Delta `version` of one table."""

    def __init__(self, version: int, positions: Positions | None = None):
        self.version = version
        self._files: list[str] = []  # file number -> AddFile.path
        self._numbers: dict[str, int] = {}
        self._ids = np.empty(0, dtype="S1")  # sorted
        self._file_of = np.empty(0, dtype=np.int32)  # file number of the row with _ids[i]
        self._row_of = np.empty(0, dtype=np.int64)  # its row index in that file
        if positions is not None:
            self._add(positions)

    def __len__(self) -> int:
        return len(self._ids)

    def __contains__(self, row_id: object) -> bool:
        return isinstance(row_id, str) and self._find(_ids_of([row_id]))[0] >= 0

    def position(self, row_id: str) -> tuple[str, int] | None:
        """(file, row index) of the stored row, None when the table has no such row."""
        return self.placed([row_id]).get(row_id)

    def placed(self, row_ids: Iterable[str]) -> dict[str, tuple[str, int]]:
        """row id -> (file, row index) of those of `row_ids` the index holds."""
        row_ids = list(row_ids)
        found = self._find(_ids_of(row_ids))
        return {row_id: (self._files[self._file_of[at]], int(self._row_of[at]))
                for row_id, at in zip(row_ids, found.tolist()) if at >= 0}

    def valid_at(self, latest_version: int | None) -> bool:
        """Does the index still describe the table, whose latest version is `latest_version`?"""
        return latest_version is not None and latest_version == self.version

    def touched(self, upserts: Iterable[str], deletes: Iterable[str]) -> dict[str, list[int]] | None:
        """The stored rows a batch replaces (`upserts`: rows whose new image it writes; one not
        stored is a new row) or removes (`deletes`), as file -> sorted row indexes: the deletion
        vectors of its commit. None when a delete names a row the index does not know or a row
        id comes twice (the batch is then not one this index can write)."""
        upserts, deletes = list(upserts), list(deletes)
        if len(set(upserts) | set(deletes)) != len(upserts) + len(deletes):
            return None
        gone = self._find(_ids_of(deletes))
        if (gone < 0).any():
            return None
        found = np.concatenate([self._find(_ids_of(upserts)), gone])
        found = found[found >= 0]
        files, rows = self._file_of[found], self._row_of[found]
        order = np.lexsort((rows, files))
        out: dict[str, list[int]] = {}
        for file, row in zip(files[order].tolist(), rows[order].tolist()):
            out.setdefault(self._files[file], []).append(row)
        return out

    def apply_commit(self, version: int, removed: Iterable[str], added: Positions) -> None:
        """The index after a commit it knows whole: the rows of `removed` left their positions
        (deletion vectors or a removed file), `added` are the rows of the commit's new files;
        the index is then valid at `version`."""
        gone = self._find(_ids_of(list(removed)))
        gone = gone[gone >= 0]
        if len(gone):
            self._ids, self._file_of, self._row_of = (
                np.delete(a, gone) for a in (self._ids, self._file_of, self._row_of))
        self._add(added)
        self.version = version

    def _find(self, ids: np.ndarray) -> np.ndarray:
        """The index in the sorted arrays of each of `ids`, -1 for one the index does not hold."""
        if not len(self._ids) or not len(ids):
            return np.full(len(ids), -1, dtype=np.int64)
        fits = np.char.str_len(ids) <= self._ids.dtype.itemsize  # a longer one is not stored
        query = ids.astype(self._ids.dtype)  # (those that do not fit are cut: `fits` drops them)
        at = np.minimum(np.searchsorted(self._ids, query), len(self._ids) - 1)
        return np.where(fits & (self._ids[at] == query), at, -1)

    def _add(self, positions: Positions) -> None:
        ids = _ids_of(positions.row_ids)
        numbers = self._file_numbers(positions)
        rows = np.asarray(positions.row_indexes, dtype=np.int64)
        if not len(ids) == len(numbers) == len(rows):
            raise ValueError("positions: columns of different lengths")
        order = np.argsort(ids, kind="stable")
        ids, numbers, rows = ids[order], numbers[order], rows[order]
        twice = np.flatnonzero(ids[1:] == ids[:-1])
        if len(twice) or (self._find(ids) >= 0).any():
            stored = ids[twice[0]] if len(twice) else ids[self._find(ids) >= 0][0]
            raise DuplicateRowId(f"_row_id {stored.decode()!r} stored twice")
        if ids.dtype.itemsize > self._ids.dtype.itemsize:
            self._ids = self._ids.astype(ids.dtype)
        at = np.searchsorted(self._ids, ids.astype(self._ids.dtype))
        self._ids = np.insert(self._ids, at, ids.astype(self._ids.dtype))
        self._file_of = np.insert(self._file_of, at, numbers)
        self._row_of = np.insert(self._row_of, at, rows)

    def _file_numbers(self, positions: Positions) -> np.ndarray:
        if positions.file_names is None:
            return np.array([self._number(f) for f in positions.files], dtype=np.int32)
        mine = np.array([self._number(f) for f in positions.file_names], dtype=np.int32)
        return mine[np.asarray(positions.files, dtype=np.int64)] if len(mine) else np.empty(0, np.int32)

    def _number(self, path: str) -> int:
        number = self._numbers.get(path)
        if number is None:
            number = self._numbers[path] = len(self._files)
            self._files.append(path)
        return number


def _ids_of(row_ids: Sequence[str] | pa.Array | np.ndarray) -> np.ndarray:
    """Row ids as a numpy array of UTF-8 bytes (`S` dtype: compared and sorted as bytes)."""
    if isinstance(row_ids, np.ndarray) and row_ids.dtype.kind == "S":
        return row_ids
    if isinstance(row_ids, (pa.Array, pa.ChunkedArray)):
        row_ids = row_ids.cast(pa.binary()).to_numpy(zero_copy_only=False)
        return row_ids.astype("S") if len(row_ids) else np.empty(0, dtype="S1")
    if not len(row_ids):
        return np.empty(0, dtype="S1")
    return np.array([r.encode("utf-8") for r in row_ids], dtype="S")

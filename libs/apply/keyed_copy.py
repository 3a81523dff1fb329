"""A columnar copy of a big keyed target table on the driver (issue #57): the touched-row read
without a Delta scan.

Why (bench/README.md "Where a live batch's time goes, and keyed copies"): on sysbench's
1,000,000-row tables the replay step, which is mostly the read of the rows a batch touches, takes
~45% of a live batch.
Uniform random keys prune no Delta file, so each batch scans every table. TargetMirror
(target_mirror.py) spares that read for small tables by holding their rows as Python dicts. A
table of millions of rows is held here instead: one Arrow table sorted by its key, which must be
a single integer column (its primary key, the target's only enforced key). A lookup by key is a
binary search (numpy.searchsorted): milliseconds for thousands of keys. Rows are made Python
(`to_rows`, the Delta read's own conversion) only when a lookup returns them.

It is kept in step by the calls the mirror takes (`apply`, then `version` set once the write
committed: known_targets.py MirroredWrites), so the write path does not know which one it holds.
The rows the applier's writes changed since the copy was loaded sit in an overlay (Python rows,
by key). A base row they replaced or deleted is masked. A base row can only be changed after a
batch read it from here (the replay finds a row before it changes it), so each row read is
remembered with its base position. Anything else raises MirrorOverflow and the caller drops the
copy (it is loaded again at the next version), so correctness never rests on the copy:
  * a new row (a row id the copy never handed out) whose key a row of the copy holds;
  * a delete of a row the copy never handed out;
  * an overlay over `max_overlay` rows (a reload folds it back into the base).
A lookup on other columns than the key, or by whole image (a before image without its key: not
made for a keyed table's row images), raises NotAnswered; the caller reads Delta for it.

Positions (writes.deletion_vector_commits, pipelines/apply/position_writes.py): loaded with each
base row (its `_metadata.file_path` and `row_index` at the copy's version), the copy says where
each row it hands out is stored (`position_of`), so a DV commit needs no position index and no
confirm read: the copy is a read pinned to one version, as the replay's own read of an unmirrored
table is. A DV commit moves no stored row (a deletion vector marks rows where they are) and stores
the new images in new files, whose positions `place` records. Any other write moves rows (a MERGE
rewrites whole files), so after an `apply` the copy's positions are behind until `place`, and a
copy left behind is not kept (pipelines/apply/known_targets.py MirroredWrites.keep).
"""
from __future__ import annotations

from typing import Any, Callable, Iterable, Mapping

import numpy as np
import pyarrow as pa

from libs.apply.modes.select import mode_of
from libs.apply.plan import Lookups
from libs.apply.target_mirror import MirrorOverflow
from libs.replay import LINEAGE_COLUMN, ROW_ID_COLUMN
from libs.targets.model import Target

Row = dict[str, Any]
Position = tuple[str, int]  # a stored row's data file (as `_metadata.file_path` spells it), its row index
INTEGRAL_SPARK_TYPES = ("tinyint", "smallint", "int", "bigint")  # BIGINT UNSIGNED is a decimal(20,0)
MAX_OVERLAY = 200_000  # rows changed since the load; past it the copy is loaded again


class NotAnswered(Exception):
    """A lookup the copy does not answer (by whole image, or on other columns): read it from Delta."""


def copy_key(target: Target) -> str | None:
    """The column a copy of `target` is keyed by: its primary key when it is the only enforced
    key and a single integer column, of a mode that takes copies (current rows, hard deletes);
    else None (no copy: such a table is read from Delta)."""
    keys = target.enforced_keys
    if not mode_of(target).keyed_copies or len(keys) != 1 or len(keys[0]) != 1:
        return None
    column = target.column(keys[0][0])
    integral = column.family == "int" and column.spark_type.lower() in INTEGRAL_SPARK_TYPES
    return column.name if integral else None


class KeyedCopy:
    holds_whole_rows = False  # no `_lineage`: never the source of a whole-table overwrite

    def __init__(self, table: pa.Table, key: str, version: int,
                 to_rows: Callable[[pa.Table], list[Row]], max_overlay: int = MAX_OVERLAY,
                 positions: tuple[pa.ChunkedArray, pa.ChunkedArray] | None = None):
        """`table`: the target's columns and `_row_id` at Delta `version`, in any order;
        `positions`: its rows' data files and row indexes, in the same order (module docstring).
        Raises MirrorOverflow when its key holds a null or a value twice."""
        keys = table.column(key)
        if keys.null_count:
            raise MirrorOverflow(f"{key}: null keys")
        order = np.argsort(keys.to_numpy(), kind="stable")
        self._base = table.take(pa.array(order))
        self._keys = self._base.column(key).to_numpy()
        if len(self._keys) > 1 and not np.all(self._keys[1:] > self._keys[:-1]):
            raise MirrorOverflow(f"{key}: a key value held twice")
        self.key, self.version, self.to_rows, self.max_overlay = key, version, to_rows, max_overlay
        self._masked = np.zeros(len(self._keys), dtype=bool)  # base rows replaced or deleted
        self._overlay: dict[Any, Row] = {}  # key -> row the applier wrote since the load
        self._key_of: dict[str, Any] = {}  # the overlay's row ids -> their keys
        self._base_at: dict[str, int] = {}  # row id -> base position, of each base row handed out
        self._files, self._file_names, self._row_indexes = _stored_at(positions, order)
        self._overlay_at: dict[str, Position] = {}  # overlay row id -> where our DV commit stored it
        self._unplaced: set[str] | None = None  # rows written since the last place (None: none)

    def __len__(self) -> int:
        return int(len(self._keys) - self._masked.sum()) + len(self._overlay)

    def select(self, lookups: Lookups) -> list[Row]:
        """Copies of the rows whose key is one of the lookup's, each once, in _row_id order
        (TargetMirror.select's answer)."""
        if any(lookups.by_image.values()) or any(
                tuples for columns, tuples in lookups.by_key.items() if columns != (self.key,)):
            raise NotAnswered("a lookup by whole image or on other columns than the key")
        wanted = {values[0] for values in lookups.by_key.get((self.key,), ())}
        rows = [dict(self._overlay[k]) for k in wanted if k in self._overlay]
        rows += self._base_rows(np.fromiter((k for k in wanted if k not in self._overlay),
                                            dtype=self._keys.dtype))
        return sorted(rows, key=lambda row: row[ROW_ID_COLUMN])

    def _base_rows(self, wanted: np.ndarray) -> list[Row]:
        at = np.searchsorted(self._keys, wanted)
        inside = at < len(self._keys)
        at = at[inside][self._keys[at[inside]] == wanted[inside]]
        at = np.sort(at[~self._masked[at]])
        rows = self.to_rows(self._base.take(pa.array(at, type=pa.int64()))) if len(at) else []
        self._base_at.update((row[ROW_ID_COLUMN], int(i)) for row, i in zip(rows, at))
        return rows

    def apply(self, upserts: Iterable[Mapping[str, Any]], deleted_row_ids: Iterable[str],
              version: int | None, soft: Mapping[str, Mapping[str, Any]] | None = None) -> None:
        """The applier's write of a batch (TargetMirror.apply): rows by _row_id replaced or
        added, rows deleted; `version` None until the write commits. `soft`: rows a
        soft-delete mode flags (no such target gets a copy): out of every lookup, so deleted here."""
        rows = [{name: value for name, value in upsert.items() if name != LINEAGE_COLUMN}
                for upsert in upserts]
        # Every changed row out first, then the new images in: keys can move onto each
        # other's old values in one batch (UPDATE t SET id = id - 1).
        new = [row for row in rows if not self._forget(row[ROW_ID_COLUMN])]
        for row_id in [*deleted_row_ids, *(soft or {})]:
            if not self._forget(row_id):
                raise MirrorOverflow(f"row {row_id} deleted without being read from the copy")
        for row in new:  # a new row's key is held by no row left
            if row[self.key] in self._overlay or self._in_base(row[self.key]):
                raise MirrorOverflow(f"row {row[ROW_ID_COLUMN]} written without being read from the copy")
        for row in rows:
            self._overlay[row[self.key]] = row
            self._key_of[row[ROW_ID_COLUMN]] = row[self.key]
        self.version = version
        if self.positioned:
            self._unplaced = (self._unplaced or set()) | {row[ROW_ID_COLUMN] for row in rows}
        if len(self._overlay) > self.max_overlay:
            raise MirrorOverflow(f"{len(self._overlay)} rows changed since the copy was loaded")

    def _forget(self, row_id: str) -> bool:
        """The row `row_id` out of the copy (deleted, or about to be written again); False when
        the copy does not hold it (a new row, or one it never handed out)."""
        if row_id in self._key_of:
            del self._overlay[self._key_of.pop(row_id)]
            self._overlay_at.pop(row_id, None)
            return True
        if row_id in self._base_at:
            self._masked[self._base_at.pop(row_id)] = True
            return True
        return False

    def _in_base(self, key: Any) -> bool:
        at = int(np.searchsorted(self._keys, key))
        return at < len(self._keys) and self._keys[at] == key and not self._masked[at]

    @property
    def positioned(self) -> bool:
        """Loaded with its rows' positions (module docstring)."""
        return self._files is not None

    @property
    def positions_behind(self) -> bool:
        """Written since its last `place`: a positioned copy that may not say where its rows are."""
        return self._unplaced is not None

    def position_of(self, row_id: str) -> Position | None:
        """Where the row `row_id`, handed out by `select` and not written since, is stored;
        None when the copy does not know (unpositioned, or a row it did not hand out)."""
        if self._files is None:
            return None
        if row_id in self._base_at:
            at = self._base_at[row_id]
            return self._file_names[self._files[at]], int(self._row_indexes[at])
        return self._overlay_at.get(row_id)

    def place(self, row_ids: Iterable[str], files: Iterable[str], row_indexes: Iterable[int]) -> None:
        """Where the write of the last `apply` (a DV commit) stored its rows: each row it wrote,
        no other. ValueError otherwise (the copy stays behind: it is not kept)."""
        placed = {row_id: (file, int(row)) for row_id, file, row in zip(row_ids, files, row_indexes)}
        if self._unplaced is None or placed.keys() != self._unplaced:
            raise ValueError(f"{len(placed)} rows placed, {len(self._unplaced or ())} written")
        self._overlay_at.update(placed)
        self._unplaced = None


def _stored_at(positions, order: np.ndarray) -> tuple[np.ndarray | None, list[str], np.ndarray | None]:
    """The base rows' positions in the base's (key) order: file codes, file names, row indexes."""
    if positions is None:
        return None, [], None
    files, row_indexes = positions
    files = (files.combine_chunks() if isinstance(files, pa.ChunkedArray) else files).dictionary_encode()
    codes = files.indices.to_numpy(zero_copy_only=False)[order]
    return codes, files.dictionary.to_pylist(), np.asarray(row_indexes)[order]

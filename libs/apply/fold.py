"""The common case of a table's batch folded per row identity in Arrow (issue #37 item 4; DESIGN.md
"Cost follows the changes"), with what the fold cannot prove safe left to the exact replay.

    folded = fold(target, changes, stored, row_schema)
        changes: one table's row changes in commit order (change_record columns, commit_ts as
                 epoch micros); stored: the live target rows they may touch (target columns +
                 _row_id); row_schema: the target columns, _row_id, _lineage as Arrow types.
        -> folded.upserts / folded.deletes (MERGE source rows), folded.log (change-log rows),
           folded.rest / folded.rest_stored (changes and stored rows for libs/replay).

What the fold does is what the replay (libs/replay/engine.py) does to the same rows, decided by
the same rules, only per row instead of per change:
  * a row is found by its PRIMARY KEY (WL#5092 find_row: the PK when the image holds it);
  * an insert's row: its after image, absent columns the TARGET's defaults at the change's
    commit time (WL#5092 R1.1; values.fill_value), a new _row_id (make_row_id);
  * an update: the present after-image columns over the row as it was (R2): per column, the
    last present value since the row's insert, else the stored value;
  * SQL NULL for a NOT NULL column: the column's default at that change (1048);
  * a delete: the row goes; a later insert of the key is a new row (a new _row_id);
  * a snapshot row: a new row like an insert, replacing a row of its key the batch made;
  * lineage: the row's last change; the change log: one entry per change, outcome applied.

Left to the replay, whole (every change of the key and its stored row): a key whose changes
are not a valid sequence on it (an insert on a live row: 1062; an update or delete of a missing
row: 1032; strict mode stops and idempotent mode quarantines, which only the replay decides),
a key-changing update (both keys), a snapshot row of a stored key, a value that does not convert
(the replay stops with its position), a JSON diff (it applies to the stored document). Left to the
replay, the whole table: a change whose image lacks the key, a target whose rows the replay finds by
more than one key (another UNIQUE key can conflict across rows), a soft-delete or SCD2 target, a
target that cannot apply row changes (WL#3303), any op other than insert/update/delete/snapshot.
"""
from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import pyarrow as pa

from libs.contracts.change import Op
from libs.apply.modes.select import mode_of
from libs.apply.fold_values import ColumnValues, ImageEntries, image_keys, plain
from libs.replay.lineage import LINEAGE_COLUMN, ROW_ID_COLUMN, canonical_text, make_row_ids, to_utc_naive
from libs.replay.logging_format import ERROR, ROW, decide_apply_format
from libs.targets import values
from libs.targets.model import Target

# op column text
INSERT, UPDATE, DELETE, SNAPSHOT = (op.value for op in (Op.INSERT, Op.UPDATE, Op.DELETE, Op.SNAPSHOT))
NEW_ROW = (INSERT, SNAPSHOT)  # ops that make a new row identity
LINEAGE_FROM = {"operation": "op"}  # lineage field -> change_record column, where the names differ


@dataclasses.dataclass(frozen=True)
class FoldedLog:
    """Change-log rows of the folded changes: `at` their rows in `changes`, in commit order."""

    at: np.ndarray
    row_ids: list[str]
    keys: list[dict[str, str | None]]


@dataclasses.dataclass(frozen=True)
class Folded:
    upserts: pa.Table  # row_schema
    deletes: pa.Table  # _row_id, _lineage
    log: FoldedLog
    rest: np.ndarray  # rows of `changes` for the replay, in commit order
    rest_stored: np.ndarray  # rows of `stored` for the replay


def foldable(target: Target) -> bool:
    """The table-level conditions (module docstring)."""
    return (bool(target.primary_key) and target.enforced_keys == (target.primary_key,)
            and target.lookup_keys == (target.primary_key,) and mode_of(target).folds
            and decide_apply_format(ROW, target.can_apply_rows, target.can_apply_statements).format != ERROR)


def fold(target: Target, changes: pa.Table, stored: pa.Table, row_schema: pa.Schema) -> Folded:
    n = changes.num_rows
    ops = np.array(changes.column("op").to_pylist(), dtype=object)
    if not foldable(target) or n == 0 or not np.isin(ops, (INSERT, UPDATE, DELETE, SNAPSHOT)).all():
        return _nothing_folded(changes, stored, row_schema)
    plan = _KeyPlan.of(target, changes, ops, stored, row_schema)
    if plan is None or not plan.folds.any():
        return _nothing_folded(changes, stored, row_schema)
    return _Assembly(target, changes, stored, row_schema, plan).folded()


def _nothing_folded(changes: pa.Table, stored: pa.Table, row_schema: pa.Schema) -> Folded:
    return Folded(row_schema.empty_table(), _deletes_schema(row_schema).empty_table(),
                  FoldedLog(np.zeros(0, np.int64), [], []),
                  np.arange(changes.num_rows), np.arange(stored.num_rows))


def _kinds(target: Target, row_schema: pa.Schema) -> list[pa.DataType]:
    return [row_schema.field(c).type for c in target.primary_key]


def _deletes_schema(row_schema: pa.Schema) -> pa.Schema:
    return pa.schema([row_schema.field(ROW_ID_COLUMN), row_schema.field(LINEAGE_COLUMN)])


@dataclasses.dataclass
class _KeyPlan:
    """Which changes fold, in the working order (by key, then commit order), and their rows."""

    key_of: np.ndarray  # change -> key id
    keys: list[tuple]  # key id -> PK values
    stored_at: np.ndarray  # key id -> row of `stored`, -1: none
    folds: np.ndarray  # change -> folded (else replayed)
    after: ImageEntries
    unsafe: np.ndarray  # key id -> left to the replay with its stored row
    ops: np.ndarray  # change -> its op

    @classmethod
    def of(cls, target: Target, changes: pa.Table, ops: np.ndarray, stored: pa.Table,
           row_schema: pa.Schema) -> "_KeyPlan | None":
        n = changes.num_rows
        before = ImageEntries.of(target, changes.column("before"))
        after = ImageEntries.of(target, changes.column("after"))
        before_keys, _ = image_keys(before, target.primary_key, n, _kinds(target, row_schema))
        after_keys, after_held = image_keys(after, target.primary_key, n, _kinds(target, row_schema))
        named = [a if op in NEW_ROW else b for op, a, b in zip(ops, after_keys, before_keys)]
        if any(k is None for k in named):
            return None  # the replay finds such a row otherwise, or stops: the whole table
        ids: dict[tuple, int] = {}
        key_of = np.array([ids.setdefault(k, len(ids)) for k in named], np.int64)
        moves = [(key_of[j], after_keys[j]) for j in np.flatnonzero((ops == UPDATE) & after_held)
                 if after_keys[j] != named[j]]
        if any(moved is None for _, moved in moves):
            return None
        # a key-changing update: both keys to the replay, with the stored row of the key it moves
        # to (a 1062 there), which no change may name otherwise
        unsafe_ids = {k for k, _ in moves} | {ids.setdefault(moved, len(ids)) for _, moved in moves}
        keys = list(ids)
        unsafe = np.zeros(len(keys), bool)
        unsafe[list(unsafe_ids)] = True
        stored_at = np.full(len(keys), -1, np.int64)
        for r, kv in enumerate(zip(*([plain(v)
                                      for v in stored.column(c).cast(row_schema.field(c).type).to_pylist()]
                                     for c in target.primary_key))):
            if kv in ids:
                stored_at[ids[kv]] = r
        plan = cls(key_of, keys, stored_at, np.ones(n, bool), after, unsafe, ops)
        plan._mark(unsafe, _unconvertible(target, after, n, row_schema)
                   | _unconvertible(target, before, n, row_schema))
        plan._mark(unsafe, plan._invalid_sequences())
        plan.folds = ~unsafe[key_of]
        return plan

    def _mark(self, unsafe: np.ndarray, changes: np.ndarray) -> None:
        unsafe[np.unique(self.key_of[changes])] = True

    def _invalid_sequences(self) -> np.ndarray:
        """Changes that meet a row that is there for an insert, or not there for an update or
        delete (walking each key's changes in commit order from the stored row)."""
        order = np.argsort(self.key_of, kind="stable")
        key = self.key_of[order]
        op = self.ops[order]
        first = np.ones(len(order), bool)
        first[1:] = key[1:] != key[:-1]
        live_before = np.empty(len(order), bool)
        live_before[first] = self.stored_at[key[first]] >= 0
        later = ~first
        live_before[later] = op[np.flatnonzero(later) - 1] != DELETE
        bad = np.where(op == INSERT, live_before, ~live_before)
        # a snapshot row replaces a live row of its key; one of the stored rows: left to the replay
        bad[op == SNAPSHOT] = self.stored_at[key[op == SNAPSHOT]] >= 0
        out = np.zeros(len(order), bool)
        out[order] = bad
        return out


def _unconvertible(target: Target, entries: ImageEntries, n: int, row_schema: pa.Schema) -> np.ndarray:
    """Changes holding a value that does not convert, or a JSON diff."""
    out = np.zeros(n, bool)
    for k, column in enumerate(target.columns):
        if (entries.column == k).any():
            cv = entries.values(k, row_schema.field(column.name).type)
            out[entries.parent[cv.at[cv.bad | cv.partial]]] = True
    return out


class _Assembly:
    """The folded rows: each row identity (a stored row, or one insert of a key, until its
    delete) is an `incarnation`; its last change gives its lineage and whether it is alive."""

    def __init__(self, target: Target, changes: pa.Table, stored: pa.Table, row_schema: pa.Schema,
                 plan: _KeyPlan):
        self.target, self.changes, self.stored, self.row_schema, self.plan = (target, changes, stored,
                                                                              row_schema, plan)
        folded = np.flatnonzero(plan.folds)
        self.work = folded[np.argsort(plan.key_of[folded], kind="stable")]  # by key, then commit order
        self.position = np.full(changes.num_rows, -1, np.int64)  # change -> working position, -1: replayed
        self.position[self.work] = np.arange(len(self.work))
        key = plan.key_of[self.work]
        op = plan.ops[self.work]
        starts = np.isin(op, NEW_ROW)
        starts[0:1] = True
        starts[1:] |= key[1:] != key[:-1]
        self.inc = np.cumsum(starts) - 1  # working position -> incarnation
        self.first = np.flatnonzero(starts)  # incarnation -> its first working position
        self.last = np.append(self.first[1:] - 1, len(self.work) - 1)
        self.from_insert = np.isin(op[self.first], NEW_ROW)
        replaced = np.zeros(len(self.first), bool)  # by the next snapshot row of the key
        replaced[:-1] = (key[self.first[1:]] == key[self.first[:-1]]) & (op[self.first[1:]] == SNAPSHOT)
        self.alive = (op[self.last] != DELETE) & ~replaced
        self.stored_row = plan.stored_at[key[self.first]]
        self.commit_ts = changes.column("commit_ts").to_numpy()

    def folded(self) -> Folded:
        row_ids = self._row_ids()
        alive, gone = np.flatnonzero(self.alive), np.flatnonzero(~self.alive & ~self.from_insert)
        lineage = self._lineage(self.work[self.last])
        upsert_columns = self._values(alive)
        upserts = pa.Table.from_arrays(
            [*upsert_columns, pa.array([row_ids[i] for i in alive], pa.string()), lineage.take(alive)],
            schema=self.row_schema)
        deletes = pa.Table.from_arrays(
            [pa.array([row_ids[i] for i in gone], pa.string()), lineage.take(gone)],
            schema=_deletes_schema(self.row_schema))
        rest = np.flatnonzero(~self.plan.folds)
        rest_stored = self.plan.stored_at[self.plan.unsafe]
        return Folded(upserts, deletes, self._log(row_ids), rest, np.sort(rest_stored[rest_stored >= 0]))

    def _row_ids(self) -> list[str]:
        stored_ids = self.stored.column(ROW_ID_COLUMN).to_pylist()
        at = self.work[self.first]
        source, trx, seq = (self.changes.column(c).take(pa.array(at, pa.int64())).to_pylist()
                            for c in ("source", "trx_id", "change_seq"))
        new = iter(make_row_ids(*(np.array(v, dtype=object)[self.from_insert].tolist()
                                  for v in (source, trx, seq))))
        return [next(new) if ins else stored_ids[r]
                for ins, r in zip(self.from_insert.tolist(), self.stored_row.tolist())]

    def _lineage(self, rows: np.ndarray) -> pa.StructArray:
        kind = self.row_schema.field(LINEAGE_COLUMN).type
        taken = self.changes.take(pa.array(rows, pa.int64()))
        arrays = []
        for field in kind:
            column = taken.column(LINEAGE_FROM.get(field.name, field.name)).combine_chunks()
            arrays.append(column.cast(field.type))
        return pa.StructArray.from_arrays(arrays, fields=list(kind))

    def _values(self, incs: np.ndarray) -> list[pa.Array]:
        """Each target column's values of the incarnations `incs`."""
        return [self._column(k, incs) for k in range(len(self.target.columns))]

    def _column(self, k: int, incs: np.ndarray) -> pa.Array:
        column = self.target.columns[k]
        kind = self.row_schema.field(column.name).type
        cv = self.plan.after.values(k, kind)
        winner = self._winners(cv)[incs]  # entry of cv (or -1) giving each incarnation's value
        stored = self.stored.column(column.name).cast(kind).combine_chunks()
        extra: list[Any] = []
        index = np.empty(len(incs), np.int64)
        base = len(cv.values) + len(stored)
        for j, (i, w) in enumerate(zip(incs.tolist(), winner.tolist())):
            if w >= 0 and not (cv.sql_null[w] and not column.nullable):
                index[j] = w
            elif w < 0 and not self.from_insert[i]:
                index[j] = len(cv.values) + self.stored_row[i]
            else:  # an insert's absent column, or NULL for NOT NULL: the default at that change
                at = self.plan.after.parent[cv.at[w]] if w >= 0 else self.work[self.first[i]]
                index[j] = base + len(extra)
                extra.append(values.fill_value(column, to_utc_naive(int(self.commit_ts[at]))))
        pool = pa.concat_arrays([cv.values, stored, pa.array(extra, kind)])
        return pool.take(pa.array(index, pa.int64()))

    def _winners(self, cv: ColumnValues) -> np.ndarray:
        """Incarnation -> its last entry of the column in the working order (-1: none)."""
        pos = self.position[self.plan.after.parent[cv.at]]
        entries = np.flatnonzero(pos >= 0)
        winners = np.full(len(self.first), -1, np.int64)
        if len(entries):
            order = entries[np.argsort(pos[entries], kind="stable")][::-1]  # last first (image order kept)
            incs, first = np.unique(self.inc[pos[order]], return_index=True)
            winners[incs] = order[first]
        return winners

    def _log(self, row_ids: list[str]) -> FoldedLog:
        at = np.sort(self.work)  # commit order
        incs = self.inc[self.position[at]]
        key_text = [{c: canonical_text(v) for c, v in zip(self.target.primary_key, kv)}
                    for kv in self.plan.keys]
        key_of = self.plan.key_of
        return FoldedLog(at, [row_ids[i] for i in incs.tolist()], [key_text[key_of[c]] for c in at.tolist()])

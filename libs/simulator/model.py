"""The master's tables in memory (the reference model): what a real server would hold after
the statements it committed. Rows are dicts {ordinal: codec value}; a transaction keeps an undo
log so ROLLBACK restores transactional tables (non-transactional engines keep their changes).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from libs.simulator.schema import Table


class DuplicateKey(Exception):
    """ER_DUP_ENTRY (1062): the statement would violate a PK/UK."""


@dataclass
class TableState:
    table: Table
    rows: dict[int, dict[int, object]] = field(default_factory=dict)  # row id -> row
    next_autoinc: int = 1


class ReferenceModel:
    def __init__(self, tables: list[Table]):
        self.tables: dict[str, TableState] = {t.name: TableState(t) for t in tables}
        self._next_row_id = 1
        self._undo: list | None = None  # None: no open transaction

    # ---- reads ----------------------------------------------------------------------------

    def table(self, name: str) -> Table:
        return self.tables[name].table

    def rows(self, name: str) -> list[tuple[int, dict[int, object]]]:
        return list(self.tables[name].rows.items())

    def matching(self, name: str, where: dict[int, object]) -> list[int]:
        """Row ids whose columns equal `where` (None matches SQL `IS NULL`)."""
        return [rid for rid, row in self.tables[name].rows.items()
                if all(row[i] == v if v is not None else row[i] is None for i, v in where.items())]

    def key_taken(self, name: str, row: dict[int, object], ignore: int | None = None) -> bool:
        state = self.tables[name]
        for key in state.table.unique_sets():
            values = tuple(row[i] for i in key)
            if any(v is None for v in values):
                continue  # a UNIQUE index allows several NULLs
            for rid, other in state.rows.items():
                if rid != ignore and tuple(other[i] for i in key) == values:
                    return True
        return False

    # ---- transactions ---------------------------------------------------------------------

    def begin(self) -> None:
        self._undo = []

    def commit(self) -> None:
        self._undo = None

    def rollback(self) -> None:
        for undo in reversed(self._undo or []):
            undo()
        self._undo = None

    def _record(self, state: TableState, undo) -> None:
        if self._undo is not None and state.table.transactional:
            self._undo.append(undo)

    # ---- writes (each returns the full rows it changed, for the row images) ------------------

    def insert(self, name: str, specified: dict[int, object]) -> dict[int, object]:
        """INSERT one row naming `specified` columns; the others take the master's DEFAULT,
        the AUTO_INCREMENT column the next value when omitted or NULL."""
        state = self.tables[name]
        t = state.table
        row = {i: (specified[i] if i in specified else c.implicit_default)
               for i, c in enumerate(t.columns)}
        ai = t.autoinc
        if ai is not None:
            if row[ai] is None:
                row[ai] = state.next_autoinc
            state.next_autoinc = max(state.next_autoinc, row[ai] + 1)
        if self.key_taken(name, row):
            raise DuplicateKey(f"duplicate key in {name}: {row}")
        if not t.stores_rows:
            return row
        rid = self._next_row_id
        self._next_row_id += 1
        state.rows[rid] = row
        self._record(state, lambda: state.rows.pop(rid))
        return dict(row)

    def update(self, name: str, rid: int, assignments: dict[int, object]):
        state = self.tables[name]
        before = state.rows[rid]
        after = {**before, **assignments}
        if self.key_taken(name, after, ignore=rid):
            raise DuplicateKey(f"duplicate key in {name}: {after}")
        state.rows[rid] = after
        self._record(state, lambda: state.rows.__setitem__(rid, before))
        return dict(before), dict(after)

    def delete(self, name: str, rid: int) -> dict[int, object]:
        state = self.tables[name]
        before = state.rows.pop(rid)
        self._record(state, lambda: state.rows.__setitem__(rid, before))
        return dict(before)

    # ---- DDL (implicitly commits, like the server) -------------------------------------------

    def alter(self, name: str, new_table: Table, fill: dict[int, object] | None = None,
              drop: int | None = None) -> None:
        """Replace the definition: `fill` adds columns (ordinal -> value for existing rows),
        `drop` removes one column."""
        state = self.tables[name]
        for rid, row in state.rows.items():
            values = [row[i] for i in sorted(row) if i != drop]
            if fill:
                for i in sorted(fill):
                    values.insert(i, fill[i])
            state.rows[rid] = dict(enumerate(values))
        state.table = new_table

    def truncate(self, name: str) -> None:
        self.tables[name].rows.clear()
        self.tables[name].next_autoinc = 1  # InnoDB TRUNCATE restarts AUTO_INCREMENT

"""Which source tables have a snapshot, where, and with which schema: what the apply stage keeps
of the snapshot `table` records (persisted in `_cdc_source_schemas`, pipelines/apply/source_schemas.py).

Two uses:
  * rule 2 of libs/snapshot/protocol.py: a binlog change at or before its table's latest snapshot
    position is already in the snapshot rows (`is_superseded`);
  * targets derived from the source: the table's SHOW CREATE TABLE becomes its declaration when
    none is declared (`derived_ddl`; a declaration always wins: README "Onboarding").
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Iterable

from libs.contracts.sql_names import quote_identifier
from libs.targets.ddl import TableDDL, parse_ddl

from libs.contracts.change import Change, Op

from libs.snapshot.protocol import superseded
from libs.contracts.position import BinlogPosition

SNAPSHOT_OPS = frozenset({Op.SNAPSHOT, Op.TRUNCATE})


@dataclass(frozen=True)
class SnapshotTable:
    source: str
    database: str
    table: str
    snapshot_id: str
    position: BinlogPosition
    create_table: str

    @classmethod
    def of_change(cls, change: Change) -> "SnapshotTable":
        """From a snapshot `truncate` change record (libs/snapshot/changes.py)."""
        return cls(change.source, change.database, change.table, change.trx_id,
                   BinlogPosition(change.trx_file, int(change.trx_end_pos)), change.statement)


class SnapshotTables:
    """The latest snapshot of each (source, database, table)."""

    def __init__(self, tables: Iterable[SnapshotTable] = ()):
        self._latest: dict[tuple[str, str, str], SnapshotTable] = {}
        self.add(tables)

    def add(self, tables: Iterable[SnapshotTable]) -> bool:
        """True when a table's latest snapshot changed (a record kept already changes nothing)."""
        changed = False
        for t in tables:
            key = (t.source, t.database, t.table)
            old = self._latest.get(key)
            if old != t and (old is None or t.position.key() >= old.position.key()):
                self._latest[key] = t
                changed = True
        return changed

    def __len__(self) -> int:
        return len(self._latest)

    def all(self) -> tuple[SnapshotTable, ...]:
        return tuple(self._latest.values())

    def get(self, source: str, database: str, table: str) -> SnapshotTable | None:
        return self._latest.get((source, database, table))

    def positions(self, database: str, table: str) -> dict[str, BinlogPosition]:
        """source -> the position of the table's latest snapshot from it (is_superseded's rule,
        for a replay away from here: pipelines/apply/executor_replay.py)."""
        return {s: t.position for (s, d, n), t in self._latest.items() if (d, n) == (database, table)}

    def is_superseded(self, change: Change) -> bool:
        """A binlog change already in its table's snapshot rows (protocol.py rule 2)."""
        if change.op in SNAPSHOT_OPS:
            return False
        latest = self._latest.get((change.source, change.database, change.table))
        if latest is None:
            return False
        return superseded(latest.position, BinlogPosition(change.trx_file, int(change.trx_end_pos)))

    def derived_ddl(self, declared: Iterable[tuple[str, str]] = ()) -> list[TableDDL]:
        """The source schema of every snapshot table not declared by hand (one per table: a
        table read from several sources takes the first source's schema)."""
        skip = set(declared)
        out: dict[tuple[str, str], TableDDL] = {}
        for t in self._latest.values():
            name = (t.database, t.table)
            if name in skip or name in out:
                continue
            out[name] = _source_ddl(t)
        return list(out.values())


@lru_cache(maxsize=4096)
def _source_ddl(table: SnapshotTable) -> TableDDL:
    """The table's SHOW CREATE TABLE parsed, once per record: the catalog is rebuilt from every
    kept table whenever a new one arrives."""
    (ddl,) = parse_ddl(f"USE {quote_identifier(table.database)};\n{table.create_table}",
                       f"SHOW CREATE TABLE of {table.database}."
                       f"{table.table} (source {table.source}, snapshot at {table.position})")
    return ddl


def since_last_truncate(changes: list[Change]) -> list[Change]:
    """A table's changes (commit order) from its last truncate on: a snapshot starts the table
    anew, so what came before is in neither the old rows nor the new ones."""
    last = max((i for i, c in enumerate(changes) if c.op == Op.TRUNCATE), default=0)
    return changes[last:]

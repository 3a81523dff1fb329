"""What a replica's declaration knows about its source tables that the binlog may not say.

A binlog written with `binlog_row_metadata=NO_LOG` (MariaDB's default; MySQL's MINIMAL logs a
part) carries only each column's storage type: not whether an integer is UNSIGNED, not a
string's charset, not the labels of an ENUM or SET, not that a BINARY(16) is a MariaDB UUID.
The declaration (or the source's DDL) does: a replica reads its rows with its own table
definition (WL#5092 "Tm and Ts"). Precedence, most precise first: the Table_map's optional
metadata, then the declaration, then the bare type (rows.py, change_records.py apply it).

Source columns map to declared columns by libs/targets/model.Target.column_for_source, the same
rule the replay uses, so a value is never read with another column's type.

Where the job knows the source table's own schema at a row's position (the schema history,
libs/schema_history: a snapshot's SHOW CREATE TABLE, then every DDL of the stream), that version's
row layout comes before the declaration: it names each ordinal of a Table_map without names and
says how to read it, and a row image that does not fit it is refused (issue #17 item 2).
"""
from __future__ import annotations

from bisect import bisect_left, bisect_right
from functools import cached_property
from typing import Iterable, Mapping, Protocol, Sequence

from libs.contracts.position import position_key
from libs.targets.column_hint import ColumnHint, hint_of
from libs.targets.model import Column, Target



class RowLayout(Protocol):
    """One table version as its row images are logged: what decoding reads of the schema
    history's layouts (libs/schema_history/row_layout.py builds them)."""

    names: tuple[str, ...]
    hints: tuple[ColumnHint, ...]
    unsigned: frozenset[int]
    old_temporal_fsp: tuple[tuple[int, int], ...]

    def mismatch(self, column_types: Sequence[int]) -> str | None: ...


class RowImageMismatch(ValueError):
    """A row image that does not fit the table's version at its position (quarantined)."""

    kind = "schema_mismatch"  # libs/config/bad_input.py: follows bad_input_policy

# Old (MariaDB 5.3 / MySQL 5.5) temporal types log no fsp in the Table_map (rows.py).
_FSP_FAMILIES = frozenset({"time", "datetime", "timestamp"})


class DecodeHints:
    """Per source table: what to read as UNSIGNED, with which fsp, charset and labels.
    Picklable (the rows stage ships it to every executor); built again when the targets or the
    schema history change."""

    def __init__(self, targets: Iterable[Target] = (),
                 layouts: Mapping[tuple[str, str, str], Sequence[tuple[tuple, "RowLayout | None"]]] = {}):
        """`layouts`: per (source, database, table), its versions' row layouts in position order
        as (position key, layout; None where the table does not exist or its schema is not
        readable), from the schema history."""
        self._targets = {(t.database, t.table): t for t in targets}
        self._layouts = {key: (tuple(k for k, _ in versions), tuple(v for _, v in versions))
                         for key, versions in layouts.items() if versions}
        boundaries: dict[str, set[tuple]] = {}
        for (source, _db, _table), (keys, _) in self._layouts.items():
            boundaries.setdefault(source, set()).update(keys)
        self._boundaries = {s: tuple(sorted(keys)) for s, keys in boundaries.items()}  # per source, sorted
        self._overrides: dict[tuple[str, int], tuple[dict, dict]] = {}

    def target(self, database: str, table: str) -> Target | None:
        return self._targets.get((database, table))

    @cached_property
    def unsigned_overrides(self) -> dict[tuple[str, str], frozenset[int]]:
        """DecodeContext.unsigned_overrides: source ordinals of UNSIGNED columns, mapped without
        column names (only a Table_map without SIGNEDNESS, hence without names, uses them)."""
        out = {}
        for key, target in self._targets.items():
            ordinals = frozenset(i for i, c in self._positional(target) if c.unsigned)
            if ordinals:
                out[key] = ordinals
        return out

    @cached_property
    def old_temporal_fsp(self) -> dict[tuple[str, str], dict[int, int]]:
        """DecodeContext.old_temporal_fsp: the declared fsp of TIME/DATETIME/TIMESTAMP(n)."""
        out = {}
        for key, target in self._targets.items():
            fsp = {i: c.fsp for i, c in self._positional(target) if c.family in _FSP_FAMILIES and c.fsp}
            if fsp:
                out[key] = fsp
        return out

    # -- the schema history's row layouts --------------------------------------------------------
    def layout_at(self, source: str, database: str, table: str, file: str, pos: int) -> "RowLayout | None":
        """The row layout of the table's version in force at a row logged at file:pos (the
        last version strictly before it); None when the history does not know the table there."""
        found = self._layouts.get((source, database, table))
        if found is None:
            return None
        keys, layouts = found
        index = bisect_left(keys, position_key(file, pos)) - 1
        return layouts[index] if index >= 0 else None

    def versioned(self, source: str) -> bool:
        return source in self._boundaries

    def span(self, source: str, file: str, pos: int) -> int:
        """How many versions of a versioned source start before file:pos (equal spans: the
        same versions are in force)."""
        return bisect_left(self._boundaries[source], position_key(file, pos))

    def overrides_at(self, source: str, file: str, pos: int) -> tuple[dict, dict]:
        """(DecodeContext.unsigned_overrides, .old_temporal_fsp) for an event at file:pos of a
        versioned source: the declarations' ordinals, replaced by the layout in force for every
        table the history knows there. One pair per span between two versions, cached."""
        boundaries = self._boundaries[source]
        span = self.span(source, file, pos)
        hit = self._overrides.get((source, span))
        if hit is None:
            unsigned, fsp = dict(self.unsigned_overrides), dict(self.old_temporal_fsp)
            last = boundaries[span - 1] if span else None  # the last version before the event
            for (s, database, table), (keys, layouts) in self._layouts.items():
                index = bisect_right(keys, last) - 1 if s == source and last is not None else -1
                if index >= 0 and layouts[index] is not None:
                    unsigned[(database, table)] = layouts[index].unsigned
                    fsp[(database, table)] = dict(layouts[index].old_temporal_fsp)
            hit = self._overrides[(source, span)] = (unsigned, fsp)
        return hit

    @staticmethod
    def _positional(target: Target) -> Iterable[tuple[int, Column]]:
        for ordinal in range(target.source_column_count):
            column = target.column_for_source(ordinal)
            if column is not None:
                yield ordinal, column

    def image_hints(self, database: str, table: str, names: tuple[str, ...] | None,
                    column_count: int) -> tuple[ColumnHint | None, ...] | None:
        """Per source ordinal, the declared column's hint (None where the target lacks the
        column); None when the table is not declared."""
        target = self._targets.get((database, table))
        if target is None:
            return None
        cache = self.__dict__.setdefault("_image_cache", {})
        key = (database, table, names, column_count)
        hit = cache.get(key)
        if hit is None:
            hit = cache[key] = tuple(
                _hint_or_none(target.column_for_source(i, names[i] if names and i < len(names) else None))
                for i in range(column_count))
        return hit


def _hint_or_none(column: Column | None) -> ColumnHint | None:
    return hint_of(column) if column is not None else None

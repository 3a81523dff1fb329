"""What a replica's declaration knows about its source tables that the binlog may not say.

A binlog written with `binlog_row_metadata=NO_LOG` (MariaDB's default; MySQL's MINIMAL logs a
part) carries only each column's storage type: not whether an integer is UNSIGNED, not a
string's charset, not the labels of an ENUM or SET, not that a BINARY(16) is a MariaDB UUID.
The declaration (or the source's DDL) does: a replica reads its rows with its own table
definition (WL#5092 "Tm and Ts"). Precedence, most precise first: the Table_map's optional
metadata, then the declaration, then the bare type (rows.py, change_records.py apply it).

Source columns map to declared columns by libs/targets/model.Target.column_for_source, the same
rule the replay uses, so a value is never read with another column's type.
"""
from __future__ import annotations

from functools import cached_property
from typing import Iterable, NamedTuple

from libs.targets.model import Column, Target

# Old (MariaDB 5.3 / MySQL 5.5) temporal types log no fsp in the Table_map (rows.py).
_FSP_FAMILIES = frozenset({"time", "datetime", "timestamp"})


class ColumnHint(NamedTuple):
    """How to read one source column's value when the Table_map does not say."""

    family: str
    """The declared column's value family (libs/targets/types.py)."""
    charset: str | None
    """Declared charset of a character column; None for bytes and non-character types."""
    labels: tuple[str, ...]
    """ENUM / SET member labels in declaration order."""


def hint_of(column: Column) -> ColumnHint:
    return ColumnHint(column.family, column.charset, column.enum_values)


class DecodeHints:
    """Per source table: what to read as UNSIGNED, with which fsp, charset and labels.
    Picklable (the rows stage ships it to every executor); built once per job."""

    def __init__(self, targets: Iterable[Target] = ()):
        self._targets = {(t.database, t.table): t for t in targets}

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

"""How to read one source column's value when the Table_map does not say (a binlog written with
binlog_row_metadata=NO_LOG or MINIMAL: libs/targets/decoding.py). Both a declaration's column
(decoding.DecodeHints) and a schema history version's column (libs/schema_history/row_layout.py)
give one; the rows stage reads a value with it."""
from __future__ import annotations

from typing import NamedTuple

from libs.targets.model import Column


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

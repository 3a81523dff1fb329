"""Row images -> target columns: which target column each present ColumnValue feeds.

A ColumnValue is mapped by name when a name is known (ColumnValue.name from Table_map
column-name metadata, else Target.source_column_names[ordinal]) and by ordinal otherwise,
as a replica does (rpl_record.cc: unpack_row_with_column_info vs positional unpack_row).
Source columns the target lacks are ignored (extra master columns); target columns no image
carries take their defaults on insert (extra slave columns, WL#5092 DEFAULT VALUES R1.1).
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from libs.targets.model import Column, Target
from libs.targets import values


def target_column_of(target: Target, column_value: Mapping[str, Any]) -> str | None:
    """Target column name fed by this ColumnValue, or None when the target has no such column."""
    column = target.column_for_source(column_value["ordinal"], column_value.get("name"))
    return column.name if column is not None else None


def present_columns(target: Target, image: Sequence[Mapping[str, Any]] | None
                    ) -> dict[str, tuple[Column, Mapping[str, Any]]]:
    """Target column name -> (the column, its ColumnValue), for the columns present in an image."""
    present: dict[str, tuple[Column, Mapping[str, Any]]] = {}
    for column_value in image or ():
        column = target.column_for_source(column_value["ordinal"], column_value.get("name"))
        if column is not None:
            present[column.name] = (column, column_value)
    return present


def typed_columns(target: Target, image: Sequence[Mapping[str, Any]] | None) -> dict[str, Any]:
    """Target column name -> its Python value, for the columns present in an image (raises
    values.ValueConversionError)."""
    return {name: values.from_column_value(column, cv.get("text"), cv.get("binary"))
            for name, (column, cv) in present_columns(target, image).items()}


def typed_value(target: Target, name: str, column_value: Mapping[str, Any]) -> Any:
    """Python value of a present column (raises values.ValueConversionError)."""
    return values.from_column_value(target.column(name), column_value.get("text"), column_value.get("binary"))


def typed_key(key: Sequence[str], present: Mapping[str, tuple[Column, Mapping[str, Any]]]) -> tuple | None:
    """The typed values of `key` in an image's present_columns (only those columns typed); None
    when a key column is absent, NULL or does not convert (the replay then stops or quarantines
    the change with its position, wherever it runs)."""
    if not all(c in present for c in key):
        return None
    try:
        kv = tuple(values.from_column_value(column, cv.get("text"), cv.get("binary"))
                   for column, cv in (present[c] for c in key))
    except values.ValueConversionError:
        return None
    return None if any(v is None for v in kv) else kv

"""A target table's Delta columns carried to its new schema (issue #17 item 3), no Spark.

When a batch changes a followed table's schema (libs/schema_history/target_schemas.py), the
Delta table is rewritten once, before the batch's rows, into the schema in force at the batch's
end (pipelines/apply/schema_changes.py). Each new column comes from one Delta column or is new:
  * a column kept or renamed (column_identity.EndNames of the batch's start) keeps its values,
    cast when MODIFY widened its type (the server converts the same way: an INT read as BIGINT
    is the same number); a type change Delta cannot follow value for value stops the batch;
  * a column the batch added holds, in every row that existed, what the server gave those rows
    at ALTER TABLE ... ADD: its DEFAULT as that ALTER defined it (a later SET DEFAULT or MODIFY
    of the batch changes only the rows after it), the ALTER's time for DEFAULT
    CURRENT_TIMESTAMP, else NULL or the type's implicit default (values.fill_value;
    rpl_record.cc prepare_record);
  * a Delta column no new column comes from is dropped.
A column the server computes for every row (GENERATED ALWAYS AS, AUTO_INCREMENT) added to a
table with rows stops the batch: the values the ALTER gave the rows that existed are in no
binlog event, and a DEFAULT in their place would be a wrong value no reader could tell
(`unknown_fills`).
"""
from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from libs.schema_history.column_identity import EndNames
from libs.targets.model import Column, Target
from libs.targets.values import fill_value

_INTEGERS = ("tinyint", "smallint", "int", "bigint")
_DECIMAL = re.compile(r"^decimal\((\d+),(\d+)\)$")


class SchemaEvolutionError(ValueError):
    """The Delta table cannot be carried to the new schema value for value."""

    def __init__(self, message: str, computed: bool = False):
        super().__init__(message)
        self.computed = computed  # an added column's values only the server knows (unknown_fills)


@dataclass(frozen=True)
class AddedColumn:
    """A column as ALTER TABLE ... ADD gave it to the rows that existed then."""

    column: Column | None  # its definition at the ADD; None: the target's (a declared replica-side one)
    at: dt.datetime  # the ALTER's commit time (DEFAULT CURRENT_TIMESTAMP)


@dataclass(frozen=True)
class NewColumn:
    name: str
    spark_type: str
    source: str | None  # the Delta column its values come from; None: a new column
    cast: bool = False  # the Delta column's type differs (a widening)
    fill: Any = None  # a new column's value in every existing row


def type_key(spark_type: str) -> str:
    """A Spark type string as compared here: 'DECIMAL(10, 2)' and 'decimal(10,2)' are one type."""
    return spark_type.replace(" ", "").lower()


def widens(old: str, new: str) -> bool:
    """Does every value of Spark type `old` convert to `new` as the server converts it?"""
    old, new = type_key(old), type_key(new)
    if old == new:
        return True
    if old in _INTEGERS:
        if new in _INTEGERS:
            return _INTEGERS.index(new) > _INTEGERS.index(old)
        digits = {"tinyint": 3, "smallint": 5, "int": 10, "bigint": 19}[old]
        decimal = _DECIMAL.match(new)
        return (new in ("double", "string")
                or (decimal is not None and int(decimal[1]) - int(decimal[2]) >= digits))
    old_decimal, new_decimal = _DECIMAL.match(old), _DECIMAL.match(new)
    if old_decimal and new_decimal:
        (p, s), (p2, s2) = map(int, old_decimal.groups()), map(int, new_decimal.groups())
        return s2 >= s and p2 - s2 >= p - s
    return (old, new) in (("float", "double"), ("date", "timestamp_ntz"))


def evolution(delta_columns: Sequence[tuple[str, str]], target: Target, start: EndNames,
              added_at: dt.datetime, where: str,
              added: Mapping[str, AddedColumn] | None = None) -> list[NewColumn] | None:
    """The target's columns, each from its Delta column (`delta_columns`: (name, Spark type)
    of the table's data columns, `_row_id` and `_lineage` left out) or new. None when the Delta
    table already has the target's columns. `start`: what each Delta column's name is at the
    batch's end; `added`: the batch's ADD COLUMN of each new column (by its folded end name);
    `added_at`: the time of the batch's last DDL of the table, for a new column without one;
    `where` names the table and DDL in an error."""
    added = added or {}
    from_delta: dict[str, tuple[str, str]] = {}
    for name, spark_type in delta_columns:
        end = start.end(name)
        if end is not None:
            from_delta[end.lower()] = (name, spark_type)
    out = []
    for column in target.columns:
        found = from_delta.get(column.name.lower())
        if found is None:
            at_add = added.get(column.name.lower(), AddedColumn(None, added_at))
            out.append(NewColumn(column.name, column.spark_type, None,
                                 fill=fill_value(at_add.column or column, at_add.at)))
            continue
        name, spark_type = found
        if not widens(spark_type, column.spark_type):
            raise SchemaEvolutionError(
                f"{where}: column {column.name!r} changes from {spark_type.upper()} to "
                f"{column.spark_type.upper()} ({column.mysql_type}), which Delta cannot follow "
                "value for value")
        out.append(NewColumn(column.name, column.spark_type, name,
                             cast=type_key(spark_type) != type_key(column.spark_type)))
    unchanged = [(c.source, c.cast) for c in out] == [(name, False) for name, _ in delta_columns]
    return None if unchanged and all(c.name == c.source for c in out) else out


def converted_by_server(old: Column, new: Column) -> bool:
    """Does a MODIFY from `old` to `new` change values that Delta keeps as they were (the Spark
    type is the same or casts without the server's rule)? INT -> YEAR (5 reads as 2005),
    VARCHAR -> CHAR (trailing spaces dropped), a string -> ENUM / SET (a value not a member: '')."""
    if new.family in ("year", "enum", "set") and old.family != new.family:
        return True
    fixed = lambda c: c.family == "string" and c.mysql_type.upper().startswith(("CHAR", "NCHAR"))  # noqa: E731
    return fixed(new) and not fixed(old)


def unknown_fills(plan: Sequence[NewColumn], target: Target, where: str,
                  converted: Sequence[str] = ()) -> SchemaEvolutionError | None:
    """The error for columns whose values in the existing rows only the server knows: added ones
    it computes (GENERATED ALWAYS AS, AUTO_INCREMENT), and `converted` ones ("'a' (INT -> YEAR)",
    converted_by_server); None when there are none."""
    computed = [target.column(n.name) for n in plan if n.source is None]
    kinds = [f"{c.name!r} ({'GENERATED' if c.generated else 'AUTO_INCREMENT'})"
             for c in computed if c.generated or c.auto_increment] + list(converted)
    if not kinds:
        return None
    return SchemaEvolutionError(f"{where}: column(s) {', '.join(kinds)} hold values the server computed or "
                                f"converted for each row that existed, which no binlog event carries",
                                computed=True)

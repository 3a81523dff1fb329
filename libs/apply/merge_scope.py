"""Which stored rows a target's MERGE can match, as values of one key (DESIGN.md "Cost follows
the changes").

The replay changes or deletes only rows it read: every reader (Delta filter or join, the
driver's mirror) hands it the stored rows its lookups name, and an update or delete of a row it
did not read is a 1032 (libs/replay/engine.py). So a MERGE by `_row_id` may add "the stored
row's key is one of the keys read" to its condition without changing what it matches. Delta
takes such a target-only conjunct for data skipping (min/max statistics per file): the MERGE
scans and marks only the files whose key range holds a touched row, not the whole table.

Rows inserted by the batch are not in the scope: their `_row_id` is new, no stored row matches
it with or without the conjunct, so the insert clause sees them as before.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Mapping

from libs.targets.model import Target

# The largest key filters, here and for the touched-row read (pipelines/apply/touched_rows.py):
# an IN list of one column, or an OR of per-tuple ANDs. Beyond them the MERGE keeps its plain
# condition and the read is a join: as a filter, Delta's data-skipping expression over
# min/max/null counts outgrew whole-stage codegen (bench/apply_steady.py).
IN_LIST_MAX, OR_LIST_MAX = 5000, 16


@dataclass(frozen=True)
class MergeScope:
    """Key columns and the stored rows' values of them (each tuple fully non-NULL)."""

    columns: tuple[str, ...]
    values: frozenset[tuple]


def scope_key(target: Target) -> tuple[str, ...] | None:
    """The key whose values bound a MERGE: the PRIMARY KEY (or declared key), else the first
    NOT NULL UNIQUE key; None for a table without one (every stored row could match)."""
    keys = target.lookup_keys
    return keys[0] if keys else None


def merge_scope(target: Target, read_rows: Iterable[Mapping[str, Any]]) -> MergeScope | None:
    """The scope of a MERGE whose replay read `read_rows` (all the stored rows it was handed):
    empty when it read none (a keyless table's too); None when the MERGE must keep its
    unbounded condition: no key, a stored row without a whole key value (a declared key can be
    NULL), or more values than a filter holds."""
    read_rows = list(read_rows)
    key = scope_key(target)
    if not read_rows:  # nothing stored can match, whatever the table's keys
        return MergeScope(key or (), frozenset())
    if key is None:
        return None
    values = set()
    for row in read_rows:
        value = tuple(row.get(c) for c in key)
        if any(v is None for v in value):
            return None
        values.add(value)
    if len(values) > (IN_LIST_MAX if len(key) == 1 else OR_LIST_MAX):
        return None
    return MergeScope(key, frozenset(values))


class ReadRecorder:
    """Wraps a replay's reader (lookups -> stored rows) and keeps every row it returned: the
    rows a MERGE scope is computed from. Calls may repeat (the lookup fixed point)."""

    def __init__(self, read):
        self._read, self.rows = read, []

    def __call__(self, lookups):
        rows = list(self._read(lookups))
        self.rows.extend(rows)
        return rows

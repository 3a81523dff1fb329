"""A snapshot `rows` record larger than the topic takes (issue #38 item 6), and taking a table out
of an interrupted run (pure, no I/O).

A chunk holds one row when that row alone is over the chunk's byte budget (chunks.cut_chunks), so
a record over KafkaSink.max_event_bytes is, in practice, one row that big. The shipper cannot
send it and cannot skip it (the table's snapshot would silently lack a row), so it stops with one
line naming the table, the row, the size, the limit, how to raise the limit, and how to leave the
table out: `oversized_line`. A restart then resumes the interrupted run's remaining tables
(protocol.py rule 1); `resume_tables` leaves out those the restart's --exclude now matches.
"""
from __future__ import annotations

import re
from typing import Callable, Sequence

from libs.contracts.table_names import TableName, parse_table_key

KEY_TEXT_MAX = 80  # characters of a key value shown in the error line


def largest_row(per_column: Sequence[Sequence[bytes | None]]) -> tuple[int, int]:
    """(0-based index, bytes of values) of the chunk's largest row; `per_column` is
    chunk_values.decode's layout (list i = column i's values)."""
    sizes = [sum(len(v) for v in row if v is not None) for row in zip(*per_column)]
    index = max(range(len(sizes)), key=sizes.__getitem__)
    return index, sizes[index]


def row_label(names: Sequence[str], per_column: Sequence[Sequence[bytes | None]], index: int,
              key: Sequence[str], chunk_no: int, rows_before: int) -> str:
    """The row as an operator finds it: its primary-key value(s) `id=42`, or, for a table
    without one, its place in the SELECT's order (1-based; `rows_before`: the table's rows in the
    chunks before this one) and in its chunk."""
    at = {n.lower(): i for i, n in enumerate(names)}  # MariaDB column names are case-insensitive
    if key and all(k.lower() in at for k in key):
        parts = []
        for k in key:
            value = per_column[at[k.lower()]][index]
            text = "NULL" if value is None else value.decode("utf-8", "backslashreplace")
            parts.append(f"{k}={text if len(text) <= KEY_TEXT_MAX else text[:KEY_TEXT_MAX] + '...'}")
        return "primary key " + ", ".join(parts)
    return (f"row {rows_before + index + 1} in the SELECT's order (row {index + 1} of chunk {chunk_no}; "
            f"no primary key)")


def oversized_line(table: TableName, row: str, size: int, limit: int) -> str:
    """The error's text (SnapshotError adds source, file and position)."""
    return (f"snapshot of table {table.quoted()}: {row} makes a record of {size} bytes, over the "
            f"limit of {limit} bytes the topic takes; raise it on the broker (message.max.bytes, "
            f"the topic's max.message.bytes) and in cdc-ship (--max-event-bytes, which sets the "
            f"producer's message.max.bytes), or leave the table out: restart with --exclude "
            f"{exclude_regex(table)} (its binlog changes still flow)")


def exclude_regex(table: TableName) -> str:
    """A --exclude argument matching exactly this table's joined 'db.table', shell-quoted."""
    return "'" + re.escape(table.joined()).replace("'", "'\\''") + "'"


def resume_tables(remaining: Sequence[str], excluded: Callable[[str], bool]
                  ) -> tuple[list[str], list[TableName]]:
    """(the remaining tables of an interrupted run that the new run reads, the tables it leaves
    out): a table whose joined 'db.table' the restart's --exclude matches is left out; --include
    does not narrow the list (the run continues the interrupted one; protocol.py rule 1)."""
    kept, left_out = [], []
    for text in remaining:
        try:
            pair = parse_table_key(text)
        except ValueError:
            kept.append(text)  # not a name the filter can judge: read, as before
            continue
        if excluded(pair.joined()):
            left_out.append(pair)
        else:
            kept.append(text)
    return kept, left_out


def left_out_line(source: str, tables: Sequence[TableName]) -> str:
    names = ", ".join(t.quoted() for t in tables)
    return (f"cdc-ship {source}: snapshot: {names} left out of the interrupted run's remaining "
            f"tables (--exclude): its snapshot is abandoned, its binlog changes still flow")

"""SQL text of the simulated statements: literals and statement rendering.

The text is what Annotate_rows / Rows_query carry and what a statement-format Query event holds,
so it must be valid SQL that does exactly what the reference model did. Identifiers are
backquoted; character values are quoted with backslash escapes; binary BLOBs as x'..'.
"""
from __future__ import annotations

from decimal import Decimal

from libs.contracts.sql_names import quote_identifier

_ESCAPES = {0: "\\0", 10: "\\n", 13: "\\r", 26: "\\Z", 39: "\\'", 92: "\\\\"}


def quote_bytes(raw: bytes) -> str:
    return "'" + "".join(_ESCAPES.get(b, chr(b)) for b in raw) + "'"


def literal(column, value) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return str(int(value))
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, Decimal):
        return str(value)
    if isinstance(value, bytes):
        if column.text:
            return quote_bytes(value)
        return "x'" + value.hex().upper() + "'" if value else "''"
    return quote_bytes(str(value).encode("utf-8"))


ident = quote_identifier  # the simulator's statements quote names as every SQL text here does


def where_clause(table, where: dict[int, object]) -> str:
    parts = []
    for i, v in where.items():
        col = table.columns[i]
        parts.append(f"{ident(col.name)} IS NULL" if v is None
                     else f"{ident(col.name)} = {literal(col, v)}")
    return " AND ".join(parts) if parts else "1"


def insert_sql(table, rows: list[dict[int, object]], exprs: dict[int, str] | None = None) -> str:
    """INSERT naming the given columns (every row names the same ones). `exprs` replaces a
    column's literal by an SQL expression (e.g. UUID() for unsafe statements)."""
    exprs = exprs or {}
    cols = sorted(rows[0]) if rows else []
    names = ", ".join(ident(table.columns[i].name) for i in cols)
    values = ", ".join(
        "(" + ", ".join(exprs.get(i) or literal(table.columns[i], r[i]) for i in cols) + ")"
        for r in rows)
    return f"INSERT INTO {ident(table.name)} ({names}) VALUES {values}"


def update_sql(table, assignments: dict[int, object], where_sql: str,
               exprs: dict[int, str] | None = None) -> str:
    exprs = exprs or {}
    sets = ", ".join(f"{ident(table.columns[i].name)} = "
                     + (exprs.get(i) or literal(table.columns[i], v))
                     for i, v in assignments.items())
    return f"UPDATE {ident(table.name)} SET {sets} WHERE {where_sql}"


def delete_sql(table, where_sql: str) -> str:
    return f"DELETE FROM {ident(table.name)} WHERE {where_sql}"

"""Identifier quoting, one rule for both SQL dialects the project writes: MySQL/MariaDB (the
snapshot's SELECTs, the simulator's statements) and Spark SQL (lineage queries, the apply
stage) quote a name in backticks with inner backticks doubled."""
from __future__ import annotations


def quote_identifier(name: str) -> str:
    """`name` as one identifier: backticks around, inner backticks doubled."""
    if not isinstance(name, str) or not name:
        raise ValueError(f"an identifier must be a non-empty string, got {name!r}")
    return "`" + name.replace("`", "``") + "`"

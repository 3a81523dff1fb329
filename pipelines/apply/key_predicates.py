"""Column predicates "the key is one of these values" for the apply stage's reads of touched
rows (touched_rows.py) and its MERGE scopes (target_writes.py).

A one-column IN list of integers or strings is ONE SQL expression text: `Column.isin` makes a
py4j call per literal, which a live profile of the job on a 1,000,000-row sysbench table
measured at ~0.5 s per batch for ~1,000 keys (bench/README.md, issue #37 goal a, session 27).
Any other value type goes through `isin` (its literal rules: timestamps, decimals, bytes)."""
from __future__ import annotations

from functools import reduce
from typing import Any, Sequence

from pyspark.sql import Column, SparkSession
from pyspark.sql import functions as F

import pipelines.apply.tables as D
from libs.reads.lineage_sql import quote_identifier


def key_in(columns: Sequence[str], tuples: Sequence[Sequence[Any]], qualifier: str | None = None) -> Column:
    """The key `columns` (of the table aliased `qualifier`, if any) equal one of `tuples`: an IN
    list for one column, an OR of ANDs for several. Literals go through D.to_spark_value: a naive
    datetime is UTC here, not the driver's zone."""
    names = [f"{quote_identifier(qualifier)}.{quote_identifier(c)}" if qualifier else quote_identifier(c)
             for c in columns]
    if len(names) == 1:
        values = [t[0] for t in tuples]
        text = sql_literals(values, _escaping())
        if text is not None:
            return F.expr(f"{names[0]} IN ({text})")
        return F.col(names[0]).isin([D.to_spark_value(v) for v in values])
    return reduce(lambda a, b: a | b, (
        reduce(lambda a, b: a & b, (F.col(n) == F.lit(D.to_spark_value(v)) for n, v in zip(names, t)))
        for t in tuples))


def sql_literals(values: Sequence[Any], escaping: bool = True) -> str | None:
    """`values` as Spark SQL literals joined by ', ', or None unless every one is an int or a
    str (a bool is not an int here). A string literal escapes its backslashes and quotes, as
    Spark reads literals by default; `escaping` False (spark.sql.parser.escapedStringLiterals
    on: a backslash is itself) leaves a string holding either to `isin`."""
    if not values or not all(type(v) in (int, str) for v in values):
        return None
    if not escaping and any(type(v) is str and ("\\" in v or "'" in v) for v in values):
        return None
    return ", ".join(str(v) if type(v) is int else _string_literal(v) if escaping else f"'{v}'"
                     for v in values)


def _escaping() -> bool:
    """Whether the active session reads backslash escapes in SQL string literals."""
    spark = SparkSession.getActiveSession()
    return (spark is None
            or spark.conf.get("spark.sql.parser.escapedStringLiterals", "false").lower() != "true")


def _string_literal(value: str) -> str:
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"

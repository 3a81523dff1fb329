"""Is a Delta target equal to the server's table? Both read as multisets of normalised rows.

Normalisation (`normalise`), applied to both sides, value by value:
  * bytes-like (PyMySQL BLOB -> bytes, Spark BinaryType -> bytearray) -> bytes;
  * DATETIME: PyMySQL gives a naive datetime; the Delta TIMESTAMP holds that wall time as UTC
    (libs/targets/types.py) and is read as epoch microseconds (`unix_micros`, no session time
    zone involved) -> naive datetime;
  * DECIMAL stays decimal.Decimal (1.50 == 1.5 and they hash alike), DOUBLE stays float (exact:
    both sides are IEEE binary64), INT stays int, VARCHAR/TEXT stay str; NULL stays None.
Rows are then compared as multisets (collections.Counter of tuples in the server's column
order), which keeps identical rows of the keyless table apart by count.
"""
from __future__ import annotations

import collections
import datetime as dt
from decimal import Decimal

from pyspark.sql import functions as F
from pyspark.sql import types as T

EPOCH = dt.datetime(1970, 1, 1)


def normalise(value):
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    if value is None or isinstance(value, (int, float, str, Decimal, dt.datetime)):
        return value
    raise TypeError(f"no normalisation for {type(value).__name__} {value!r}")


def server_rows(db, database: str, table: str) -> tuple[list[str], collections.Counter]:
    """Column names (server order) and the multiset of normalised rows of `SELECT *`."""
    conn = db.connect()
    try:
        with conn.cursor() as cur:
            cur.execute(f"SELECT * FROM `{database}`.`{table}`")
            columns = [d[0] for d in cur.description]
            rows = collections.Counter(tuple(normalise(v) for v in row) for row in cur.fetchall())
    finally:
        conn.close()
    return columns, rows


def delta_rows(spark, path: str, columns: list[str]) -> collections.Counter:
    """Multiset of normalised rows of a Delta target table, `columns` in that order."""
    table = spark.read.format("delta").load(path)
    kinds = {f.name: f.dataType for f in table.schema.fields}
    select = [F.unix_micros(F.col(f"`{c}`")).alias(c) if isinstance(kinds[c], T.TimestampType)
              else F.col(f"`{c}`") for c in columns]
    out: collections.Counter = collections.Counter()
    for row in table.select(*select).collect():
        out[tuple(EPOCH + dt.timedelta(microseconds=v)
                  if isinstance(kinds[c], T.TimestampType) and v is not None else normalise(v)
                  for c, v in zip(columns, row))] += 1
    return out

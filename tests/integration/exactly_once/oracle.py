"""What the source says, and the one value normalisation used to compare it with Delta.

Oracles (never hard-coded numbers):
  * row changes: the server's own decoder, `mariadb-binlog -vv`, over the server's binlog
    files: one `### INSERT INTO / UPDATE / DELETE FROM` block per row change, under the GTID of
    its transaction, with the columns of its before (WHERE) and after (SET) image;
  * table contents: `SELECT *` on the server through PyMySQL;
  * last transaction: `SELECT @@gtid_binlog_pos`.

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
import re
import subprocess
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path

ROW_EVENT = re.compile(r"^### (INSERT INTO|UPDATE|DELETE FROM) `([^`]+)`\.`([^`]+)`")
IMAGE = {"### WHERE": "before", "### SET": "after"}
COLUMN = re.compile(r"^###   @(\d+)=")
GTID_LINE = re.compile(r"\tGTID (\d+-\d+-\d+)")
OPS = {"INSERT INTO": "insert", "UPDATE": "update", "DELETE FROM": "delete"}
EPOCH = dt.datetime(1970, 1, 1)


@dataclass
class RowChange:
    """One row change as the server's decoder prints it: its transaction's GTID, the table,
    the operation and the column numbers (1-based) present in each image."""
    gtid: str
    database: str
    table: str
    op: str
    before: list[int] = field(default_factory=list)
    after: list[int] = field(default_factory=list)


def binlog_row_changes(paths: list[Path]) -> list[RowChange]:
    """Every row change in the files, in binlog order, from `mariadb-binlog -vv`."""
    done = subprocess.run(["mariadb-binlog", "-vv", *map(str, paths)], capture_output=True)
    if done.returncode != 0:
        raise RuntimeError(f"mariadb-binlog failed on {paths}: {done.stderr.decode(errors='replace')}")
    changes: list[RowChange] = []
    gtid, image = None, None
    for line in done.stdout.decode("utf-8", errors="replace").splitlines():
        found = GTID_LINE.search(line)
        if found:
            gtid, image = found.group(1), None
        elif (row := ROW_EVENT.match(line)) is not None:
            if gtid is None:
                raise AssertionError(f"row change before any GTID in {paths}: {line}")
            changes.append(RowChange(gtid, row.group(2), row.group(3), OPS[row.group(1)]))
            image = None
        elif line in IMAGE and changes:
            image = IMAGE[line]
        elif image is not None and (column := COLUMN.match(line)) is not None:
            getattr(changes[-1], image).append(int(column.group(1)))
        elif not line.startswith("###"):
            image = None
    return changes


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
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

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

"""What the source says, and the one value normalisation used to compare it with Delta.

Oracles (never hard-coded numbers):
  * row changes: the server's own decoder, `mariadb-binlog -vv`, over the server's binlog
    files: one `### INSERT INTO / UPDATE / DELETE FROM` block per row change, under the GTID of
    its transaction, with the columns of its before (WHERE) and after (SET) image;
  * table contents: `SELECT *` on the server through PyMySQL (pipelines/delta/table_equality.py);
  * last transaction: `SELECT @@gtid_binlog_pos`.

Normalisation and table contents: pipelines/delta/table_equality.py (the onboarding demo checks with them).
"""
from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from pipelines.delta.table_equality import delta_rows, normalise, server_rows  # noqa: F401 - the tests' oracle API

ROW_EVENT = re.compile(r"^### (INSERT INTO|UPDATE|DELETE FROM) `([^`]+)`\.`([^`]+)`")
IMAGE = {"### WHERE": "before", "### SET": "after"}
COLUMN = re.compile(r"^###   @(\d+)=")
GTID_LINE = re.compile(r"\tGTID (\d+-\d+-\d+)")
OPS = {"INSERT INTO": "insert", "UPDATE": "update", "DELETE FROM": "delete"}


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

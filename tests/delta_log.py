"""A Delta table's log read as files, without Spark: what tests check of every version a
reader may see (operations, txn actions, files added and removed)."""
from __future__ import annotations

import json
from pathlib import Path


def commit_actions(table_dir: str | Path) -> list[list[dict]]:
    """The actions of each JSON commit of a Delta table, in version order (not the hidden
    temporary or .crc files)."""
    return [[json.loads(line) for line in commit.read_text().splitlines() if line.strip()]
            for commit in sorted(Path(table_dir, "_delta_log").glob("[0-9]*.json"))]

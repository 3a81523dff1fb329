"""What bench/oltp_bench.py reads of the job's Delta tables, from their logs only (no Spark, so
polling costs the 2 shared cores nothing): rows, batches, positions, bytes written, sizes.

Each commit of the job belongs to a micro-batch: a target write carries Delta's txn action
(appId `cdc-replicate:<table>`, version = batch id), an append to a `_cdc_*` table a commit mark
(libs/tables/commit_marks.py). A maintenance commit (OPTIMIZE, VACUUM) carries neither.

* visible_at(batch) = the newest mtime of the batch's target commits (a reader listing the log
  sees a commit once its file exists; same machine clock as the bench), or of its
  `_cdc_progress` commit when it wrote no target;
* the position a batch reached = its `_cdc_progress` row (one row per source and batch, one file
  per append: the add's statistics are that row's values): (trx_file, trx_end_pos);
* rows of a table = the live files' numRecords minus their deletion vectors' cardinality.
"""
from __future__ import annotations

import json
import math
import os
import statistics
from dataclasses import dataclass, field
from pathlib import Path

from delta_visibility import Commit, TableLog

from libs.tables.commit_marks import parse_mark
from libs.binlog.file_names import binlog_sort_key
from libs.tables.system_tables import APP_ID, CHANGE_LOG, PROGRESS


def batch_of(commit: Commit) -> int | None:
    """The job's micro-batch a commit belongs to (None: maintenance, another writer)."""
    for app, version in commit.txn.items():
        if app.startswith(APP_ID + ":"):
            return version
    mark = parse_mark(commit.info.get("userMetadata"))
    if mark is not None and mark[0].startswith(APP_ID):
        return mark[1]
    return None


def live_files(log: TableLog) -> dict[str, dict]:
    """path -> add action of the files in the table's latest version."""
    files: dict[str, dict] = {}
    for version in sorted(log.commits):
        commit = log.commits[version]
        for path in commit.removes:
            files.pop(path, None)
        for add in commit.adds:
            files[add["path"]] = add
    return files


def live_rows(log: TableLog) -> int:
    total = 0
    for add in live_files(log).values():
        stats = json.loads(add.get("stats") or "{}")
        total += (int(stats.get("numRecords", 0))
                  - int((add.get("deletionVector") or {}).get("cardinality", 0)))
    return total


def bytes_written(log: TableLog) -> dict[int, int]:
    """version -> bytes of new data files and deletion vectors its commit wrote. A deletion
    vector put on an existing file re-adds that file's path (remove + add with the vector): only
    the vector was written then, not the file's size."""
    seen: set[str] = set()
    out: dict[int, int] = {}
    for version in sorted(log.commits):
        total = 0
        for add in log.commits[version].adds:
            if add.get("dataChange", True) and add["path"] not in seen:
                total += int(add.get("size", 0))
            dv = add.get("deletionVector") or {}
            if add.get("dataChange", True) and dv.get("storageType") in ("u", "p"):  # a file of its own
                total += int(dv.get("sizeInBytes", 0))
            seen.add(add["path"])
        out[version] = total
    return out


def disk_size(path: Path) -> tuple[int, int, int]:
    """(data files, their bytes, _delta_log bytes) under a table's directory, live or not."""
    files = data = log = 0
    for root, _, names in os.walk(path):
        in_log = "_delta_log" in Path(root).parts
        for name in names:
            size = (Path(root) / name).stat().st_size
            if in_log:
                log += size
            elif not name.startswith("."):
                files, data = files + 1, data + size
    return files, data, log


@dataclass
class JobTables:
    """The job's target tables (name -> path) and its progress table."""

    targets: dict[str, Path]
    progress_path: Path
    logs: dict[str, TableLog] = field(init=False)

    def __post_init__(self) -> None:
        self.logs = {name: TableLog(path) for name, path in self.targets.items()}
        self.progress = TableLog(self.progress_path)
        self.change_log = TableLog(self.change_log_path)

    @classmethod
    def under(cls, delta_root: Path, database: str, tables: list[str]) -> "JobTables":
        return cls({t: delta_root / f"{database}__{t}" for t in tables}, delta_root / PROGRESS)

    @property
    def change_log_path(self) -> Path:
        return self.progress_path.parent / CHANGE_LOG

    def refresh(self) -> "JobTables":
        for log in (*self.logs.values(), self.progress, self.change_log):
            log.refresh()
        return self

    def rows(self) -> dict[str, int]:
        return {name: live_rows(log) for name, log in self.logs.items()}

    def visible_at(self) -> dict[int, float]:
        """batch id -> when its writes were all visible (see the module's doc)."""
        out: dict[int, float] = {}
        for log in self.logs.values():
            for commit in log.commits.values():
                batch = batch_of(commit)
                if batch is not None:
                    out[batch] = max(out.get(batch, 0.0), commit.mtime)
        for commit in self.progress.commits.values():
            batch = batch_of(commit)
            if batch is not None and batch not in out:
                out[batch] = commit.mtime
        return out

    def positions(self) -> dict[int, tuple]:
        """batch id -> the binlog position (sort key of file, end pos) its progress row reached."""
        file_col = self.progress.physical_name("trx_file")
        pos_col = self.progress.physical_name("trx_end_pos")
        out = {}
        for commit in self.progress.commits.values():
            batch = batch_of(commit)
            if batch is not None and file_col in commit.stats_max and pos_col in commit.stats_max:
                out[batch] = (binlog_sort_key(commit.stats_max[file_col]), int(commit.stats_max[pos_col]))
        return out

    def covered_at(self, file: str, pos: int) -> tuple[int, float] | None:
        """(batch, visible_at) of the first batch whose progress reached (file, pos); None: none yet."""
        self.refresh()
        want, visible = (binlog_sort_key(file), pos), self.visible_at()
        for batch, reached in sorted(self.positions().items()):
            if reached >= want and batch in visible:
                return batch, visible[batch]
        return None

    def batch_commits(self, first: int, last: int) -> dict[int, list[tuple[str, Commit]]]:
        """batch id -> [(table, commit)] of the targets, change log and progress, for batches first..last."""
        out: dict[int, list] = {}
        for name, log in (*self.logs.items(), (PROGRESS, self.progress), (CHANGE_LOG, self.change_log)):
            for commit in log.commits.values():
                batch = batch_of(commit)
                if batch is not None and first <= batch <= last:
                    out.setdefault(batch, []).append((name, commit))
        return out


def percentile(values: list[float], q: float) -> float:
    """The q-quantile (0..1) by the nearest-rank rule (a value that occurred)."""
    ordered = sorted(values)
    return ordered[min(len(ordered), max(1, math.ceil(q * len(ordered)))) - 1]


def median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")

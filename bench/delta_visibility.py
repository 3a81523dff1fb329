"""When did each source transaction become visible in Delta? Read from the tables' own logs
(`_delta_log/NNN.json`), without Spark and without touching the pipelines (bench/peer_debezium.py).

Both pipelines write each micro-batch's target tables with Delta's idempotent-write marker, the
`txn` action (appId, version = the micro-batch id): ours per target (`cdc-replicate:<table>`,
pipelines/delta/delta_txn.py), the peer's MERGEs the same way (bench/peer_merge_job.py). So:

* a batch is visible when the LAST of its target commits is: visible_at(batch) = the latest
  modification time of the `_delta_log` commit files that carry that batch id, over all the
  pipeline's target tables (a reader that lists the log sees the commit once its file exists;
  the file's mtime is the same machine clock as the workload's commit times);
* which transactions a batch holds: the workload's `clock` row carries the sequence number of the
  last transaction that wrote it, and every transaction writes it; a commit's `add` actions carry
  per-file statistics, so the highest `trx_seq` in the files a clock commit added is the last
  transaction of that batch (MERGE rewrites the row's file, an overwrite rewrites the table).
  Batches apply in order, so batch b holds every transaction up to upto(b) (running maximum);
* visible_at(transaction k) = visible_at of the first batch whose upto >= k.

With column mapping (ours), statistics are keyed by the column's physical name: read from the
table's schema (`delta.columnMapping.physicalName`).
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path


@dataclass(frozen=True)
class Commit:
    version: int
    mtime: float  # seconds since the epoch: when the commit file was written
    txn: dict[str, int]  # appId -> version (micro-batch id)
    stats_max: dict[str, object]  # physical column name -> max over the files this commit added
    schema_string: str | None  # metaData.schemaString when the commit changed it
    info: dict = field(default_factory=dict)  # commitInfo: operation, operationMetrics, userMetadata
    adds: tuple[dict, ...] = ()  # the add actions (path, size, stats, deletionVector, dataChange)
    removes: tuple[str, ...] = ()  # paths of the remove actions


def _read_commit(path: Path) -> Commit:
    txn, maxima, schema, info, adds, removes = {}, {}, None, {}, [], []
    for line in path.read_text().splitlines():
        if not line.strip():
            continue
        action = json.loads(line)
        if "add" in action:
            adds.append(action["add"])
        elif "remove" in action:
            removes.append(action["remove"]["path"])
        elif "commitInfo" in action:
            info = action["commitInfo"]
        if "txn" in action:
            txn[action["txn"]["appId"]] = int(action["txn"]["version"])
        elif "add" in action and action["add"].get("stats"):
            for col, value in (json.loads(action["add"]["stats"]).get("maxValues") or {}).items():
                if not isinstance(value, dict) and value is not None:
                    maxima[col] = value if col not in maxima else max(maxima[col], value)
        elif "metaData" in action:
            schema = action["metaData"].get("schemaString")
    return Commit(int(path.stem), path.stat().st_mtime, txn, maxima, schema, info, tuple(adds),
                  tuple(removes))


@dataclass
class TableLog:
    """A Delta table's commits, read incrementally (a commit file never changes once written)."""

    path: Path
    commits: dict[int, Commit] = field(default_factory=dict)

    def refresh(self) -> "TableLog":
        log = self.path / "_delta_log"
        if log.is_dir():
            for f in log.glob("*.json"):
                if f.stem.isdigit() and int(f.stem) not in self.commits:
                    try:
                        self.commits[int(f.stem)] = _read_commit(f)
                    except (OSError, ValueError):
                        pass  # being written: next refresh
        return self

    def physical_name(self, column: str) -> str:
        for version in sorted(self.commits, reverse=True):
            schema = self.commits[version].schema_string
            if schema:
                for f in json.loads(schema)["fields"]:
                    if f["name"] == column:
                        return f.get("metadata", {}).get("delta.columnMapping.physicalName", column)
                return column
        return column


@dataclass
class PipelineVisibility:
    """Visibility of one pipeline's batches over its target tables (paths), the clock table among them."""

    tables: dict[str, Path]  # table name -> Delta path
    app_id_prefix: str  # the pipeline's txn appIds start with this
    clock: str
    clock_column: str

    def __post_init__(self) -> None:
        self.logs = {name: TableLog(path) for name, path in self.tables.items()}

    def refresh(self) -> "PipelineVisibility":
        for log in self.logs.values():
            log.refresh()
        return self

    def _batch_of(self, commit: Commit) -> int | None:
        ids = [v for app, v in commit.txn.items() if app.startswith(self.app_id_prefix)]
        return ids[0] if ids else None

    def batches(self) -> list[tuple[int, float, int]]:
        """(batch id, visible_at, upto) for every batch that wrote the clock, in batch order."""
        visible: dict[int, float] = {}
        for log in self.logs.values():
            for commit in log.commits.values():
                batch = self._batch_of(commit)
                if batch is not None:
                    visible[batch] = max(visible.get(batch, 0.0), commit.mtime)
        clock = self.logs[self.clock]
        column = clock.physical_name(self.clock_column)
        upto: dict[int, int] = {}
        for commit in clock.commits.values():
            batch = self._batch_of(commit)
            if batch is not None and column in commit.stats_max:
                upto[batch] = max(upto.get(batch, 0), int(commit.stats_max[column]))
        out, high = [], 0
        for batch in sorted(upto):
            high = max(high, upto[batch])
            out.append((batch, visible[batch], high))
        return out

    def applied_through(self) -> int:
        """The last transaction this pipeline has made visible (0: none yet)."""
        done = self.refresh().batches()
        return done[-1][2] if done else 0

    def visible_at(self, seqs: list[int]) -> dict[int, float]:
        """seq -> when it became visible (seqs not yet visible are left out)."""
        done = self.refresh().batches()
        out, i = {}, 0
        for seq in sorted(seqs):
            while i < len(done) and done[i][2] < seq:
                i += 1
            if i == len(done):
                break
            out[seq] = done[i][1]
        return out

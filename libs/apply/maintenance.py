"""When the job compacts and vacuums a Delta table (DESIGN.md "Tables stay healthy unattended").

Every batch adds files: a MERGE with deletion vectors writes its changed rows as a new file and
marks the old copies in a deletion vector; each append to a `_cdc_*` table is a file. Left
alone, reads slow down with the file count and the disk holds every superseded file forever.

* Compaction (Delta OPTIMIZE, bin-packing): due once the table has `optimize_after_commits`
  commits since its last compaction this process saw (at start: its version then). Each of the
  job's writes adds a file or a few (an append, a MERGE's new rows), so commits bound the small
  files; they are counted from the table's version, which Delta knows from listing its log,
  where a file count would rebuild the table's state (3 Spark jobs, ~1 s) after every append.
  OPTIMIZE rewrites only files under the small-file size and files whose deletion vectors mark
  a share of their rows (Delta's own rule), so a big table's compacted files stay as they are.
* VACUUM: due every `vacuum_every_minutes` per table, deleting files that left the table more
  than `vacuum_retention_hours` ago. A reader's time travel, and a query running longer than
  that, can fail once its files are gone: the retention is what users can rely on.

Both run after a batch has committed, at most `maintenance_per_batch` operations per batch (the
table furthest past its trigger first), so the stream stalls for one bounded step at a time.
Neither changes data: a compaction commits `dataChange=false`, exactly once is untouched.
"""
from __future__ import annotations

from dataclasses import dataclass, field

OPTIMIZE, VACUUM = "optimize", "vacuum"


@dataclass(frozen=True)
class MaintenancePolicy:
    optimize_after_commits: int  # 0: never compact
    vacuum_every_s: float | None  # None: never vacuum
    per_batch: int  # operations after one batch


@dataclass
class TableState:
    """What the job knows of one table's maintenance in this process."""

    version_at_compaction: int  # the table's version after its last compaction (or when first seen)
    vacuumed_at: float  # monotonic seconds of its last vacuum (or when first seen)


@dataclass
class MaintenancePlanner:
    """Decides, after each batch, which tables get which operation."""

    policy: MaintenancePolicy
    tables: dict[str, TableState] = field(default_factory=dict)

    def due(self, versions: dict[str, int], now: float) -> list[tuple[str, str]]:
        """(table, operation) to run now, most urgent first, at most policy.per_batch.
        `versions`: the tables the batch wrote, each with its Delta version now."""
        wanted: list[tuple[float, str, str]] = []
        every_commits = self.policy.optimize_after_commits
        for table, version in versions.items():
            state = self.tables.setdefault(table, TableState(version, now))
            state.version_at_compaction = min(state.version_at_compaction, version)  # a table made anew
            commits = version - state.version_at_compaction
            if every_commits and commits >= every_commits:
                wanted.append((commits / every_commits, table, OPTIMIZE))
            every = self.policy.vacuum_every_s
            if every is not None and now - state.vacuumed_at >= every:
                wanted.append(((now - state.vacuumed_at) / every if every else float("inf"), table, VACUUM))
        wanted.sort(key=lambda w: (-w[0], w[1], w[2]))
        return [(table, operation) for _, table, operation in wanted[:self.policy.per_batch]]

    def done(self, table: str, operation: str, version_after: int, now: float) -> None:
        state = self.tables[table]
        if operation == OPTIMIZE:
            state.version_at_compaction = version_after
        else:
            state.vacuumed_at = now

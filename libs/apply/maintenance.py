"""When the job compacts and vacuums a Delta table (DESIGN.md "Tables stay healthy unattended").

Every batch adds files: a MERGE with deletion vectors writes its changed rows as a new file and
marks the old copies in a deletion vector; each append to a `_cdc_*` table is a file. Left
alone, reads slow down with the file count and the disk holds every superseded file forever.

* Compaction (Delta OPTIMIZE, bin-packing): due once the table has `optimize_after_commits`
  commits since its last compaction this process saw (at start: its version then). Each of the
  job's writes adds a file or a few (an append, a MERGE's new rows), so commits bound the small
  files; they are counted from the table's version, which Delta knows from listing its log,
  where a file count would rebuild the table's state (3 Spark jobs, ~1 s) after every append.
  OPTIMIZE rewrites the files under its size threshold and files whose deletion vectors mark a
  share of their rows (Delta's own rule). The threshold is tiered: a compaction takes only files
  under `optimize_new_file_mb` (what the batches wrote since the last one), and every
  `optimize_wide_every`-th one (OPTIMIZE_WIDE) takes every file under `optimize_small_file_mb`.
  One threshold for all made every compaction of a table under it rewrite the whole table, and
  VACUUM's retention kept each copy: 30 minutes of sysbench left a 20.8 MB table at 121 MB on
  disk (bench/README.md "30 minutes of sysbench"). Tiered, a byte is rewritten about once per
  tier, and the whole of a small table once per `optimize_wide_every` compactions.
* VACUUM: due every `vacuum_every_minutes` per table, deleting files that left the table more
  than `vacuum_retention_hours` ago. A reader's time travel, and a query running longer than
  that, can fail once its files are gone: the retention is what users can rely on.

Both run after a batch has committed, at most `maintenance_per_batch` operations per batch (the
table furthest past its trigger first), so the stream stalls for one bounded step at a time.
Neither changes data: a compaction commits `dataChange=false`, exactly once is untouched.
"""
from __future__ import annotations

from dataclasses import dataclass, field

OPTIMIZE, OPTIMIZE_WIDE, VACUUM = "optimize", "optimize_wide", "vacuum"
COMPACTIONS = (OPTIMIZE, OPTIMIZE_WIDE)


@dataclass(frozen=True)
class MaintenancePolicy:
    optimize_after_commits: int  # 0: never compact
    vacuum_every_s: float | None  # None: never vacuum
    per_batch: int  # operations after one batch
    wide_every: int = 8  # every wide_every-th compaction of a table is OPTIMIZE_WIDE (WritesSettings default)


@dataclass
class TableState:
    """What the job knows of one table's maintenance in this process."""

    version_at_compaction: int  # the table's version after its last compaction (or when first seen)
    vacuumed_at: float  # monotonic seconds of its last vacuum (or when first seen)
    compactions: int = 0  # run by this process


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
                wide = (state.compactions + 1) % self.policy.wide_every == 0
                wanted.append((commits / every_commits, table, OPTIMIZE_WIDE if wide else OPTIMIZE))
            every = self.policy.vacuum_every_s
            if every is not None and now - state.vacuumed_at >= every:
                wanted.append(((now - state.vacuumed_at) / every if every else float("inf"), table, VACUUM))
        wanted.sort(key=lambda w: (-w[0], w[1], w[2]))
        return [(table, operation) for _, table, operation in wanted[:self.policy.per_batch]]

    def done(self, table: str, operation: str, version_after: int, now: float) -> None:
        state = self.tables[table]
        if operation in COMPACTIONS:
            state.version_at_compaction = version_after
            state.compactions += 1
        else:
            state.vacuumed_at = now

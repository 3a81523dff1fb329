"""When the job compacts and vacuums a Delta table (DESIGN.md "Tables stay healthy unattended").

Every batch adds files: a MERGE with deletion vectors writes its changed rows as a new file and
marks the old copies in a deletion vector; each append to a `_cdc_*` table is a file. Left
alone, reads slow down with the file count and the disk holds every superseded file forever.

* Compaction (Delta OPTIMIZE, bin-packing): due once `optimize_min_new_files` files were added
  since the table's last compaction this process saw (at start: its file count then). It
  rewrites only files under the small-file size and files whose deletion vectors mark a
  share of their rows (Delta's own rule), so a big table's compacted files stay as they are.
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
    optimize_min_new_files: int  # 0: never compact
    vacuum_every_s: float | None  # None: never vacuum
    per_batch: int  # operations after one batch


@dataclass
class TableState:
    """What the job knows of one table's maintenance in this process."""

    files_at_compaction: int  # the table's file count after its last compaction (or when first seen)
    vacuumed_at: float  # monotonic seconds of its last vacuum (or when first seen)


@dataclass
class MaintenancePlanner:
    """Decides, after each batch, which tables get which operation."""

    policy: MaintenancePolicy
    tables: dict[str, TableState] = field(default_factory=dict)

    def due(self, file_counts: dict[str, int], now: float) -> list[tuple[str, str]]:
        """(table, operation) to run now, most urgent first, at most policy.per_batch.
        `file_counts`: the tables the batch wrote, each with its file count now."""
        wanted: list[tuple[float, str, str]] = []
        for table, files in file_counts.items():
            state = self.tables.setdefault(table, TableState(files, now))
            state.files_at_compaction = min(state.files_at_compaction, files)  # shrunk by another writer
            new_files = files - state.files_at_compaction
            if self.policy.optimize_min_new_files and new_files >= self.policy.optimize_min_new_files:
                wanted.append((new_files / self.policy.optimize_min_new_files, table, OPTIMIZE))
            every = self.policy.vacuum_every_s
            if every is not None and now - state.vacuumed_at >= every:
                wanted.append(((now - state.vacuumed_at) / every if every else float("inf"), table, VACUUM))
        wanted.sort(key=lambda w: (-w[0], w[1], w[2]))
        return [(table, operation) for _, table, operation in wanted[:self.policy.per_batch]]

    def done(self, table: str, operation: str, files_after: int, now: float) -> None:
        state = self.tables[table]
        if operation == OPTIMIZE:
            state.files_at_compaction = files_after
        else:
            state.vacuumed_at = now

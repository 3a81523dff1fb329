"""Spill chunks released by a micro-batch, kept until that batch is committed (spill.py release()).

The stateful assembler reports the chunks its new state no longer refers to (AssemblerOutput.
released). They must outlive the batch that released them: a crash before the batch commits
replays it from the previous state, which still refers to them. So batch N records its releases
here, and batch N+1 (which runs only once N is committed) deletes them:

    log = ReleaseLog(<checkpoint>/spill_releases)
    log.delete_before(N + 1, spill_store)     # batch N+1 starts: N is committed
    ... run batch N+1 ... log.record(N + 1, its releases)

One small JSON file per batch that released something, written to a temporary name and renamed
(a replayed batch rewrites the same content), private like the chunks (0600 files, 0700
directories: file_spill.py). This replaces a Delta table whose read, DELETE and
append cost three Delta commits' worth of jobs per batch (bench/plain_batches.py).
Deleting a chunk twice is harmless (FileSpillStore.delete), so a crash between the deletes and
forget() only repeats them.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Iterable, NamedTuple

from libs.stream.assembler.file_spill import make_private_dir, write_atomically


class Release(NamedTuple):
    source: str
    trx_key: str
    chunk_count: int


class ReleaseLog:
    SUFFIX = ".json"

    def __init__(self, root: str | Path):
        self.root = Path(root)

    def _path(self, batch_id: int) -> Path:
        return self.root / f"{int(batch_id):020d}{self.SUFFIX}"

    def record(self, batch_id: int, releases: Iterable[Release]) -> None:
        releases = [list(r) for r in releases]
        if not releases:
            return
        make_private_dir(self.root)
        write_atomically(self._path(batch_id), json.dumps(releases).encode())

    def pending_before(self, batch_id: int) -> list[tuple[int, list[Release]]]:
        """(batch id, releases) of every recorded batch before `batch_id`, oldest first."""
        if not self.root.exists():
            return []
        out = []
        for path in sorted(self.root.glob("*" + self.SUFFIX)):
            recorded = int(path.name[:-len(self.SUFFIX)])
            if recorded < batch_id:
                try:
                    releases = [Release(*r) for r in json.loads(path.read_text())]
                except (ValueError, TypeError) as exc:
                    raise ValueError(f"spill release log {path}: unreadable ({exc})") from None
                out.append((recorded, releases))
        return out

    def forget(self, batch_id: int) -> None:
        self._path(batch_id).unlink(missing_ok=True)

    def delete_before(self, batch_id: int, store) -> int:
        """Delete from `store` (a SpillStore) the chunks released by batches before `batch_id`,
        then forget those records. Returns the number of released transactions deleted."""
        deleted = 0
        for recorded, releases in self.pending_before(batch_id):
            for release in releases:
                store.delete(release.source, release.trx_key, release.chunk_count)
            deleted += len(releases)
            self.forget(recorded)
        return deleted

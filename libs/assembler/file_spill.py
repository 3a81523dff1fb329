"""A durable SpillStore on a filesystem path (local disk, or a cloud volume mounted as a path,
e.g. /Volumes/... on Databricks), used by the streaming assemble stage.

Chunk files live under <root>/<source>/<trx key>/<chunk no>.chunk. A write goes to a temporary
file and is renamed into place, so a reader never sees half a chunk and a retried batch that
rewrites the same chunk (same bytes, spill.py) is harmless: idempotent by construction. The
root sits next to the Spark checkpoint, so the open transactions the checkpointed state refers
to survive a restart together with it."""
from __future__ import annotations

import os
import shutil
import uuid
from pathlib import Path
from urllib.parse import quote


def write_atomically(path: Path, data: bytes) -> None:
    """Write `path` through a temporary file in its directory and a rename: a reader sees the
    old content or the new, never half of it; concurrent writers of the same content are safe."""
    tmp = path.parent / f".{path.name}.{uuid.uuid4().hex}.tmp"
    tmp.write_bytes(data)
    os.replace(tmp, path)


class FileSpillStore:
    def __init__(self, root: str | Path):
        self.root = Path(root)

    def _dir(self, source: str, trx_key: str) -> Path:
        # source ids and transaction keys are data: quote them so no value can escape the root
        return self.root / quote(source, safe="") / quote(trx_key, safe="")

    def put(self, source: str, trx_key: str, chunk_no: int, data: bytes) -> None:
        directory = self._dir(source, trx_key)
        directory.mkdir(parents=True, exist_ok=True)
        write_atomically(directory / f"{chunk_no}.chunk", data)

    def get(self, source: str, trx_key: str, chunk_no: int) -> bytes:
        path = self._dir(source, trx_key) / f"{chunk_no}.chunk"
        try:
            return path.read_bytes()
        except FileNotFoundError:
            raise KeyError(f"spill chunk {chunk_no} of {trx_key} (source {source}) is missing at {path}") from None

    def delete(self, source: str, trx_key: str, chunk_count: int) -> None:
        shutil.rmtree(self._dir(source, trx_key), ignore_errors=True)

    def chunk_count(self) -> int:
        return sum(1 for _ in self.root.rglob("*.chunk")) if self.root.exists() else 0

"""A durable SpillStore on a filesystem path (local disk, or a cloud volume mounted as a path,
e.g. /Volumes/... on Databricks), used by the streaming assemble stage.

Chunk files live under <root>/<source>/<trx key>/<chunk no>.chunk. A write goes to a temporary
file and is renamed into place, so a reader never sees half a chunk and a retried batch that
rewrites the same chunk (same bytes, spill.py) is harmless: idempotent by construction. The
root sits next to the Spark checkpoint, so the open transactions the checkpointed state refers
to survive a restart together with it.

Chunks are raw row images of open transactions, as private as the binlog they came from: files
are created 0600 and directories 0700 (the mode is passed to the call that creates them, so
whatever the process umask, no group or other bit is ever set; a umask only takes bits away).
The release log (release_log.py) is written the same way."""
from __future__ import annotations

import hashlib
import os
import shutil
import uuid
from pathlib import Path
from urllib.parse import quote


MAX_SEGMENT = 200  # characters (ASCII after quoting); filesystems allow 255 bytes per name
PRIVATE_FILE, PRIVATE_DIR = 0o600, 0o700


def path_segment(value: str) -> str:
    """One directory name for any string, distinct strings giving distinct names. quote() alone
    leaves `.` and `..` (and turns "" into the parent itself), which name the directory or its
    parent: those are spelled with %2E / "%", spellings quote() never produces (it writes a `%`
    as %25). An over-long name (a filesystem's 255-byte limit) keeps a prefix plus a hash."""
    segment = quote(value, safe="", errors="surrogatepass")
    if segment in ("", ".", ".."):
        segment = segment.replace(".", "%2E") or "%"
    if len(segment) > MAX_SEGMENT:
        digest = hashlib.sha256(value.encode("utf-8", "surrogatepass")).hexdigest()
        segment = f"{segment[:MAX_SEGMENT - 66]}%~{digest}"
    return segment


def write_atomically(path: Path, data: bytes) -> None:
    """Write `path` (mode 0600) through a temporary file in its directory and a rename: a reader
    sees the old content or the new, never half of it; concurrent writers of the same content
    are safe."""
    tmp = path.parent / f".{path.name}.{uuid.uuid4().hex}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, PRIVATE_FILE)
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)
    os.replace(tmp, path)


def make_private_dir(path: Path) -> None:
    """Create `path` and its missing parents with mode 0700 (Path.mkdir(parents=True) gives the
    parents the umask's default, 0755 under the usual 022). An existing directory is left as
    it is; concurrent creators are safe. One mkdir when the parents exist, the usual case."""
    try:
        os.mkdir(path, PRIVATE_DIR)
    except FileExistsError:
        return
    except FileNotFoundError:
        if path.parent == path:
            raise
        make_private_dir(path.parent)
        make_private_dir(path)


class FileSpillStore:
    def __init__(self, root: str | Path):
        self.root = Path(root)

    def _dir(self, source: str, trx_key: str) -> Path:
        # source ids and transaction keys are data (Kafka keys, header file names)
        return self.root / path_segment(source) / path_segment(trx_key)

    def put(self, source: str, trx_key: str, chunk_no: int, data: bytes) -> None:
        directory = self._dir(source, trx_key)
        make_private_dir(directory)
        write_atomically(directory / f"{chunk_no}.chunk", data)

    def get(self, source: str, trx_key: str, chunk_no: int) -> bytes:
        path = self._dir(source, trx_key) / f"{chunk_no}.chunk"
        try:
            return path.read_bytes()
        except FileNotFoundError:
            raise KeyError(f"spill chunk {chunk_no} of {trx_key} (source {source}) is missing at "
                           f"{path}") from None

    def delete(self, source: str, trx_key: str, chunk_count: int) -> None:
        shutil.rmtree(self._dir(source, trx_key), ignore_errors=True)

    def size(self, source: str, trx_key: str) -> int:
        """Bytes of the chunk files of one group (0 when it has none): one directory listing."""
        try:
            return sum(e.stat().st_size for e in os.scandir(self._dir(source, trx_key))
                       if e.name.endswith(".chunk"))
        except FileNotFoundError:
            return 0

    def chunk_count(self) -> int:
        return sum(1 for _ in self.root.rglob("*.chunk")) if self.root.exists() else 0

"""Events of binlog files read from disk: a list of files, or a binlog directory with its
.index file, shipped in order; optionally following the newest file as the server writes it.

A file is read incrementally from its current position: complete events are yielded, a
partially written last event stays unread until the rest arrives (follow) or is reported
(no follow). Each file is shipped from position 4 (its Format_description included, DESIGN.md
"Kafka record"), or from the resume position for the file the topic already holds.
"""
from __future__ import annotations

import os
import re
import struct
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator

from libs.binlog import check_magic
from libs.binlog.constants import COMMON_HEADER_LEN, EventType
from libs.binlog.errors import BinlogError

from .errors import ShipError
from .stream import parse_rotate

_U32 = struct.Struct("<I")
FILE_ENDERS = frozenset({int(EventType.ROTATE), int(EventType.STOP)})
READ_CHUNK = 4 * 1024 * 1024
_SUFFIX = re.compile(r"^(.*)\.(\d+)$")


def binlog_sort_key(name: str) -> tuple[str, int, str]:
    """mdb-bin.000010 after mdb-bin.000009 (and after .999999 comes .1000000)."""
    m = _SUFFIX.match(name)
    return (m[1], int(m[2]), name) if m else (name, -1, name)


def read_index(index: Path) -> list[Path]:
    """Files named by a server's .index file (one path per line, relative or absolute)."""
    out = []
    for line in index.read_text().splitlines():
        line = line.strip()
        if line:
            out.append(index.parent / Path(line).name)
    return out


@dataclass
class Inputs:
    """What to ship: explicit files (in the given order) or a directory's index."""

    files: list[Path]
    index: Path | None = None

    @classmethod
    def from_paths(cls, paths: list[Path]) -> "Inputs":
        dirs = [p for p in paths if p.is_dir()]
        if dirs:
            if len(paths) != 1:
                raise ShipError("give either one binlog directory or a list of files, not both")
            indexes = sorted(dirs[0].glob("*.index"))
            if len(indexes) > 1:
                raise ShipError(f"{dirs[0]} holds several .index files: "
                                f"{', '.join(i.name for i in indexes)}; name the files instead")
            if indexes:
                return cls(read_index(indexes[0]), indexes[0])
            files = sorted((p for p in dirs[0].iterdir() if _SUFFIX.match(p.name)),
                           key=lambda p: binlog_sort_key(p.name))
            if not files:
                raise ShipError(f"{dirs[0]}: no .index file and no binlog files")
            return cls(files)
        missing = [str(p) for p in paths if not p.exists()]
        if missing:
            raise ShipError(f"binlog file(s) not found: {', '.join(missing)}")
        return cls(list(paths))

    def refresh(self) -> None:
        if self.index is not None:
            self.files = read_index(self.index)

    def remaining_bytes(self, name: str | None, pos: int) -> int | None:
        """Lag in bytes: what is left of file `name` after `pos` plus the later files."""
        names = [p.name for p in self.files]
        if name not in names:
            return None
        total = 0
        for i, p in enumerate(self.files[names.index(name):]):
            try:
                size = p.stat().st_size
            except OSError:
                continue
            total += size - pos if i == 0 else size
        return max(total, 0)


class FileReader:
    """Complete events of one growing file from `pos`; keeps a partial tail for later."""

    def __init__(self, path: Path, pos: int, source: str):
        self.path, self.name, self.pos, self.source = path, path.name, pos, source
        self._fh = open(path, "rb")
        head = self._fh.read(4)
        try:
            check_magic(head, file=self.name, source=source)
        except BinlogError as exc:
            self._fh.close()
            raise ShipError(str(exc)) from exc
        self._fh.seek(pos)
        self._buf = b""
        self.ended = False  # a Rotate/Stop was read: nothing more will be written here
        self.rotate_to: str | None = None  # the next file a Rotate named

    def close(self) -> None:
        self._fh.close()

    @property
    def pending(self) -> int:
        return len(self._buf)

    def read(self) -> Iterator[tuple[int, bytes]]:
        """(start pos, frame) of each complete event available now."""
        while True:
            chunk = self._fh.read(READ_CHUNK)
            if chunk:
                self._buf += chunk
            consumed = 0
            buf, n = self._buf, len(self._buf)
            while n - consumed >= COMMON_HEADER_LEN:
                size = _U32.unpack_from(buf, consumed + 9)[0]
                if size < COMMON_HEADER_LEN:
                    raise ShipError(f"event_size {size} < {COMMON_HEADER_LEN}: not a binlog event",
                                    source=self.source, file=self.name, pos=self.pos)
                if n - consumed < size:
                    break
                frame = buf[consumed:consumed + size]
                yield self.pos, frame
                self.pos += size
                consumed += size
                if frame[4] in FILE_ENDERS:
                    self.ended = True
                    if frame[4] == EventType.ROTATE:
                        self.rotate_to = parse_rotate(frame, None)[1]
            self._buf = buf[consumed:]
            if not chunk:
                return


def iter_file_events(inputs: Inputs, source: str, *, resume: tuple[str, int] | None = None,
                     follow: bool = False, poll_s: float = 0.2,
                     should_stop: Callable[[], bool] = lambda: False,
                     warn: Callable[[str], None] = print) -> Iterator[tuple[str, int, bytes]]:
    """(file name, start pos, frame) for every event to ship, in order."""
    index, pos = _start(inputs, resume)
    while index < len(inputs.files) and not should_stop():
        path = inputs.files[index]
        reader = FileReader(path, pos, source)
        try:
            while not should_stop():
                for start, frame in reader.read():
                    yield path.name, start, frame
                    if should_stop():
                        return
                if reader.ended:
                    break
                inputs.refresh()
                is_last = index == len(inputs.files) - 1
                if not follow:
                    if reader.pending:
                        msg = (f"{reader.pending} bytes of a partially written event at the end "
                               f"(source {source}, file {path.name}, pos {reader.pos})")
                        if not is_last:
                            raise ShipError("truncated event: " + msg)
                        warn(f"cdc-ship: stopping before {msg}")
                    break
                if not is_last and not reader.pending and _no_growth(path, reader):
                    break  # the server moved on without a Rotate (crash/restart): next file
                time.sleep(poll_s)
        finally:
            reader.close()
        index, pos = index + 1, 4
        if follow and inputs.index is None and index == len(inputs.files) and reader.rotate_to:
            inputs.files.append(path.parent / reader.rotate_to)  # explicit files: follow Rotate
        if follow:
            while index >= len(inputs.files) and not should_stop():
                time.sleep(poll_s)
                inputs.refresh()


def _no_growth(path: Path, reader: FileReader) -> bool:
    return os.path.getsize(path) <= reader.pos


def _start(inputs: Inputs, resume: tuple[str, int] | None) -> tuple[int, int]:
    """(index into inputs.files, position) to start from: after the topic's last record."""
    if resume is None:
        return 0, 4
    name, pos = resume
    names = [p.name for p in inputs.files]
    if name in names:
        return names.index(name), pos
    later = [i for i, n in enumerate(names) if binlog_sort_key(n) > binlog_sort_key(name)]
    return (later[0], 4) if later else (len(names), 4)

"""Events of binlog files read from disk: a list of files, or a binlog directory with its
index file (binlog_dir.py), shipped in order; optionally following the newest file as the
server writes it.

Nothing lost, nothing made up (DESIGN.md "Kafka record"): every byte of a file is either
published inside a verified frame (frame_check.py: CRC32 when the file's Format_description
says so) or the shipper stops with an error naming source, file and position. A file must end
on an event boundary once nothing more will be written to it:
  * without --follow, every file is read to its end and must be complete;
  * with --follow, a partial last event is normal while the server writes it: the rest is
    waited for. A file is finished when the index lists a later file and this one has stopped
    growing; the server writes the Rotate, closes the file and only then adds the next file to
    the index (MariaDB MYSQL_BIN_LOG::new_file_impl), so a partial event left at that point
    will never be completed: an error, as on the master itself ("binlog truncated in the
    middle of event", ER_MASTER_FATAL_ERROR_READING_BINLOG).
A Rotate in the middle of a file (a relay log holds its master's) does not end the read.

While following, each read of the newest file that finds nothing new and no partial event
tells `on_idle` (file, next position, time of the read in ns): everything the file held then is
shipped, the file-follower's ground for a heartbeat record (libs/contracts/heartbeat.py).

Each file is shipped from position 4 (its Format_description included), or from the resume
position for the file the topic already holds (the FDE is then read, not shipped, to know the
checksum setting).
"""
from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Callable, Iterator

from libs.binlog import check_magic
from libs.binlog.constants import COMMON_HEADER_LEN, EventType
from libs.binlog.header import event_size, event_type
from libs.binlog.errors import BinlogError, TruncatedError
from libs.binlog.file_names import binlog_sort_key

from libs.shipper.binlog_dir import Inputs, contained
from libs.source.errors import IncompleteFileError, ShipError
from libs.shipper.frame_check import FrameCheck, check_event_size

__all__ = ["FileReader", "Inputs", "binlog_sort_key", "iter_file_events"]

FILE_ENDERS = frozenset({int(EventType.ROTATE), int(EventType.STOP)})
READ_CHUNK = 4 * 1024 * 1024


class FileReader:
    """Verified complete events of one (possibly growing) file from `pos`; keeps a partial
    tail for later. `root`: the directory the file must resolve into (files from an index)."""

    def __init__(self, path: Path, pos: int, source: str, *, root: Path | None = None):
        self.path, self.name, self.pos, self.source = path, path.name, pos, source
        if root is not None:
            contained(path, root)
        try:
            self._fh = open(path, "rb")
        except OSError as exc:
            raise ShipError(f"cannot open {path}: {exc.strerror}", source=source,
                            file=self.name) from None
        try:
            self.check = FrameCheck(self.name, source)
            self._start()
        except BaseException:
            self._fh.close()
            raise
        self._buf = b""
        self.last_type: int | None = None  # type code of the last complete event read

    def _start(self) -> None:
        try:
            check_magic(self._fh.read(4), file=self.name, source=self.source)
        except TruncatedError as exc:
            raise IncompleteFileError(exc.message, source=self.source, file=self.name,
                                      pos=0) from None
        except BinlogError as exc:
            raise ShipError(exc.message, source=self.source, file=self.name, pos=0) from None
        size = os.fstat(self._fh.fileno()).st_size
        if self.pos > size:
            raise ShipError(f"the topic already holds this file up to position {self.pos}, "
                            f"but it has only {size} bytes", source=self.source,
                            file=self.name, pos=self.pos)
        if self.pos > 4:
            head = self._fh.read(COMMON_HEADER_LEN)
            if len(head) < COMMON_HEADER_LEN:
                raise IncompleteFileError("no Format_description at position 4",
                                          source=self.source, file=self.name, pos=4)
            fde_size = event_size(head)
            check_event_size(fde_size, source=self.source, file=self.name, pos=4)
            self.check.skip_to(head + self._fh.read(fde_size - COMMON_HEADER_LEN))
        self._fh.seek(self.pos)

    def close(self) -> None:
        self._fh.close()

    @property
    def pending(self) -> int:
        return len(self._buf)

    def at_end(self) -> bool:
        """Nothing was appended since the last read reached the end of the file."""
        return os.path.getsize(self.path) <= self.pos + self.pending

    def incomplete(self, why: str) -> IncompleteFileError:
        what = (f"a partial event ({self.pending} of "
                f"{event_size(self._buf)} bytes)"
                if self.pending >= COMMON_HEADER_LEN
                else f"{self.pending} bytes, less than an event header")
        return IncompleteFileError(f"file ends inside an event: {what}; {why}",
                                   source=self.source, file=self.name, pos=self.pos)

    def read(self) -> Iterator[tuple[int, bytes]]:
        """(start pos, frame) of each complete, verified event available now."""
        while True:
            chunk = self._fh.read(READ_CHUNK)
            if chunk:
                self._buf += chunk
            consumed = 0
            buf, n = self._buf, len(self._buf)
            while n - consumed >= COMMON_HEADER_LEN:
                size = event_size(buf, consumed)
                check_event_size(size, source=self.source, file=self.name, pos=self.pos)
                if n - consumed < size:
                    break
                frame = buf[consumed:consumed + size]
                self.check.check(self.pos, frame)
                yield self.pos, frame
                self.pos += size
                consumed += size
                self.last_type = event_type(frame)
            self._buf = buf[consumed:]
            if not chunk:
                return


OnIdle = Callable[[str, int, int], None]  # (file, next position, epoch ns of the read that found nothing)


def iter_file_events(inputs: Inputs, source: str, *, resume: tuple[str, int] | None = None,
                     follow: bool = False, poll_s: float = 0.2,
                     should_stop: Callable[[], bool] = lambda: False, on_idle: OnIdle | None = None
                     ) -> Iterator[tuple[str, int, bytes]]:
    """(file name, start pos, frame) for every event to ship, in order."""
    index, pos = _start(inputs, resume)
    while index < len(inputs.files) and not should_stop():
        reader = _open(inputs, index, pos, source, follow, poll_s, should_stop)
        if reader is None:
            return
        try:
            yield from _events_of(reader, inputs, index, follow, poll_s, should_stop, on_idle)
        finally:
            reader.close()
        index, pos = index + 1, 4
        while follow and index >= len(inputs.files) and not should_stop():
            time.sleep(poll_s)
            inputs.refresh()


def _open(inputs: Inputs, index: int, pos: int, source: str, follow: bool, poll_s: float,
          should_stop: Callable[[], bool]) -> FileReader | None:
    """The reader of inputs.files[index]; with --follow, a newest file the server has only
    just created (shorter than its 4-byte magic) is waited for."""
    while True:
        path = inputs.files[index]
        try:
            return FileReader(path, pos, source, root=inputs.root if inputs.from_index(path)
                              else None)
        except IncompleteFileError:
            if not follow or index < len(inputs.files) - 1:
                raise
        if should_stop():
            return None
        time.sleep(poll_s)
        inputs.refresh()


def _events_of(reader: FileReader, inputs: Inputs, index: int, follow: bool, poll_s: float,
               should_stop: Callable[[], bool], on_idle: OnIdle | None = None
               ) -> Iterator[tuple[str, int, bytes]]:
    while not should_stop():
        # Taken before the read: the file's bytes written by then are all read below (a clock
        # read per pass over the file, not per event).
        looked_at, found = time.time_ns(), False
        for start, frame in reader.read():
            found = True
            yield reader.name, start, frame
            if should_stop():
                return
        if not follow:
            if reader.pending:
                raise reader.incomplete("nothing more is read from it (no --follow)")
            return
        inputs.refresh()
        if reader.at_end():
            if index < len(inputs.files) - 1:
                if reader.pending:
                    raise reader.incomplete(f"the index lists {inputs.files[index + 1].name} after it")
                return
            if not inputs.can_follow_rotation and reader.last_type in FILE_ENDERS:
                # the Rotate names the next file, but only an index may say what to open
                raise ShipError("the file ends with a Rotate/Stop and no index file lists the "
                                "files after it: cannot follow it", source=reader.source,
                                file=reader.name, pos=reader.pos)
            if on_idle is not None and not found and not reader.pending:  # a partial event: mid-write
                on_idle(reader.name, reader.pos, looked_at)
        time.sleep(poll_s)


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

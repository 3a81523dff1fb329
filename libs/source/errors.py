"""Shipper errors: one family, always naming source, file and position when known.

Every error the shipper raises on purpose is a ShipError, printed by `cdc-ship` as one line
(exit 1), so a subclass says *what kind* of problem it is without changing how it is reported:

    ShipError               Kafka delivery, server refusal, anything else fatal
      FrameError            a frame that is not what the binlog says it is (CRC32, size, Rotate)
      IncompleteFileError   a file that ends inside an event (truncated, or a garbage tail)
      UnsafePathError       a file name that would leave its binlog directory
      CredentialError       the replication password/user could not be read
      ServerChangedError    the topic's last record came from another server: no file:pos resume
      PurgedBinlogError     the server no longer has the binlog the shipper needs next
"""
from __future__ import annotations


def one_line(text: str) -> str:
    """Messages reach a terminal or a log line: no newlines from wrapped library errors."""
    return " ".join(str(text).split())


class ShipError(Exception):
    """A fatal shipper error (bad input, Kafka delivery failure, protocol violation)."""

    def __init__(self, message: str, *, source: str | None = None, file: str | None = None,
                 pos: int | None = None):
        where = ", ".join(f"{k} {v}" for k, v in (("source", source), ("file", file), ("pos", pos))
                          if v is not None)
        message = one_line(message)
        super().__init__(f"{message} ({where})" if where else message)
        self.source, self.file, self.pos = source, file, pos


class FrameError(ShipError):
    """A complete frame that must not be shipped: bad CRC32, impossible size, bad Rotate."""


class IncompleteFileError(ShipError):
    """A binlog file that ends inside an event although nothing more will be written to it."""


class UnsafePathError(ShipError):
    """A binlog file name (index line, Rotate, topic header) that is not a plain file name of
    its directory."""


class CredentialError(ShipError):
    """The replication credentials could not be read (password file, option file)."""


class ServerChangedError(ShipError):
    """The server connected to is not the one the topic's last record came from: its binlog
    positions mean something else there (libs/shipper/resume.py)."""


class PurgedBinlogError(ShipError):
    """What the shipper needs next was purged from the server's binlog: the topic cannot go on
    without a gap; a new snapshot (cdc-ship --resnapshot) is the way on."""

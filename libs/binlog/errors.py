"""Typed codec errors. Decode errors are data: every one carries where it happened
(source, file, position), the event type code and the raw bytes, so the pipeline can
quarantine the frame instead of losing it (DESIGN.md "Bad input")."""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(eq=False)
class BinlogError(Exception):
    """Base of every error the codec raises on bad input. Programmer errors are not these."""

    message: str
    file: str | None = None
    pos: int | None = None
    type_code: int | None = None
    raw: bytes = field(default=b"", repr=False)
    source: str | None = None

    kind = "binlog_error"

    def __post_init__(self) -> None:
        super().__init__(self.message)

    def where(self) -> str:
        parts = []
        if self.source:
            parts.append(f"source {self.source}")
        if self.file:
            parts.append(f"file {self.file}")
        if self.pos is not None:
            parts.append(f"pos {self.pos}")
        if self.type_code is not None:
            parts.append(f"type {self.type_code}")
        return ", ".join(parts)

    def __str__(self) -> str:
        where = self.where()
        return f"{self.kind}: {self.message}" + (f" ({where})" if where else "")

    def located(self, *, file: str | None = None, pos: int | None = None,
                source: str | None = None) -> "BinlogError":
        """Fill in location fields not known where the error was raised (returns self)."""
        if self.file is None:
            self.file = file
        if self.pos is None:
            self.pos = pos
        if self.source is None:
            self.source = source
        return self


class TruncatedError(BinlogError):
    """Fewer bytes than the header or a length field promises (the stream ended early)."""

    kind = "truncated"


class MalformedError(BinlogError):
    """Bytes present but impossible: bad length, body not fully consumed, bad value."""

    kind = "malformed"


class LimitError(MalformedError):
    """Beyond a decode limit (limits.py DecodeLimits): refused before the work is done. A
    MalformedError, since no real server writes it; the message names the limit to raise."""

    kind = "limit"


class ChecksumError(BinlogError):
    """CRC32 of the event does not match its trailing checksum."""

    kind = "checksum"


class UnknownEventError(BinlogError):
    """Unknown type code without LOG_EVENT_IGNORABLE_F (WL#4033: must stop the stream)."""

    kind = "unknown_event"


class UnsupportedError(BinlogError):
    """A valid feature this codec refuses on purpose (e.g. encrypted binlogs)."""

    kind = "unsupported"


class NoFormatDescriptionError(BinlogError):
    """An event arrived before any Format_description: it cannot be decoded."""

    kind = "no_format_description"

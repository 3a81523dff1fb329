"""Shipper errors: one type, always naming source, file and position when known."""
from __future__ import annotations


class ShipError(Exception):
    """A fatal shipper error (bad input, Kafka delivery failure, protocol violation)."""

    def __init__(self, message: str, *, source: str | None = None, file: str | None = None,
                 pos: int | None = None):
        where = ", ".join(f"{k} {v}" for k, v in (("source", source), ("file", file), ("pos", pos))
                          if v is not None)
        super().__init__(f"{message} ({where})" if where else message)
        self.source, self.file, self.pos = source, file, pos

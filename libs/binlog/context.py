"""Decode context: what a decoder needs besides its own bytes (binlog_event.h Format_description,
Table_map cache). One context per binlog stream; the framing layer updates it as FDE and
Table_map events pass, and decoders only read it."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from libs.binlog.constants import CHECKSUM_CRC32
from libs.binlog.limits import DEFAULT_LIMITS, DecodeLimits


@dataclass
class DecodeContext:
    fde: Any = None  # FormatDescription of the stream, None before the first one
    table_maps: dict[int, Any] = field(default_factory=dict)  # table_id -> tablemap record
    file: str | None = None
    source: str | None = None
    # Columns to read as unsigned when the Table_map carries no signedness metadata:
    # {(db, table): frozenset(0-based ordinals)} (configuration).
    unsigned_overrides: dict[tuple[str, str], frozenset[int]] = field(default_factory=dict)
    # MariaDB 5.3-format TIME/DATETIME/TIMESTAMP(n) (mysql56_temporal_format=OFF) log no fsp in
    # the Table_map, yet their width depends on it: {(db, table): {0-based ordinal: fsp 1-6}}
    # from the table's CREATE TABLE (configuration, like unsigned_overrides). Columns not listed
    # are read as the plain fsp-0 format; a row image that then does not fit its event raises a
    # MalformedError naming the columns that need an entry here (rows.py).
    old_temporal_fsp: dict[tuple[str, str], dict[int, int]] = field(default_factory=dict)
    # Rows events decode to their post-header only (rows=()), no Table_map needed: the streaming
    # assemble stage places events in transactions; row images are decoded later in parallel.
    defer_rows: bool = False
    # What one frame may cost (limits.py); configuration, like the overrides above.
    limits: DecodeLimits = DEFAULT_LIMITS
    # Transaction_payload events being decoded around the current one (events_mysql_group.py).
    payload_depth: int = 0

    @property
    def has_checksum(self) -> bool:
        return self.fde is not None and self.fde.checksum_alg == CHECKSUM_CRC32

    @property
    def flavour(self) -> str:
        return self.fde.flavour if self.fde is not None else "mysql"

    def post_header_len(self, type_code: int, default: int) -> int:
        """Post-header length of `type_code` from the FDE table (1-based in the FDE)."""
        if self.fde is None:
            return default
        table = self.fde.post_header_lengths
        return table[type_code - 1] if 0 < type_code <= len(table) else default

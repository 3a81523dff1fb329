"""Replay errors: data (kind, code, message, where), routed by mode; ReplayStopped stops a batch.

Kinds match schemas/quarantine_record.avsc `kind` values. Codes are the MySQL errors a replica's
SQL thread would report (HA_ERR_KEY_NOT_FOUND -> 1032, HA_ERR_FOUND_DUPP_KEY -> 1062).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

from libs.replay.lineage import Lineage

ROW_NOT_FOUND = "row_not_found"  # ER_KEY_NOT_FOUND 1032: update/delete found no row
DUPLICATE_KEY = "duplicate_key"  # ER_DUP_ENTRY 1062: insert/update would duplicate a key
STATEMENT_FORMAT = "statement_format"  # WL#3303: statement DML for a rows-only target
UNUSABLE_BEFORE_IMAGE = "unusable_before_image"  # WL#5092 R2: BI holds no target column
BAD_VALUE = "bad_value"  # a value cannot be converted to the target column type
UNKNOWN_OP = "unknown_op"  # a change op the replay has no handler for (libs/replay/engine.py)

CODES = {ROW_NOT_FOUND: 1032, DUPLICATE_KEY: 1062}


@dataclass(frozen=True)
class ReplayError:
    """One change that was not applied, with everything needed to find it again."""

    kind: str
    message: str
    table: str
    key: Mapping[str, str | None] | None
    lineage: Lineage
    statement: str | None

    @property
    def code(self) -> int | None:
        return CODES.get(self.kind)

    def __str__(self) -> str:
        code = f"error {self.code} " if self.code else ""
        key = f" key {dict(self.key)}" if self.key else ""
        stmt = f"; statement: {self.statement!r}" if self.statement else ""
        return f"{code}({self.kind}) on {self.table}{key} ({self.lineage.where()}): {self.message}{stmt}"


class ReplayStopped(Exception):
    """The batch cannot be applied (strict mode, or a configured stop). Nothing of it is applied;
    the stream stops here, like a replica's SQL thread."""

    def __init__(self, error: ReplayError):
        self.error = error
        super().__init__(str(error))

"""The MERGE source's write op: what one of its rows does to the stored row of its `_row_id`.
UPSERT: the row is that row's whole new content (updated, or inserted when none is stored);
DELETE: the stored row goes (a soft-delete target's is flagged instead: libs/apply/soft_deletes.py).
The values are written into the `_cdc_op` column (OP_COLUMN) of the MERGE source,
pipelines/apply/target_writes.py. Not a change's op (libs/contracts/change.Op): its `delete` is
a source row change, which may end as either write (a soft target's row the batch wrote, then
deleted, is an upsert flagged deleted).
"""
from __future__ import annotations

from enum import StrEnum


class WriteOp(StrEnum):
    UPSERT = "upsert"
    DELETE = "delete"

"""Which upsert a DV commit may append as a new row when the replay did not read it (issue #57
item 3, pipelines/apply/position_writes.py `_read_position_write`).

A DV commit never joins the table: an upsert whose row id the replay's read did not give is
appended. The replay reads every stored row holding a non-null enforced key of a row it writes
(libs/apply/plan.py replay_touched: it reads what missing_lookups names until nothing is missing;
snapshot rows aside), so an upsert with such a key that was not read has no stored row holding
that key: it is new. A row of a keyless table (or whose every enforced key is null, or a
snapshot row) was not looked up by key; were its change delivered to the apply stage twice (the
assembler's exactly-once rules prevent it, DESIGN.md "Exactly once"), an append would store its
`_row_id` twice, where a MERGE by `_row_id` matches the stored row. Such a batch is a MERGE."""
from __future__ import annotations

from typing import Any, Mapping

from libs.apply.plan import key_tuple
from libs.contracts.change import Op
from libs.replay import LINEAGE_COLUMN
from libs.targets.model import Target


def looked_up_by_key(target: Target, row: Mapping[str, Any]) -> bool:
    """True when the replay looked up one of the upsert `row`'s enforced keys (module docstring)."""
    lineage = row.get(LINEAGE_COLUMN) or {}
    if lineage.get("operation") == Op.SNAPSHOT:
        return False
    return any(key_tuple(key, row) is not None for key in target.enforced_keys)

"""A replayed table's plan, as its mode (libs/apply/modes/) writes it: a current or soft-delete
target's rows to upsert and delete (pipelines/apply/target_writes.py TablePlan), an SCD2 target's
versions to close and open (scd2.py HistoryPlan). One entry per mode, by its name."""
from __future__ import annotations

from typing import Any, Callable, Sequence

from libs.apply.merge_scope import merge_scope
from libs.apply.modes.current import CURRENT
from libs.apply.modes.scd2 import SCD2
from libs.apply.modes.select import mode_of
from libs.apply.modes.soft_delete import SOFT_DELETE
from libs.apply.write_op import WriteOp
from libs.contracts.change import Change, Op
from libs.replay.engine import ReplayResult
from libs.tables.table_location import TableLocation
from libs.targets.model import Target
from pipelines.apply.modes.scd2 import history_plan
from pipelines.apply.target_writes import OP_COLUMN, TablePlan


def row_plan(target: Target, path: TableLocation, result: ReplayResult, read_rows: Sequence,
             changes: Sequence[Change], carried: Any = None) -> TablePlan:
    """The MERGE source rows of a current or soft-delete target (its mode's table_writes)."""
    mode = mode_of(target)
    upserts, deletes = mode.table_writes(target, result)
    upserts = [{**u, OP_COLUMN: WriteOp.UPSERT} for u in upserts]
    deletes = [{**d, OP_COLUMN: WriteOp.DELETE} for d in deletes]
    only_new = not deletes and all(w.lineage.operation == Op.SNAPSHOT for w in result.upserts)
    only_new = only_new and len(upserts) == len(result.upserts)  # (no tombstone of a stored row)
    replace = any(c.op == Op.TRUNCATE for c in changes)  # the rows left after the last truncate
    return TablePlan(target, path, upserts, deletes, replace, only_new, merge_scope(target, read_rows),
                     carried, mode.truncated(changes))


def version_plan(target: Target, path: TableLocation, result: ReplayResult, read_rows: Sequence,
                 changes: Sequence[Change], carried: Any = None) -> TablePlan:
    """The versions an SCD2 target's batch closes and opens (scd2.py)."""
    return history_plan(target, path, result, read_rows, carried)


PLANS: dict[str, Callable[..., TablePlan]] = {CURRENT.name: row_plan, SOFT_DELETE.name: row_plan,
                                              SCD2.name: version_plan}


def plan_of(target: Target, path: TableLocation, result: ReplayResult, read_rows: Sequence,
            changes: Sequence[Change], carried: Any = None) -> TablePlan:
    return PLANS[mode_of(target).name](target, path, result, read_rows, changes, carried)

"""Soft deletes (targets YAML `delete: soft`, README "Soft deletes"): a row the source deletes
stays in the Delta table, flagged, instead of leaving it. The rule, without Spark:

    rows = SOFT_DELETE.table_writes(target, result)    # a replayed batch -> the MERGE source's rows

Columns (schemas/soft_delete.avsc, after `_lineage`): `_deleted`, and the deleting change's
commit time, GTID and binlog file/position, the values its Lineage carries. A live row has
`_deleted` false and the rest NULL. `_lineage` stays the change that last wrote the row's values
(a delete writes no values), so a soft target's live rows equal a hard target's table.

What a deleted row is, per replayed row (libs/replay/engine.py ReplayResult):
  * a stored row the batch deleted and did not write before: only its soft-delete columns
    change (a MERGE update of those; its values and `_lineage` are the stored ones);
  * a stored row the batch wrote, then deleted: its last values and their `_lineage`, flagged;
  * a row the batch inserted and deleted (ReplayResult.transient): the same, a new row. A
    table's content does not depend on where batches cut the stream (exactly once).
  * a TRUNCATE TABLE, or a snapshot that starts the table anew: every live row the batch did
    not read is flagged with the batch's first such change (`truncated`), the rows it read as
    above. Old rows are never reused: a key inserted again is a new row with a new `_row_id`.

The replay never sees a flagged row: every read of stored rows keeps live rows only
(pipelines/apply/touched_rows.py live_rows, libs/apply/target_mirror.py), so an UPDATE or DELETE of
a deleted key finds no row (1032: strict stops, idempotent quarantines), as it would on a
replica.
"""
from __future__ import annotations

from typing import Any, Mapping

from libs.contracts.avro_schemas import field_names
from libs.replay.engine import ReplayResult, RowDelete, replay
from libs.replay.lineage import LINEAGE_COLUMN, ROW_ID_COLUMN, Lineage
from libs.contracts.change import Op
from libs.targets.model import Target

SOFT_DELETE_COLUMNS = field_names("soft_delete")
DELETED, DELETED_AT, DELETED_GTID, DELETED_FILE, DELETED_POS = SOFT_DELETE_COLUMNS


def live() -> dict[str, Any]:
    """The soft-delete columns of a live row."""
    return {DELETED: False, DELETED_AT: None, DELETED_GTID: None, DELETED_FILE: None, DELETED_POS: None}


def deleted_by(lineage: Lineage) -> dict[str, Any]:
    """The soft-delete columns of a row the change `lineage` deleted."""
    return {DELETED: True, DELETED_AT: lineage.commit_ts, DELETED_GTID: lineage.gtid,
            DELETED_FILE: lineage.binlog_file, DELETED_POS: lineage.binlog_pos}


def first_truncate(changes) -> dict[str, Any] | None:
    """deleted_by of the first truncate among a table's changes (commit order), if any: what
    flags the stored rows the batch did not read."""
    for change in changes:
        if change.op == Op.TRUNCATE:
            return deleted_by(Lineage.of_change(change))
    return None


def _tombstone(delete: RowDelete) -> dict[str, Any]:
    return {**delete.values, ROW_ID_COLUMN: delete.row_id, LINEAGE_COLUMN: delete.written.to_dict(),
            **deleted_by(delete.lineage)}


class SoftDelete:
    name = "soft_delete"
    columns = "soft_delete"
    live = (DELETED, False)  # the replay never sees a flagged row (module docstring)
    folds = False
    on_executors = True
    mirrors = True  # its deleted rows kept apart (libs/apply/target_mirror.py)
    keyed_copies = False  # (a copy keeps no deleted rows for the whole-table writes)
    takes_job_delete = True

    @staticmethod
    def replay(target, current_rows, changes, *, mode):
        return replay(target, current_rows, changes, mode=mode)

    @staticmethod
    def truncated(changes) -> dict[str, Any] | None:
        """The columns flagging the stored rows a truncate leaves unread (first_truncate)."""
        return first_truncate(changes)

    @staticmethod
    def table_writes(target: Target,
                     result: ReplayResult) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """(upserts, deletes) of a replayed batch, as MERGE source rows (without the op column):
        upserts carry live(); a deleted row whose values the batch wrote is an upsert flagged
        deleted; a stored row only deleted is a delete carrying its soft-delete columns, which a
        MERGE sets on the stored row (module docstring)."""
        upserts = [{**w.to_record(), **live()} for w in result.upserts]
        upserts += [_tombstone(d) for d in (*result.deletes, *result.transient) if d.written is not None]
        deletes = [{ROW_ID_COLUMN: d.row_id, **deleted_by(d.lineage)}
                   for d in result.deletes if d.written is None]
        return upserts, deletes


SOFT_DELETE = SoftDelete()


def is_deleted(row: Mapping[str, Any]) -> bool:
    """A stored row flagged deleted (a hard target's rows have no flag)."""
    return bool(row.get(DELETED))

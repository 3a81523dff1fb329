"""history: current, delete: hard (the default): the Delta table holds the source's rows as the
source holds them now; a deleted row leaves it."""
from __future__ import annotations

from typing import Any

from libs.replay.engine import ReplayResult, replay
from libs.replay.lineage import LINEAGE_COLUMN, ROW_ID_COLUMN
from libs.targets.model import Target


class Current:
    name = "current"
    columns = None
    live = None
    folds = True
    on_executors = True
    mirrors = True
    keyed_copies = True
    takes_job_delete = True

    replay = staticmethod(replay)  # the engine's replay as it is (libs/replay/engine.py)

    @staticmethod
    def truncated(changes) -> None:
        """Nothing flags the rows a truncate leaves: they go."""
        return None

    @staticmethod
    def table_writes(target: Target,
                     result: ReplayResult) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """(upserts, deletes) of a replayed batch, as MERGE source rows (without the op column):
        the upserts' records, and each deleted stored row's `_row_id` and deleting `_lineage`."""
        return ([w.to_record() for w in result.upserts],
                [{ROW_ID_COLUMN: d.row_id, LINEAGE_COLUMN: d.lineage.to_dict()} for d in result.deletes])


CURRENT = Current()

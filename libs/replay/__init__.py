"""Pure-Python replay of row images onto target rows (WL#5092), lineage, WL#3303 decisions.

Public API (what the Spark apply stage calls):
    replay(target, current_rows, changes, *, mode="strict") -> ReplayResult   (engine.py)
    ReplayResult.upserts / .deletes / .change_log / .quarantine / .warnings / .final_table(rows)
    ReplayStopped (exception carrying .error: ReplayError)
    ROW_ID_COLUMN, LINEAGE_COLUMN, Lineage, ChangeLogEntry, make_row_id        (lineage.py)
    decide_logging_format(safe, binlog_format, rlc, slc) -> LoggingDecision      (logging_format.py)
    JSON_DIFF_MARKER, encode_json_diff, apply_json_diff                           (json_diff.py)
"""

from libs.replay.engine import IDEMPOTENT, STRICT, ReplayResult, RowDelete, RowWrite, replay
from libs.replay.errors import ReplayError, ReplayStopped
from libs.replay.json_diff import JSON_DIFF_MARKER, apply_json_diff, encode_json_diff
from libs.replay.lineage import LINEAGE_COLUMN, ROW_ID_COLUMN, ChangeLogEntry, Lineage, make_row_id
from libs.replay.logging_format import LoggingDecision, decide_logging_format

__all__ = [
    "IDEMPOTENT", "JSON_DIFF_MARKER", "LINEAGE_COLUMN", "ROW_ID_COLUMN", "STRICT", "ChangeLogEntry",
    "Lineage", "LoggingDecision", "ReplayError", "ReplayResult", "ReplayStopped", "RowDelete", "RowWrite",
    "apply_json_diff", "decide_logging_format", "encode_json_diff", "make_row_id", "replay",
]

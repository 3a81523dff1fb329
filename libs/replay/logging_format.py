"""WL#3303 engine-controlled logging format: the seed's decision table, as data.

    decide_logging_format(safe, binlog_format, rlc, slc) -> LoggingDecision(format, message)

format is "row", "statement" or "error"; message is "not loggable" for an error, "unsafe" for
the warning rows, else None. RLC/SLC: every table of the statement is row/statement logging
capable (HA_BINLOG_ROW_CAPABLE / HA_BINLOG_STMT_CAPABLE). Used by the simulator (master side)
and, through the target's declared capabilities, by the apply side.
"""

from __future__ import annotations

from typing import NamedTuple

ROW, STATEMENT, ERROR = "row", "statement", "error"
NOT_LOGGABLE, UNSAFE = "not loggable", "unsafe"


class LoggingDecision(NamedTuple):
    format: str
    message: str | None


# (safe, BINLOG_FORMAT, RLC, SLC) -> (log as, error/warning): the seed's table, row by row.
DECISION_TABLE: dict[tuple[bool, str, bool, bool], LoggingDecision] = {
    (True, "STATEMENT", False, False): LoggingDecision(ERROR, NOT_LOGGABLE),
    (True, "STATEMENT", False, True): LoggingDecision(STATEMENT, None),
    (True, "STATEMENT", True, False): LoggingDecision(ERROR, NOT_LOGGABLE),
    (True, "STATEMENT", True, True): LoggingDecision(STATEMENT, None),
    (True, "MIXED", False, False): LoggingDecision(ERROR, NOT_LOGGABLE),
    (True, "MIXED", False, True): LoggingDecision(STATEMENT, None),
    (True, "MIXED", True, False): LoggingDecision(ROW, None),
    (True, "MIXED", True, True): LoggingDecision(STATEMENT, None),
    (True, "ROW", False, False): LoggingDecision(ERROR, NOT_LOGGABLE),
    (True, "ROW", False, True): LoggingDecision(ERROR, NOT_LOGGABLE),
    (True, "ROW", True, False): LoggingDecision(ROW, None),
    (True, "ROW", True, True): LoggingDecision(ROW, None),
    (False, "STATEMENT", False, False): LoggingDecision(ERROR, NOT_LOGGABLE),
    (False, "STATEMENT", False, True): LoggingDecision(STATEMENT, UNSAFE),
    (False, "STATEMENT", True, False): LoggingDecision(ERROR, NOT_LOGGABLE),
    (False, "STATEMENT", True, True): LoggingDecision(STATEMENT, UNSAFE),
    (False, "MIXED", False, False): LoggingDecision(ERROR, NOT_LOGGABLE),
    (False, "MIXED", False, True): LoggingDecision(ERROR, NOT_LOGGABLE),
    (False, "MIXED", True, False): LoggingDecision(ROW, None),
    (False, "MIXED", True, True): LoggingDecision(ROW, None),
    (False, "ROW", False, False): LoggingDecision(ERROR, NOT_LOGGABLE),
    (False, "ROW", False, True): LoggingDecision(ERROR, NOT_LOGGABLE),
    (False, "ROW", True, False): LoggingDecision(ROW, None),
    (False, "ROW", True, True): LoggingDecision(ROW, None),
}


def decide_logging_format(safe: bool, binlog_format: str, rlc: bool, slc: bool) -> LoggingDecision:
    """Look the statement up in the WL#3303 decision table (binlog_format is case-insensitive)."""
    key = (bool(safe), binlog_format.upper(), bool(rlc), bool(slc))
    if key not in DECISION_TABLE:
        raise ValueError(f"binlog_format must be STATEMENT, MIXED or ROW, got {binlog_format!r}")
    return DECISION_TABLE[key]

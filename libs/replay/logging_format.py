"""WL#3303 engine-controlled logging format: the seed's decision table, as data, for both sides.

    decide_logging_format(safe, binlog_format, rlc, slc) -> LoggingDecision(format, message)
    decide_apply_format(logged_as, rlc, slc)             -> LoggingDecision   (the same table)
    on_statement_under_policy(on_statement, policy)      -> "error" | "quarantine"

format is "row", "statement" or "error"; message is "not loggable" for an error, "unsafe" for
the warning rows, else None. RLC/SLC: every table of the statement is row/statement logging
capable (HA_BINLOG_ROW_CAPABLE / HA_BINLOG_STMT_CAPABLE). The simulator (master side) decides
how to log each statement with it; the replay (libs/replay/engine.py) decides with it whether a
target can take a change, RLC/SLC being the target's declared `apply` capabilities.
"""

from __future__ import annotations

from typing import NamedTuple

from libs.targets.model import ON_STATEMENT_QUARANTINE

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


def decide_apply_format(logged_as: str, rlc: bool, slc: bool) -> LoggingDecision:
    """Can a target with capabilities (rlc, slc) take a change that arrived logged as
    `logged_as` ("row" or "statement")? The seed's table read on the replica side.

    The master has already chosen the format, so applying the change is executing it with
    BINLOG_FORMAT = that format: the table's STATEMENT and ROW rows, which give the same answer
    for safe and unsafe statements (unsafe only adds a warning), so the safe row is read. MIXED
    never reaches a replica: it resolves to one of the two per statement. An "error" decision
    is the seed's "not loggable": the change cannot be applied to that target.

    >>> decide_apply_format("statement", rlc=True, slc=False)    # rows-only target
    LoggingDecision(format='error', message='not loggable')
    >>> decide_apply_format("row", rlc=True, slc=False)
    LoggingDecision(format='row', message=None)
    """
    if logged_as not in (ROW, STATEMENT):
        raise ValueError(f"a change is logged as {ROW!r} or {STATEMENT!r}, got {logged_as!r}")
    return decide_logging_format(True, logged_as.upper(), rlc, slc)


POLICY_FAIL, POLICY_QUARANTINE = "fail", "quarantine"  # JobConfig.statement_format_policy


def on_statement_under_policy(on_statement: str, policy: str) -> str:
    """What a not-loggable statement-format change does on a target: the job-wide
    statement_format_policy "quarantine" quarantines it on every target; "fail" keeps each
    target's own `on_statement` ("error" stops, "quarantine" skips it for quarantine). DESIGN.md
    'Logging format': an error naming table, statement and position, or quarantined by
    configuration."""
    if policy == POLICY_QUARANTINE:
        return ON_STATEMENT_QUARANTINE
    if policy != POLICY_FAIL:
        raise ValueError(f"statement_format_policy must be {POLICY_FAIL!r} or {POLICY_QUARANTINE!r}, "
                         f"got {policy!r}")
    return on_statement

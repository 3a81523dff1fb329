"""WL#3303 decision table, row by row as in the seed (004_*, "Decision table"), for both sides:
the master's choice (decide_logging_format, the simulator's) and the replica's (the same table
through decide_apply_format, used by the replay: can a target with the declared capabilities
take a change that arrived logged as row / statement, and what happens when it cannot)."""

import dataclasses

import pytest

from libs.replay import ReplayStopped, decide_logging_format, replay
from libs.replay.logging_format import decide_apply_format, on_statement_under_policy
from replay_builders import Source, rows, target_from_ddl

SEED_TABLE = """
Safe        STATEMENT      N   N   Error: not loggable
Safe        STATEMENT      N   Y                          STMT
Safe        STATEMENT      Y   N   Error: not loggable
Safe        STATEMENT      Y   Y                          STMT
Safe        MIXED          N   N   Error: not loggable
Safe        MIXED          N   Y                          STMT
Safe        MIXED          Y   N                          ROW
Safe        MIXED          Y   Y                          STMT
Safe        ROW            N   N   Error: not loggable
Safe        ROW            N   Y   Error: not loggable
Safe        ROW            Y   N                          ROW
Safe        ROW            Y   Y                          ROW
Unsafe      STATEMENT      N   N   Error: not loggable
Unsafe      STATEMENT      N   Y   Warning: unsafe        STMT
Unsafe      STATEMENT      Y   N   Error: not loggable
Unsafe      STATEMENT      Y   Y   Warning: unsafe        STMT
Unsafe      MIXED          N   N   Error: not loggable
Unsafe      MIXED          N   Y   Error: not loggable
Unsafe      MIXED          Y   N                          ROW
Unsafe      MIXED          Y   Y                          ROW
Unsafe      ROW            N   N   Error: not loggable
Unsafe      ROW            N   Y   Error: not loggable
Unsafe      ROW            Y   N                          ROW
Unsafe      ROW            Y   Y                          ROW
"""


def _expected(line: str):
    words = line.split()
    safe, fmt, rlc, slc = words[0] == "Safe", words[1], words[2] == "Y", words[3] == "Y"
    if "Error:" in line:
        return (safe, fmt, rlc, slc), ("error", "not loggable")
    log_as = {"STMT": "statement", "ROW": "row"}[words[-1]]
    return (safe, fmt, rlc, slc), (log_as, "unsafe" if "Warning:" in line else None)


@pytest.mark.parametrize("line", [l for l in SEED_TABLE.strip().splitlines()])  # noqa: E741 - l: a table line
def test_seed_decision_table_row(line):
    args, expected = _expected(line)
    assert tuple(decide_logging_format(*args)) == expected


def test_format_is_case_insensitive_and_validated():
    assert decide_logging_format(True, "mixed", True, False).format == "row"
    with pytest.raises(ValueError, match="binlog_format"):
        decide_logging_format(True, "NONE", True, True)


# ---- the replica side -----------------------------------------------------------------------

# logged as, RLC, SLC -> the seed's cell for (Safe, BINLOG_FORMAT = logged as, RLC, SLC)
APPLY_CELLS = """
row        N N  error
row        N Y  error
row        Y N  row
row        Y Y  row
statement  N N  error
statement  N Y  statement
statement  Y N  error
statement  Y Y  statement
"""


@pytest.mark.parametrize("line", APPLY_CELLS.strip().splitlines())
def test_apply_decision_reads_the_seed_table(line):
    logged_as, rlc, slc, cell = line.split()
    decision = decide_apply_format(logged_as, rlc == "Y", slc == "Y")
    assert decision.format == cell
    assert decision.message == ("not loggable" if cell == "error" else None)


def test_apply_decision_takes_only_the_two_formats_a_binlog_holds():
    with pytest.raises(ValueError, match="logged as"):
        decide_apply_format("mixed", True, True)


PK = "CREATE TABLE test.t (id int NOT NULL, name varchar(10), qty int, PRIMARY KEY (id))"
SRC = Source("test", "t", ["id", "name", "qty"])
# target `apply` (its declared capabilities; the seed's engines: ndbcluster row-only, blackhole
# statement-only, myisam both), its on_statement, the job's statement_format_policy, the change
# -> what the replica does. "stop": the batch stops (ReplayStopped, kind statement_format).
REPLICA_TABLE = [
    ("rows", "error", "fail", "row", "applied"),
    ("rows", "error", "fail", "statement", "stop"),  # Safe STATEMENT Y N: Error
    ("rows", "quarantine", "fail", "statement", "quarantined_statement"),
    ("rows", "error", "quarantine", "statement", "quarantined_statement"),  # the job's policy wins
    ("statements", "error", "fail", "statement", "statement_not_executed"),  # Safe STATEMENT N Y: STMT
    ("statements", "error", "fail", "row", "stop"),  # Safe ROW N Y: Error
    ("statements", "quarantine", "quarantine", "row", "stop"),  # a row change is never quarantined
    ("both", "error", "fail", "row", "applied"),  # Safe ROW Y Y: ROW
    ("both", "error", "fail", "statement", "statement_not_executed"),  # Safe STATEMENT Y Y: STMT
    ("both", "error", "quarantine", "statement", "statement_not_executed"),
]


@pytest.mark.parametrize("apply,on_statement,policy,logged_as,outcome", REPLICA_TABLE,
                         ids=["-".join(r) for r in REPLICA_TABLE])
def test_what_the_replica_does(apply, on_statement, policy, logged_as, outcome):
    target = target_from_ddl(PK, apply=apply, on_statement=on_statement)
    # what pipelines/apply/applier.py DeltaApplier._effective does with the job's policy
    target = dataclasses.replace(target, on_statement=on_statement_under_policy(target.on_statement, policy))
    change = SRC.insert({"id": 2, "name": "b", "qty": 1}) if logged_as == "row" else \
        SRC.change("statement", statement="UPDATE t SET qty = qty + 1")
    current = rows(target, (1, "a", 1))
    if outcome == "stop":
        with pytest.raises(ReplayStopped, match="WL#3303") as stopped:
            replay(target, current, [change])
        assert stopped.value.error.kind == "statement_format"
        return
    result = replay(target, current, [change])
    assert result.counts() == {outcome: 1}
    assert len(result.upserts) == (1 if outcome == "applied" else 0) and result.deletes == ()
    quarantined = ["statement_format"] if outcome.startswith("quarantined") else []
    assert [e.kind for e in result.quarantine] == quarantined


def test_statement_format_policy_values():
    assert on_statement_under_policy("error", "fail") == "error"
    assert on_statement_under_policy("quarantine", "fail") == "quarantine"
    assert on_statement_under_policy("error", "quarantine") == "quarantine"
    with pytest.raises(ValueError, match="statement_format_policy"):
        on_statement_under_policy("error", "ignore")

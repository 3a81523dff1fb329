"""WL#3303 decision table, row by row as in the seed."""

import pytest

from libs.replay import decide_logging_format

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


@pytest.mark.parametrize("line", [l for l in SEED_TABLE.strip().splitlines()])
def test_seed_decision_table_row(line):
    args, expected = _expected(line)
    assert tuple(decide_logging_format(*args)) == expected


def test_format_is_case_insensitive_and_validated():
    assert decide_logging_format(True, "mixed", True, False).format == "row"
    with pytest.raises(ValueError, match="binlog_format"):
        decide_logging_format(True, "NONE", True, True)

"""What a test draws a run: a random seed, or which of its row modes it runs. Drawn from the
system's entropy unless the environment names it (to repeat a printed run, or to run them all);
the test prints the seed with its variable's name, and a mode is in the test's id."""
from __future__ import annotations

import os
import random

ROW_MODES = "CDC_ROW_MODES"  # "all", or one mode as in a test id ("NO_LOG-MINIMAL")


def drawn_seed(variable: str) -> int:
    return int(os.environ.get(variable) or random.SystemRandom().randrange(2**31))


def drawn_modes(modes: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """The (binlog_row_metadata, binlog_row_image) pairs a mode-matrix test runs: one drawn a run
    (every pair is hit over a few CI runs; each pair costs a server round and a replication),
    all of them with CDC_ROW_MODES=all, or the one it names when the test has it."""
    wanted = os.environ.get(ROW_MODES, "")
    if wanted == "all":
        return list(modes)
    named = [m for m in modes if "-".join(m) == wanted]
    # drawn at collection: pytest-xdist's workers must collect the same tests, so they draw from
    # their run's shared id
    run = os.environ.get("PYTEST_XDIST_TESTRUNUID")
    return named or [(random.Random(f"{run}{modes}") if run else random.SystemRandom()).choice(modes)]

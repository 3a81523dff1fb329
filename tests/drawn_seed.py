"""A test's random seed: the environment variable's value when set (to repeat a printed run),
else drawn from the system's entropy. The test prints it with the variable's name."""
from __future__ import annotations

import os
import random


def drawn_seed(variable: str) -> int:
    return int(os.environ.get(variable) or random.SystemRandom().randrange(2**31))

"""The one place that reads a target's `history` and `delete` to know its mode (mode.py)."""
from __future__ import annotations

from libs.apply.modes.current import CURRENT
from libs.apply.modes.mode import TargetMode
from libs.apply.modes.scd2 import SCD2
from libs.apply.modes.soft_delete import SOFT_DELETE
from libs.targets.model import HISTORY_SCD2, Target

MODES: tuple[TargetMode, ...] = (CURRENT, SOFT_DELETE, SCD2)


def mode_of(target: Target) -> TargetMode:
    if target.history == HISTORY_SCD2:
        return SCD2
    return SOFT_DELETE if target.soft_delete else CURRENT

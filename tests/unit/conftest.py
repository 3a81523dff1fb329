"""tests/unit runs beside the Spark and integration tiers at idle CPU priority (scripts/dev):
a property example may wait for a core, so no wall-clock deadline per example (a hang in
a codec is caught by CPU-time alarms, tests/unit/codec_fuzz/test_regressions.py)."""
from hypothesis import settings

settings.register_profile("unit-tier", deadline=None)
settings.load_profile("unit-tier")

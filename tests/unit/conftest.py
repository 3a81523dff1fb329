"""tests/unit runs beside the Spark and integration tiers at idle CPU priority (scripts/dev):
a property example may wait for a core, so no wall-clock deadline per example (a hang in
a codec is caught by CPU-time alarms, tests/unit/codec_fuzz/test_regressions.py), and no
wall-clock health check on how fast examples are drawn either: under a loaded machine a draw
waited 52 s and 123 s for a core (a fresh clone's suite beside other runs, load 11-13), and
hypothesis failed the test for it (HealthCheck.too_slow) though every example it ran passed."""
from hypothesis import HealthCheck, settings

settings.register_profile("unit-tier", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("unit-tier")

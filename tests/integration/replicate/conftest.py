"""Fixtures for the suites under tests/integration/replicate.

`poisoned_stream`: the unit tests' poisoned frame stream (tests/unit/stream/test_hostile_frames.py),
for test_poisoned_frame.py.
"""
from tests.unit.stream.test_hostile_frames import poisoned_stream  # noqa: F401 - a pytest fixture

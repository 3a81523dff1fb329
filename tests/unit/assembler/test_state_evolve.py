"""libs/stream/assembler/state.py evolve(): the fast dataclasses.replace of the assembler's hot path
behaves like it (new instance, original unchanged, still frozen, unknown fields rejected)."""

import dataclasses

import pytest

from libs.stream.assembler.state import AssemblerState, OpenGroup, evolve


def test_evolve_is_replace_for_the_state_classes():
    group = OpenGroup("f:4", "f", 4, gtid="0-1-1")
    state = AssemblerState("s1", open=group)
    moved = evolve(state, last_file="f", last_pos=4, open=evolve(group, event_count=3))
    assert moved == dataclasses.replace(state, last_file="f", last_pos=4,
                                        open=dataclasses.replace(group, event_count=3))
    assert state.last_file is None and state.open.event_count == group.event_count != 3
    with pytest.raises(dataclasses.FrozenInstanceError):
        moved.last_pos = 5
    with pytest.raises(TypeError, match="no_such"):
        evolve(state, no_such=1)

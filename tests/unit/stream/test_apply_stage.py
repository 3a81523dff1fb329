"""The sink's contract with the apply stage (pipelines/stages/apply_stage.py): the applier
provides every step the sink calls, and a wrapper forwards each one, not only the call."""
from __future__ import annotations

import inspect

from pipelines.apply.applier import DeltaApplier
from pipelines.stages.apply_stage import ApplyStage, ForwardingApplyStage

STEPS = ("prepare_batch", "plan_fusion", "__call__", "record_caught_up")


class _Recorder:
    decode_hints = "hints"
    last_batch = "last"

    def __init__(self):
        self.calls = []

    def prepare_batch(self, *args):
        self.calls.append(("prepare_batch", args))
        return "prepared"

    def plan_fusion(self, *args):
        self.calls.append(("plan_fusion", args))
        return "plan"

    def __call__(self, *args):
        self.calls.append(("__call__", args))
        return {"t": 1}

    def record_caught_up(self, *args):
        self.calls.append(("record_caught_up", args))


def test_the_applier_has_every_step_with_the_protocols_parameters():
    for step in STEPS:
        declared = list(inspect.signature(getattr(ApplyStage, step)).parameters)
        assert list(inspect.signature(getattr(DeltaApplier, step)).parameters) == declared, step
        assert list(inspect.signature(getattr(ForwardingApplyStage, step)).parameters) == declared, step
    applier_init = inspect.signature(DeltaApplier.__init__).parameters
    assert "tables_read" in applier_init  # given by its maker, never assigned by the sink


def test_a_wrapper_forwards_every_step_and_attribute():
    inner = _Recorder()
    wrapper = ForwardingApplyStage(inner)
    assert (wrapper.decode_hints, wrapper.last_batch) == ("hints", "last")
    assert wrapper.prepare_batch("spark", ["t"], 3, ["ddl"]) == "prepared"
    assert wrapper.plan_fusion("spark", 3, ["c"], True) == "plan"
    assert wrapper("df", 3, {"s": 1}, "fused") == {"t": 1}
    assert wrapper.record_caught_up("spark", 3, {"s": 2}) is None
    assert inner.calls == [("prepare_batch", ("spark", ["t"], 3, ["ddl"])),
                           ("plan_fusion", ("spark", 3, ["c"], True)),
                           ("__call__", ("df", 3, {"s": 1}, "fused")),
                           ("record_caught_up", ("spark", 3, {"s": 2}))]

"""libs/runtime/step_clock.py: a batch's seconds per step, with a clock the test moves, and the
split as the job's progress line and its Prometheus counter show it (pipelines/job/job_metrics.py)."""
import pytest

from libs.runtime.step_clock import OTHER, STEPS, BatchCost, StepClock, step_line, with_other
from pipelines.job.job_metrics import JobMetrics
from tests.unit.foundation.test_job_metrics_gauges import T, counters, progress


class Ticks:
    """A clock that moves only when told."""

    def __init__(self):
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def timed(clock: StepClock, ticks: Ticks, name: str, seconds: float, fail: bool = False) -> None:
    with clock.step(name):
        ticks.now += seconds
        if fail:
            raise RuntimeError("the step's work failed")


def test_each_step_sums_its_seconds_and_take_starts_the_next_batch():
    ticks = Ticks()
    clock = StepClock(ticks)
    timed(clock, ticks, "decode", 1.5)
    timed(clock, ticks, "targets", 2.0)
    timed(clock, ticks, "targets", 0.5)  # two target writes in one batch: one step
    ticks.now += 9.0  # outside any step: not counted
    assert clock.take() == {"decode": 1.5, "targets": 2.5}
    assert clock.take() == {}


def test_a_failing_step_still_counts_its_seconds_and_raises():
    ticks = Ticks()
    clock = StepClock(ticks)
    with pytest.raises(RuntimeError, match="failed"):
        timed(clock, ticks, "replay", 3.0, fail=True)
    assert clock.take() == {"replay": 3.0}


def test_an_unknown_step_name_is_refused_naming_the_list():
    with pytest.raises(ValueError, match="unknown batch step 'reading'.*STEPS"):
        with StepClock().step("reading"):
            pass


@pytest.mark.parametrize("seconds, trigger_s, expected", [
    ({"targets": 2.0, "assemble": 1.0}, 3.5, {"assemble": 1.0, "targets": 2.0, OTHER: 0.5}),  # STEPS order
    ({"decode": 1.0}, 0.9, {"decode": 1.0, OTHER: 0.0}),  # Spark's milliseconds under our clock: 0, not < 0
    ({}, 0.2, {OTHER: 0.2}),                              # a batch the sink never ran (idle trigger)
])
def test_with_other_orders_the_steps_and_adds_the_trigger_s_rest(seconds, trigger_s, expected):
    out = with_other(seconds, trigger_s)
    assert list(out) == list(expected) and out == pytest.approx(expected)


def test_the_line_leaves_out_steps_under_a_twentieth_of_a_second():
    assert step_line({"assemble": 1.23, "prepare": 0.01, "decode": 0.05, OTHER: 0.3}) == \
        "assemble 1.2, decode 0.1, other 0.3"


def test_the_job_prints_a_batch_s_split_and_sums_it_per_step_for_prometheus(capsys):
    metrics = JobMetrics(clock=lambda: T)
    ticks = Ticks()
    metrics.steps = StepClock(ticks)
    for batch_id in (0, 1):
        metrics.read(batch_id, [counters(T - 1)])
        timed(metrics.steps, ticks, "assemble", 1.0)
        timed(metrics.steps, ticks, "targets", 2.0)
        metrics.batch(batch_id, {}, {}, {}, cost=BatchCost(metrics.steps.take(), (13, None)[batch_id]))
        metrics.progress(progress(batch_id, T, 4.0, T - 1))
    lines = capsys.readouterr().err.splitlines()
    assert lines[0].endswith("batch 0: 5 records in 4.0 s, Kafka -> Delta 5.0 s; 13 Spark jobs; "
                             "steps (s): assemble 1.0, targets 2.0, other 1.0"), lines
    # a Spark whose job counter cannot be read (pipelines/job/batch_jobs.py): no count, not 0
    assert lines[1].endswith("batch 1: 5 records in 4.0 s, Kafka -> Delta 5.0 s; "
                             "steps (s): assemble 1.0, targets 2.0, other 1.0"), lines
    family = next(f for f in metrics.families() if f.name == "cdc_batch_step_seconds")
    assert {s.labels["step"]: s.value for s in family.samples if s.name.endswith("_total")} == \
        {"assemble": 2.0, "targets": 4.0, OTHER: 2.0}
    jobs = next(f for f in metrics.families() if f.name == "cdc_batch_spark_jobs")
    assert [s.value for s in jobs.samples if s.name.endswith("_total")] == [13]


def test_every_step_the_job_times_is_a_known_step():
    """The names the sink and the apply stage time are STEPS' (a typo would raise mid-batch)."""
    import pathlib
    import re
    root = pathlib.Path(__file__).resolve().parents[3]
    used = set()
    for path in [*root.glob("pipelines/**/*.py")]:
        used |= set(re.findall(r"steps\.step\(\"(\w+)\"\)", path.read_text()))
    assert used == set(STEPS), sorted(used ^ set(STEPS))

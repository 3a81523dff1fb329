"""The mode-matrix tests' draw (tests/drawn.py): one mode a run, all or the named one on request,
and the same draw in every pytest-xdist worker of a run."""
from tests.drawn import ROW_MODES, drawn_modes

MODES = [("NO_LOG", "MINIMAL"), ("NO_LOG", "FULL"), ("FULL", "MINIMAL")]


def test_one_mode_is_drawn_and_every_mode_is_hit(monkeypatch):
    monkeypatch.delenv(ROW_MODES, raising=False)
    monkeypatch.delenv("PYTEST_XDIST_TESTRUNUID", raising=False)
    draws = [drawn_modes(MODES) for _ in range(200)]
    assert all(len(d) == 1 and d[0] in MODES for d in draws)
    assert {d[0] for d in draws} == set(MODES)


def test_all_or_the_named_mode_on_request(monkeypatch):
    monkeypatch.setenv(ROW_MODES, "all")
    assert drawn_modes(MODES) == MODES
    monkeypatch.setenv(ROW_MODES, "NO_LOG-FULL")
    assert drawn_modes(MODES) == [("NO_LOG", "FULL")]
    monkeypatch.setenv(ROW_MODES, "FULL-FULL")  # not one of this test's: drawn as usual
    assert drawn_modes(MODES)[0] in MODES


def test_xdist_workers_of_one_run_draw_the_same(monkeypatch):
    monkeypatch.delenv(ROW_MODES, raising=False)
    monkeypatch.setenv("PYTEST_XDIST_TESTRUNUID", "run-a")
    first = drawn_modes(MODES)
    assert all(drawn_modes(MODES) == first for _ in range(20))
    runs = set()
    for n in range(60):
        monkeypatch.setenv("PYTEST_XDIST_TESTRUNUID", f"run-{n}")
        runs.add(drawn_modes(MODES)[0])
    assert runs == set(MODES)

"""cdc-replicate's stop on SIGINT/SIGTERM (pipelines/job/stopping.py), without Spark: the first
signal asks for a stop (no new batch begins), the second abandons the running batch with one
line; the line of a stop names the last committed batch."""
import os
import signal

import pytest

from pipelines.job.stopping import StopRequested, StopSignals, stopped_line


def test_the_first_signal_asks_the_second_abandons_with_one_line():
    abandoned, before = [], signal.getsignal(signal.SIGINT)
    signals = StopSignals("cdc-replicate", abandon=abandoned.append).install()
    running = {"batch": 7}
    signals.running = lambda: running["batch"]
    try:
        signals.check(7)  # no stop asked: the batch begins
        os.kill(os.getpid(), signal.SIGTERM)
        assert signals.requested.is_set() and abandoned == []
        with pytest.raises(StopRequested):
            signals.check(8)
        os.kill(os.getpid(), signal.SIGINT)
        running["batch"] = None
        os.kill(os.getpid(), signal.SIGINT)
    finally:
        signals.restore()
    assert abandoned == ["cdc-replicate: stopped during batch 7 (abandoned: a restart runs it again)",
                         "cdc-replicate: stopped between batches"]
    assert signal.getsignal(signal.SIGINT) is before  # restored


def test_the_stop_line_names_the_last_committed_batch():
    assert stopped_line("cdc-replicate", 12) == "cdc-replicate: stopped after batch 12"
    assert stopped_line("cdc-replicate", None) == "cdc-replicate: stopped before its first batch"

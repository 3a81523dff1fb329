"""Ride through restarts (issue #56 item 5), the suite's short version of bench/chaos_restarts.py:
the same code, with one kill -9 of each kind (the job, the shipper, the broker, mariadbd started
again at once on its data dir) in a drawn order while the demo workload writes. Then every Delta
table equals the server's `SELECT *`, the change log holds each of the server's row changes once
(against `mariadb-binlog -vv`), `_cdc_progress` is at the server's last GTID, nothing was
quarantined, and no process ended by itself. A private server and broker: both are killed.

Seed: CDC_CHAOS_SEED (default: drawn and printed, so a failing run can be repeated).
"""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from tests.drawn import drawn_seed

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[3]


def _bench(name: str):
    spec = importlib.util.spec_from_file_location(f"bench.{name}", ROOT / "bench" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def test_one_kill_of_each_process_is_ridden_through(tmp_path, request):
    chaos = _bench("chaos_restarts")
    seed = drawn_seed("CDC_CHAOS_SEED")
    print(f"\nchaos: seed {seed} (CDC_CHAOS_SEED={seed} repeats the schedule)")
    opts = chaos.Options(tmp_path, events=1, seed=seed, workload="demo", rows=2_000, rate=5.0,
                         gap_s=(1.0, 4.0))
    # the suite's Spark session only once the killed processes are gone (no idle JVM beside them)
    figures = chaos.run(opts, spark_of=lambda: request.getfixturevalue("spark"))
    assert dict(figures.kills) == {kind: 1 for kind in chaos.KINDS}
    assert figures.ended_by_themselves == []
    assert figures.all_equal and len(figures.tables) == 5, figures.tables
    assert figures.binlog_changes > 0
    assert (figures.twice, figures.missing, figures.extra) == (0, 0, 0)
    assert figures.change_log >= figures.binlog_changes
    assert figures.progress_at_server_gtid
    assert figures.quarantined == 0

"""`scripts/dev run --mariadb` (pipelines/onboard_demo.py) end to end, small: its own MariaDB and
broker, a workload, the snapshot, the job following, then every Delta table compared with the
server's SELECT by the demo itself. The demo's verdict is checked here against its own lines."""
from __future__ import annotations

import pytest

from libs.local.demo_database import TABLES
from pipelines.onboard_demo import main

pytestmark = pytest.mark.integration


def test_the_onboarding_demo_ends_with_every_table_equal(spark, capsys):
    assert main(["--rows", "3000", "--seconds", "8", "--pause", "0.005"]) == 0
    out = capsys.readouterr().out
    for table in TABLES:
        line = next(l for l in out.splitlines()  # noqa: E741 - l: a line of the output
                    if l.startswith(f"cdc-onboard-demo: demo.{table}: server "))
        assert line.endswith(": equal"), line
    assert "workload stopped after" in out and "every Delta table equals the server's" in out

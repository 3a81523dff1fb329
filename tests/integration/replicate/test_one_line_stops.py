"""cdc-replicate stopped by a real problem of the data (a change to a table nobody declared)
ends with one plain line naming table, GTID and position, exit 1, and no Java or Python trace
nor a warning per micro-batch."""
import subprocess
import sys

import pytest

from libs.paths import REPO_ROOT
from tests.integration.replicate.test_poisoned_frame import produce
from tests.unit.codec_fuzz.hostile import MYSQL8_FILE
from tests.unit.stream.test_stream_assembly import frames_of

pytestmark = pytest.mark.integration


def test_a_change_to_an_undeclared_table_stops_the_command_with_one_line(kafka_broker, topic, tmp_path):
    produce(kafka_broker.bootstrap, topic, frames_of(str(MYSQL8_FILE)))
    ddl = tmp_path / "targets.sql"
    ddl.write_text("CREATE TABLE nowhere.declared (id INT PRIMARY KEY);\n")
    run = subprocess.run(
        [sys.executable, "-m", "pipelines.replicate", "--bootstrap", kafka_broker.bootstrap, "--topic", topic,
         "--target-ddl", str(ddl), "--delta-root", str(tmp_path / "delta"),
         "--checkpoint", str(tmp_path / "ckpt"), "--available-now"],
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=300)
    assert run.returncode == 1, run.stderr[-3000:]
    lines = run.stderr.strip().splitlines()
    assert lines[-1].startswith("cdc-replicate: ") and "no target declaration" in lines[-1], lines[-1]
    assert MYSQL8_FILE.name in lines[-1]
    assert not [line for line in lines if "Traceback" in line or line.startswith("\tat ")], run.stderr[-3000:]
    assert "Warning" not in run.stderr, run.stderr[-3000:]  # no warning printed per micro-batch

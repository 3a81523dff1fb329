"""cdc-replicate stopped by a real problem ends with one plain line naming its cause and exit 1;
the whole output stays under 5 lines (no Java or Python trace, no warning per micro-batch, no
Spark start-up noise) unless --verbose asks for the traces (issue #20 item 6)."""
import subprocess
import sys

import pytest

from libs.runtime.paths import REPO_ROOT
from tests.integration.short_jobs import short_job_env
from tests.integration.replicate.test_poisoned_frame import produce
from tests.unit.codec_fuzz.hostile import MYSQL8_FILE
from tests.unit.stream.test_stream_assembly import frames_of

pytestmark = pytest.mark.integration


def replicate(kafka_broker, topic, tmp_path, *extra: str, delta_root=None) -> subprocess.CompletedProcess:
    ddl = tmp_path / "targets.sql"
    ddl.write_text("CREATE TABLE nowhere.declared (id INT PRIMARY KEY);\n")
    return subprocess.run(
        [sys.executable, "-m", "pipelines.replicate", "--bootstrap", kafka_broker.bootstrap, "--topic", topic,
         "--target-ddl", str(ddl), "--delta-root", str(delta_root or tmp_path / "delta"),
         "--checkpoint", str(tmp_path / "ckpt"), "--available-now", *extra],
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=300, env=short_job_env())


def traces(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if "Traceback" in line or line.startswith("\tat ")]


def test_a_change_to_an_undeclared_table_stops_the_command_with_one_line(kafka_broker, topic, tmp_path):
    produce(kafka_broker.bootstrap, topic, frames_of(str(MYSQL8_FILE)))
    run = replicate(kafka_broker, topic, tmp_path)
    assert run.returncode == 1, run.stderr[-3000:]
    lines = run.stderr.strip().splitlines()
    assert lines[-1].startswith("cdc-replicate: ") and "no target declaration" in lines[-1], lines[-1]
    assert MYSQL8_FILE.name in lines[-1]
    assert not traces(run.stderr), run.stderr[-3000:]
    assert "Warning" not in run.stderr, run.stderr[-3000:]  # no warning printed per micro-batch
    assert len(lines) <= 5, run.stderr  # the JVM's incubator-module line, "reading ...", the stop

    verbose = replicate(kafka_broker, topic, tmp_path, "--verbose")
    assert verbose.returncode == 1
    assert traces(verbose.stderr), verbose.stderr[-3000:]
    assert verbose.stderr.strip().splitlines()[-1] == lines[-1]


def test_an_unexpected_failure_is_one_line_naming_its_innermost_error(kafka_broker, topic, tmp_path):
    produce(kafka_broker.bootstrap, topic, frames_of(str(MYSQL8_FILE)))
    not_a_dir = tmp_path / "file"
    not_a_dir.write_text("")
    run = replicate(kafka_broker, topic, tmp_path, "--conf", str(_conf(tmp_path)),
                    delta_root=not_a_dir / "delta")
    assert run.returncode == 1, run.stderr[-3000:]
    lines = run.stderr.strip().splitlines()
    assert lines[-1].startswith("cdc-replicate: failed: ") and "--verbose" in lines[-1], run.stderr[-3000:]
    assert not traces(run.stderr) and len(lines) <= 5, run.stderr[-3000:]


def _conf(tmp_path):
    """Changes of undeclared tables ignored, so the batch reaches its first Delta write."""
    conf = tmp_path / "job.yaml"
    conf.write_text("undeclared_tables: ignore\n")
    return conf

"""Kafka security end to end (issue #56 items 1 and 4; README "Security"): the project's broker
with a SASL_SSL listener (SCRAM-SHA-512, client certificates required, every certificate made by
the test), a simulated binlog file shipped through it by `cdc-ship --from-file` and replicated
by `cdc-replicate` to Delta, every table equal to the simulator's; the process list while they
run, both programs' output, Spark's event log and every file the job wrote hold none of the
test's secrets. A wrong password, an unknown CA and a PLAINTEXT client are one line each."""
from __future__ import annotations

import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pytest
from deltalake import DeltaTable, QueryBuilder

from libs.local.kafka_broker import (BrokerConfig, SaslSslListener, add_scram_user, free_port, free_port_pair,
                                     start, stop)
from libs.runtime.paths import CORPUS_DIR, KAFKA_JARS_DIR, REPO_ROOT
from libs.settings.kafka_security import KafkaSecurity
from libs.shipper.kafka_sink import ensure_topic
from libs.simulator.compare import compare_table, load_expected
from libs.simulator.schema import replica_ddl, standard_tables
from libs.source.errors import ShipError
from libs.targets import load_targets
from pipelines import simulate
from tests.integration.security.certificates import Pki, make_pki
from tests.integration.short_jobs import short_job_env

pytestmark = pytest.mark.integration

USER = "cdc"
# A quote and a backslash: the JAAS line's quoting is exercised end to end. The greps look for
# the parts without them (JSON and Java escape those characters).
PASSWORD, PASSWORD_MARK = 'Scr4m-TEST-pw "q\\z', "Scr4m-TEST-pw"
PASSPHRASE = "k3y-TEST-passphrase"
DATABASE, SOURCE = "sim", "sim"
CORPUS_FILE = CORPUS_DIR / "mariadb" / "row_full" / "mdb-bin.000001"  # what the refused shippers would ship


@dataclass(frozen=True)
class Secured:
    broker: BrokerConfig
    pki: Pki
    work: Path
    password_file: Path
    passphrase_file: Path

    @property
    def bootstrap(self) -> str:
        return self.broker.sasl_ssl_bootstrap

    def secrets(self) -> list[str]:
        """What must show nowhere: the SASL password, the key's passphrase, the key itself."""
        key_lines = self.pki.client_key.read_text().splitlines()
        return [PASSWORD_MARK, PASSPHRASE, key_lines[1][:40]]

    def ship(self, binlog: Path, topic: str, source: str, *security: str) -> list[str]:
        """cdc-ship's command line (`security`: its --kafka-* options)."""
        return [sys.executable, "-m", "pipelines.ship", "--from-file", str(binlog), "--bootstrap",
                self.bootstrap, "--topic", topic, "--source", source, *security]

    def ship_security(self, ca: Path | None = None, password_file: Path | None = None) -> list[str]:
        return ["--kafka-security-protocol", "SASL_SSL", "--kafka-sasl-mechanism", "SCRAM-SHA-512",
                "--kafka-sasl-username", USER,
                "--kafka-sasl-password-file", str(password_file or self.password_file),
                "--kafka-ca-file", str(ca or self.pki.ca), "--kafka-cert-file", str(self.pki.client_cert),
                "--kafka-key-file", str(self.pki.client_key),
                "--kafka-key-password-file", str(self.passphrase_file)]


def _private(path: Path, text: str) -> Path:
    path.write_text(text)
    path.chmod(0o600)
    return path


@pytest.fixture(scope="module")
def secured(tmp_path_factory):
    work = tmp_path_factory.mktemp("sasl-ssl")
    pki = make_pki(work / "pki", PASSPHRASE)
    port = free_port_pair()
    secure_port = next(p for p in iter(free_port, None) if p not in (port, port + 1))
    broker = BrokerConfig(jars_dir=KAFKA_JARS_DIR, data_dir=work / "kafka", port=port,
                          sasl_ssl=SaslSslListener(secure_port, pki.broker, PASSPHRASE, client_ca_pem=pki.ca))
    start(broker)
    try:
        add_scram_user(broker, USER, PASSWORD)
        ready = Secured(broker, pki, work, _private(work / "sasl-password", PASSWORD + "\n"),
                        _private(work / "key-passphrase", PASSPHRASE))
        _wait_login(ready)
        yield ready
    finally:
        stop(broker)


def _wait_login(s: Secured, timeout: float = 30.0) -> None:
    """Until the SCRAM user logs in (its credential reaches the broker's listener a moment after the
    admin call returns)."""
    auth = KafkaSecurity(security_protocol="SASL_SSL", sasl_mechanism="SCRAM-SHA-512", sasl_username=USER,
                         sasl_password_file=str(s.password_file), ca_file=str(s.pki.ca),
                         cert_file=str(s.pki.client_cert), key_file=str(s.pki.client_key),
                         key_password_file=str(s.passphrase_file)).resolve({})
    deadline = time.monotonic() + timeout
    while True:
        try:
            ensure_topic(s.bootstrap, "login-check", auth=auth, timeout=5)
            return
        except ShipError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)


def _ps() -> set[str]:
    """Every process's command line (what `ps` shows any user of the machine)."""
    out = subprocess.run(["ps", "-e", "-ww", "-o", "args="], capture_output=True, text=True).stdout
    return set(out.splitlines())


def _run_watched(argv: list[str], log: Path, env: dict[str, str], timeout: float
                 ) -> tuple[int, str, set[str]]:
    """Run `argv` to its end, its output to `log`; the command lines seen while it ran."""
    seen: set[str] = set()
    with open(log, "wb") as out:
        proc = subprocess.Popen(argv, cwd=REPO_ROOT, stdout=out, stderr=subprocess.STDOUT, env=env)
        deadline = time.monotonic() + timeout
        while proc.poll() is None:
            seen |= _ps()
            if time.monotonic() > deadline:
                proc.kill()
                raise AssertionError(f"{argv[:3]} running after {timeout:.0f}s: {log.read_text()[-3000:]}")
            time.sleep(0.5)
    return proc.returncode, log.read_text(errors="replace"), seen


def _simulated_binlog(work: Path) -> tuple[Path, Path, Path]:
    """A simulated master's binlog file, its expected tables and the replica's DDL."""
    binlog, expected, ddl = work / "sim-bin.000001", work / "expected", work / "targets.sql"
    assert simulate.main(["--out", str(binlog), "--expected", str(expected), "--transactions", "60",
                          "--row-image", "minimal", "--ddl-rate", "0", "--seed", "5"]) == 0
    ddl.write_text(replica_ddl(standard_tables("mariadb"), DATABASE))
    return binlog, expected, ddl


def _job_conf(s: Secured, path: Path, ca: Path) -> Path:
    """The job's kafka_security: the password from the environment (CDC_KAFKA_SASL_PASSWORD), the
    key's passphrase from its file."""
    path.write_text(f"kafka_security:\n  security_protocol: SASL_SSL\n  sasl_mechanism: SCRAM-SHA-512\n"
                    f"  sasl_username: {USER}\n  ca_file: {ca}\n  cert_file: {s.pki.client_cert}\n"
                    f"  key_file: {s.pki.client_key}\n  key_password_file: {s.passphrase_file}\n")
    return path


def _job_env(password: str, event_log: Path | None = None) -> dict[str, str]:
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "CDC_KAFKA_SASL_PASSWORD": password}
    if event_log is not None:  # Spark's own event log, uncompressed, for the grep
        env["PYSPARK_SUBMIT_ARGS"] = (f"--conf spark.eventLog.enabled=true --conf spark.eventLog.dir="
                                      f"{event_log.as_uri()} --conf spark.eventLog.compress=false "
                                      f"pyspark-shell")
    return short_job_env(env)


def _replicate(s: Secured, topic: str, work: Path, ddl: Path, ca: Path | None = None) -> list[str]:
    conf = _job_conf(s, work / "job.yaml", ca or s.pki.ca)
    return [sys.executable, "-m", "pipelines.replicate", "--conf", str(conf),
            "--bootstrap", s.bootstrap, "--topic", topic, "--target-ddl", str(ddl),
            "--delta-root", str(work / "delta"), "--checkpoint", str(work / "checkpoint"), "--available-now"]


def _differences(expected: Path, ddl: Path, delta_root: Path) -> list[str]:
    """Each table against the simulator's expected table (the embedded run's comparison, read with
    delta-rs: no Spark session in this process)."""
    manifest, rows = load_expected(expected)
    catalog = load_targets(None, [str(ddl)])
    out = []
    for name, entry in sorted(manifest["tables"].items()):
        path = delta_root / catalog.get(*name.split(".", 1)).delta_table
        reader = QueryBuilder().register("t", DeltaTable(str(path))).execute("SELECT * FROM t")
        result = compare_table(name, entry, rows[name], pa.table(reader.read_all()).to_pylist())
        out += [] if result.equal else [result.summary()]
    return out


def _files_holding(root: Path, secrets: list[str]) -> list[str]:
    return [f"{path}: {secret}" for path in sorted(root.rglob("*")) if path.is_file()
            for secret in secrets if secret.encode() in path.read_bytes()]


def test_shipper_and_job_through_sasl_ssl_give_equal_tables_and_leave_no_secret_anywhere(secured, topic,
                                                                                         tmp_path):
    binlog, expected, ddl = _simulated_binlog(tmp_path)
    ship = secured.ship(binlog, topic, SOURCE, *secured.ship_security())
    rc, shipped, seen = _run_watched(ship, tmp_path / "ship.log", {**os.environ, "PYTHONUNBUFFERED": "1"},
                                     120)
    assert rc == 0 and f"cdc-ship {SOURCE}: shipped" in shipped, shipped

    events = tmp_path / "spark-events"
    events.mkdir()
    rc, job, seen_job = _run_watched(_replicate(secured, topic, tmp_path, ddl), tmp_path / "job.log",
                                     _job_env(PASSWORD, events), 600)
    assert rc == 0 and "cdc-replicate: done after batch" in job, job[-3000:]
    assert "(SASL_SSL, SCRAM-SHA-512 as cdc, CA " in job  # the start line names the security, not a secret
    assert _differences(expected, ddl, tmp_path / "delta") == []

    secrets = secured.secrets()
    assert [line for line in seen | seen_job for s in secrets if s in line] == []
    assert any("pipelines.replicate" in line for line in seen_job)  # the job's processes were seen
    assert [s for s in secrets if s in shipped or s in job] == []
    log = "".join(p.read_text(errors="replace") for p in events.rglob("*") if p.is_file())
    assert "SparkListenerSQLExecutionStart" in log and "kafka" in log  # the event log was written
    assert [s for s in secrets if s in log] == []
    written = _files_holding(tmp_path / "delta", secrets) + _files_holding(tmp_path / "checkpoint", secrets)
    assert written == []


def test_a_wrong_password_an_unknown_ca_and_a_plaintext_client_are_one_line_each(secured, topic, tmp_path):
    """The shipper's three at once, and the job's two (run side by side: the PLAINTEXT client waits
    for its 30 s timeout, the jobs for their JVMs)."""
    wrong = _private(tmp_path / "wrong-password", "Wr0ng-TEST-pw\n")
    runs = {"wrong password": secured.ship_security(password_file=wrong),
            "unknown CA": secured.ship_security(ca=secured.pki.other_ca), "PLAINTEXT": []}
    ships = {name: subprocess.Popen(secured.ship(CORPUS_FILE, topic, "s", *args), cwd=REPO_ROOT, text=True,
                                    stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
             for name, args in runs.items()}
    ddl = tmp_path / "targets.sql"
    ddl.write_text(replica_ddl(standard_tables("mariadb"), DATABASE))
    jobs = {}
    for name, password, ca in (("wrong password", "Wr0ng-TEST-pw", secured.pki.ca),
                               ("unknown CA", PASSWORD, secured.pki.other_ca)):
        work = tmp_path / f"job-{name.replace(' ', '-')}"
        work.mkdir()
        jobs[name] = subprocess.Popen(_replicate(secured, topic, work, ddl, ca=ca), cwd=REPO_ROOT,
                                      stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                      env=_job_env(password))
    try:
        said = {name: (proc.wait(timeout=120), proc.stdout.read().strip()) for name, proc in ships.items()}
        ended = {name: (proc.wait(timeout=600), proc.stdout.read().strip()) for name, proc in jobs.items()}
    finally:
        for proc in [*ships.values(), *jobs.values()]:
            if proc.poll() is None:
                proc.kill()

    assert said["wrong password"][1].startswith(f"cdc-ship: cannot connect to Kafka at {secured.bootstrap} "
                                                f"(SASL_SSL, SCRAM-SHA-512 as cdc, ")
    assert "SASL authentication error: Authentication failed" in said["wrong password"][1]
    assert "certificate verify failed" in said["unknown CA"][1]
    assert said["PLAINTEXT"][1].startswith(f"cdc-ship: cannot reach Kafka at {secured.bootstrap} (PLAINTEXT)")
    for name, (rc, text) in said.items():
        assert rc == 1 and len(text.splitlines()) == 1 and "Traceback" not in text, (name, text)
        assert "Wr0ng-TEST-pw" not in text and PASSPHRASE not in text

    causes = {"wrong password": "SaslAuthenticationException: Authentication failed",
              "unknown CA": "SslAuthenticationException: SSL handshake failed"}
    for name, (rc, text) in ended.items():
        lines = text.splitlines()
        assert rc == 1 and lines[-1].startswith("cdc-replicate: failed: ") and causes[name] in lines[-1], text
        assert len(lines) <= 4 and "Wr0ng-TEST-pw" not in text and PASSWORD_MARK not in text, text

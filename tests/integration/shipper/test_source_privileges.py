"""Issue #39 item 6: cdc-ship against a real MariaDB with a user lacking one privilege of README
"Preparing the source" at a time: the run ends with one line naming the missing privilege and
the statement it was refused (libs/source/privileges.py), exit 1, no traceback; the user with
all of them ships. Without SELECT the snapshot finds no table, and its line says why. A server
without binlog (log_bin off) is one line saying so."""
from __future__ import annotations

import subprocess
import sys
import uuid

import pytest

from libs.local.mariadb_server import MariaDBServer
from tests.integration.shipper.helpers import ROOT

pytestmark = pytest.mark.integration

ALL = ("REPLICATION SLAVE, REPLICATION CLIENT ON *.*", "SELECT ON {db}.*")
WITHOUT = {  # the privilege left out -> the grants
    "REPLICATION SLAVE": ("REPLICATION CLIENT ON *.*", "SELECT ON {db}.*"),
    "REPLICATION CLIENT": ("REPLICATION SLAVE ON *.*", "SELECT ON {db}.*"),
    "SELECT": ("REPLICATION SLAVE, REPLICATION CLIENT ON *.*",),
}


@pytest.fixture(scope="module")
def source_db(mariadb):
    db = f"priv_{uuid.uuid4().hex[:8]}"
    mariadb.sql(f"CREATE DATABASE {db}; CREATE TABLE {db}.t (id INT PRIMARY KEY, v VARCHAR(10));"
                f"INSERT INTO {db}.t VALUES (1, 'a'), (2, 'b');")
    return db


def _user(mariadb, tmp_path, db: str, grants: tuple[str, ...]):
    name = f"cdc_{uuid.uuid4().hex[:8]}"
    mariadb.sql(f"CREATE USER '{name}'@'%' IDENTIFIED BY 'pw-{name}';"
                + "".join(f"GRANT {g.format(db=db)} TO '{name}'@'%';" for g in grants))
    secret = tmp_path / f"{name}.pw"
    secret.write_text(f"pw-{name}\n")
    secret.chmod(0o600)
    return name, secret


def _ship(mariadb, kafka_broker, user, secret, *extra: str, port=None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "pipelines.ship", "--server", f"127.0.0.1:{port or mariadb.port}",
         "--user", user, "--password-file", str(secret), "--bootstrap", kafka_broker.bootstrap,
         "--topic", f"t-{uuid.uuid4().hex[:12]}",
         "--source", "src", "--non-block", "--progress", "3600", *extra],
        cwd=ROOT, capture_output=True, text=True, timeout=120)


def _unsourced(line: str) -> str:
    """The line without the source id ShipError appends where the failing step knows it."""
    return line.removesuffix(" (source src)")


def _no_trace(run: subprocess.CompletedProcess) -> None:
    assert "Traceback" not in run.stderr and "pymysql.err" not in run.stderr, run.stderr[-3000:]


@pytest.mark.parametrize("snapshot", [False, True], ids=["binlog", "snapshot"])
def test_a_missing_replication_privilege_is_one_line_naming_it(
        mariadb, kafka_broker, source_db, tmp_path, snapshot):
    server = f"127.0.0.1:{mariadb.port}"
    extra = ("--snapshot", "--include", rf"{source_db}\..*") if snapshot else ()
    expected = {
        "REPLICATION SLAVE": f"cdc-ship: source {server}: access denied: needs REPLICATION SLAVE "
                             f"for the binlog dump (COM_BINLOG_DUMP) (error 1045)",
        "REPLICATION CLIENT": f"cdc-ship: source {server}: access denied: "
                              f"needs REPLICATION CLIENT (BINLOG MONITOR) for SHOW BINARY LOGS (error 1227)",
    }
    for missing, line in expected.items():
        user, secret = _user(mariadb, tmp_path, source_db, WITHOUT[missing])
        run = _ship(mariadb, kafka_broker, user, secret, *extra)
        assert run.returncode == 1, run.stderr[-3000:]
        _no_trace(run)
        assert _unsourced(run.stderr.strip().splitlines()[-1]) == line, run.stderr[-3000:]
    user, secret = _user(mariadb, tmp_path, source_db, ALL)
    run = _ship(mariadb, kafka_broker, user, secret, *extra)
    assert run.returncode == 0, run.stderr[-3000:]
    if snapshot:
        assert "snapshot of 1 table(s), 2 rows" in run.stderr, run.stderr


def test_without_select_the_snapshot_says_it_found_no_table(mariadb, kafka_broker, source_db, tmp_path):
    user, secret = _user(mariadb, tmp_path, source_db, WITHOUT["SELECT"])
    run = _ship(mariadb, kafka_broker, user, secret, "--snapshot", "--include", rf"{source_db}\..*")
    assert run.returncode == 0, run.stderr[-3000:]
    _no_trace(run)
    assert ("of 0 table(s)" in run.stderr
            and "no table selected: the server lists only tables the user has a "
                "privilege on, e.g. SELECT" in run.stderr), run.stderr


def test_a_wrong_password_or_a_closed_port_is_one_line(mariadb, kafka_broker, source_db, tmp_path):
    user, secret = _user(mariadb, tmp_path, source_db, ALL)
    secret.write_text("not the password\n")
    run = _ship(mariadb, kafka_broker, user, secret, "--snapshot")
    assert run.returncode == 1 and len(run.stderr.strip().splitlines()) == 1, run.stderr
    assert f"cannot connect to 127.0.0.1:{mariadb.port} as {user}: 1045: Access denied" in run.stderr


def test_a_server_without_binlog_is_one_line_saying_so(kafka_broker, tmp_path):
    server = MariaDBServer.start(tmp_path / "nobinlog", extra_options=("--skip-log-bin",))
    try:
        secret = tmp_path / "pw"
        secret.write_text(server.password + "\n")
        secret.chmod(0o600)
        for extra in ((), ("--snapshot",)):
            run = _ship(server, kafka_broker, server.user, secret, *extra)
            assert run.returncode == 1, run.stderr[-3000:]
            _no_trace(run)
            assert [_unsourced(line) for line in run.stderr.strip().splitlines()] == [
                f"cdc-ship: source 127.0.0.1:{server.port}: the binary log is off: "
                f"start the server with log_bin (refused SHOW BINARY LOGS, error 1381)"], run.stderr
    finally:
        server.stop()

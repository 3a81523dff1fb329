"""TLS to the source end to end (issue #56 item 2; README "Security", "TLS to the source"): a private
MariaDB serving TLS with certificates the test makes (tests/integration/security/certificates.py
make_source_pki: its certificate names `localhost` only), require_secure_transport=ON, and a user
created REQUIRE SSL with the grants of README "Preparing the source". `cdc-ship --source-tls`
snapshots a table and ships the binlog over TLS: the snapshot rows are the server's SELECT, the
shipped binlog bytes are the server's binlog file's. Without TLS, with a CA that did not sign the
server's certificate, by a host name the certificate does not hold, against a server without TLS:
one plain line each, exit 1, at once (not after the 60 s an outage is retried for)."""
from __future__ import annotations

import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from libs.local.mariadb_server import MariaDBServer, ServerTls
from libs.shipper.rebuild import rebuild
from libs.runtime.paths import REPO_ROOT
from tests.integration.security.certificates import SourcePki, make_source_pki
from tests.integration.snapshot.helpers import topic_records

pytestmark = pytest.mark.integration

DB = "tls_shop"
USER, X509_USER = "cdc_tls", "cdc_x509"
PASSWORD = "TLS-TEST-pw"
GRANTS = (f"GRANT REPLICATION SLAVE, REPLICATION CLIENT ON *.* TO '{{u}}'@'%';"
          f"GRANT SELECT ON {DB}.* TO '{{u}}'@'%';")
ROWS_EVENTS = {23, 24, 25, 30, 31, 32}  # WRITE/UPDATE/DELETE_ROWS, v1 and v2
ANNOTATE_ROWS = 160
WIDE_ROWS = 20_000  # ~1 MB: the snapshot's rows cross many TLS records and socket reads
PROMPT_S = 20.0  # a refusal ends long before the 60 s an unreachable server is retried for


@dataclass(frozen=True)
class Source:
    db: MariaDBServer
    pki: SourcePki
    password_file: Path

    def ship(self, topic: str, source: str, *extra: str, host: str = "localhost", port: int | None = None,
             user: str = USER) -> list[str]:
        return [sys.executable, "-m", "pipelines.ship", "--server", f"{host}:{port or self.db.port}",
                "--user", user, "--password-file", str(self.password_file), "--topic", topic,
                "--source", source, "--non-block", "--progress", "3600", *extra]

    def tls(self, ca: Path | None = None) -> tuple[str, ...]:
        return ("--source-tls", "--source-ca", str(ca or self.pki.ca))


@pytest.fixture(scope="module")
def source(tmp_path_factory):
    work = tmp_path_factory.mktemp("source-tls")
    pki = make_source_pki(work / "pki")
    db = MariaDBServer.start(work / "db", tls=ServerTls(pki.ca, pki.server_cert, pki.server_key))
    try:
        db.sql(f"CREATE DATABASE {DB}; CREATE TABLE {DB}.t (id INT PRIMARY KEY, v VARCHAR(20));"
               f"INSERT INTO {DB}.t VALUES (1, 'one'), (2, 'two'), (3, 'three');"
               f"CREATE TABLE {DB}.wide (id INT PRIMARY KEY, v VARCHAR(64));"
               f"INSERT INTO {DB}.wide SELECT seq, MD5(seq) FROM {DB}.seq_1_to_{WIDE_ROWS};"
               f"CREATE USER '{USER}'@'%' IDENTIFIED BY '{PASSWORD}' REQUIRE SSL;"
               f"CREATE USER '{X509_USER}'@'%' IDENTIFIED BY '{PASSWORD}' REQUIRE X509;"
               + GRANTS.format(u=USER) + GRANTS.format(u=X509_USER))
        secret = work / "password"
        secret.write_text(PASSWORD + "\n")
        secret.chmod(0o600)
        yield Source(db, pki, secret)
    finally:
        db.stop()


def _run(argv: list[str], bootstrap: str) -> subprocess.Popen:
    return subprocess.Popen([*argv, "--bootstrap", bootstrap], cwd=REPO_ROOT, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            env={**os.environ, "PYTHONUNBUFFERED": "1"})


def _ended(procs: dict[str, subprocess.Popen], timeout: float = 120) -> dict[str, tuple[int, str, float]]:
    """name -> (exit code, output, seconds from the start of all to its end)."""
    start, out = time.monotonic(), {}
    try:
        for name, proc in procs.items():
            text, _ = proc.communicate(timeout=max(1.0, timeout - (time.monotonic() - start)))
            out[name] = (proc.returncode, text.strip(), time.monotonic() - start)
    finally:
        for proc in procs.values():
            if proc.poll() is None:
                proc.kill()
    return out


def _server_rows(db: MariaDBServer, table: str) -> list[tuple[str, str]]:
    text = db.sql(f"SELECT id, v FROM {DB}.{table} ORDER BY id")
    return [tuple(line.split("\t")) for line in text.splitlines()[1:]]


def _snapshot_rows(snaps, table: str) -> list[tuple[str, str]]:
    rows = [tuple(str(value["text"]) for value in row) for _record, snap in snaps
            if snap.kind == "rows" and (snap.database, snap.table) == (DB, table)
            for row in snap.row_images()]
    return sorted(rows, key=lambda row: int(row[0]))


def test_cdc_ship_over_tls_snapshots_the_table_and_ships_the_binlog(source, kafka_broker, topic):
    expected = {table: _server_rows(source.db, table) for table in ("t", "wide")}
    first = _ended({"snapshot": _run(source.ship(topic, "src", *source.tls(), "--snapshot", "--include",
                                                 rf"{DB}\..*"), kafka_broker.bootstrap)})
    assert first["snapshot"][0] == 0, first
    source.db.sql(f"INSERT INTO {DB}.t VALUES (4, 'four'); UPDATE {DB}.t SET v = 'TWO' WHERE id = 2;"
                  f"DELETE FROM {DB}.t WHERE id = 3;")
    second = _ended({"binlog": _run(source.ship(topic, "src", *source.tls()), kafka_broker.bootstrap)})
    assert second["binlog"][0] == 0, second
    assert f"snapshot of 2 table(s), {3 + WIDE_ROWS} rows" in first["snapshot"][1], first
    assert PASSWORD not in first["snapshot"][1] + second["binlog"][1]

    records, snaps = topic_records(kafka_broker.bootstrap, topic, "src")
    assert _snapshot_rows(snaps, "t") == expected["t"] == [("1", "one"), ("2", "two"), ("3", "three")]
    assert _snapshot_rows(snaps, "wide") == expected["wide"] and len(expected["wide"]) == WIDE_ROWS
    files = rebuild(records)  # contiguous from the snapshot's position on
    shipped = [r for r in records if not r.is_side]
    for rebuilt in files.values():
        disk = source.db.binlog_path(rebuilt.name).read_bytes()
        assert b"".join(rebuilt.chunks) == disk[rebuilt.start_pos:rebuilt.end_pos], rebuilt.name
    assert len({r.event_type for r in shipped} & ROWS_EVENTS) == 3  # an insert, an update, a delete
    annotated = b"".join(r.value for r in shipped if r.event_type == ANNOTATE_ROWS)
    for statement in (b"INSERT INTO tls_shop.t VALUES (4, 'four')", b"UPDATE tls_shop.t SET v = 'TWO'",
                      b"DELETE FROM tls_shop.t WHERE id = 3"):
        assert statement in annotated


def test_each_refusal_is_one_line_at_once_and_the_opt_outs_connect(source, mariadb, kafka_broker, topic):
    """Side by side: the refused runs and the runs that must connect (no host-name check; a
    client certificate for a REQUIRE X509 user)."""
    port, pki = source.db.port, source.pki
    client = ("--source-cert", str(pki.client_cert), "--source-key", str(pki.client_key))
    plain_db_password = source.password_file.parent / "plain-password"
    plain_db_password.write_text(mariadb.password + "\n")
    plain_db_password.chmod(0o600)
    runs = {
        "without TLS": source.ship(topic, "a"),
        "unknown CA": source.ship(topic, "b", *source.tls(pki.other_ca)),
        "unknown CA, snapshot": source.ship(topic, "c", *source.tls(pki.other_ca), "--snapshot"),
        "wrong host name": source.ship(topic, "d", *source.tls(), host="127.0.0.1"),
        "X509 user without a certificate": source.ship(topic, "e", *source.tls(), user=X509_USER),
        "server without TLS": [*source.ship(topic, "f", *source.tls(), host="127.0.0.1", port=mariadb.port,
                                            user=mariadb.user), "--password-file", str(plain_db_password)],
        "no host-name check": source.ship(topic, "g", *source.tls(), "--source-tls-no-verify-identity",
                                          host="127.0.0.1"),
        "X509 user with its certificate": source.ship(topic, "h", *source.tls(), *client, user=X509_USER),
    }
    said = _ended({name: _run(argv, kafka_broker.bootstrap) for name, argv in runs.items()})

    here = f"localhost:{port}"
    unknown_ca = (f"cdc-ship: cannot connect to {here} over TLS: the server's certificate does not verify "
                  f"(unknown CA: self-signed certificate in certificate chain): --source-ca must name the CA "
                  f"that signed it")
    lines = {
        "without TLS": f"cdc-ship: cannot connect to {here} as {USER}: 1045: Access denied for user "
                       f"'{USER}'@'127.0.0.1' (using password: YES); a server with "
                       f"require_secure_transport=ON or a user created REQUIRE SSL refuses a login without "
                       f"TLS: --source-tls",
        "unknown CA": unknown_ca,
        "unknown CA, snapshot": unknown_ca,
        "wrong host name": f"cdc-ship: cannot connect to 127.0.0.1:{port} over TLS: the server's "
                           f"certificate does not verify (wrong host name: IP address mismatch, certificate "
                           f"is not valid for '127.0.0.1'.): connect by a name it holds, or "
                           f"--source-tls-no-verify-identity",
        "X509 user without a certificate": f"cdc-ship: cannot connect to {here} as {X509_USER}: 1045: Access "
                                           f"denied for user '{X509_USER}'@'127.0.0.1' (using password: YES)",
        "server without TLS": f"cdc-ship: cannot connect to 127.0.0.1:{mariadb.port} over TLS: the server "
                              f"does not offer TLS (is it started with ssl_cert and ssl_key?)",
    }
    for name, line in lines.items():
        rc, text, seconds = said[name]
        assert (rc, text.splitlines()) == (1, [line]), (name, text)
        assert seconds < PROMPT_S, (name, seconds)
    for name in ("no host-name check", "X509 user with its certificate"):
        rc, text, _ = said[name]
        assert rc == 0 and "shipped" in text.splitlines()[-1], (name, text)
    assert not [name for name, (_, text, _) in said.items() if PASSWORD in text or "Traceback" in text]


def test_the_servers_own_clients_connect_over_tls(source):
    """libs/local/mariadb_server.py with ServerTls: require_secure_transport is on, and its own
    query() goes over TLS (what the other tests' setup relies on)."""
    assert source.db.query("SELECT @@require_secure_transport, @@have_ssl") == [(1, "YES")]
    cipher = source.db.query("SHOW SESSION STATUS LIKE 'Ssl_cipher'")
    assert cipher[0][1], cipher
    assert source.db.query(f"SELECT COUNT(*) FROM {DB}.t")[0][0] >= 3

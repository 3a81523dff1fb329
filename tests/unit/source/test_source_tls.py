"""TLS to the source (issue #56 item 2; libs/source/source_tls.py): cdc-ship's --source-* options
checked into one line each, naming the option and its file; SourceTls mapped to PyMySQL's ssl=
and the SSL context PyMySQL builds from it (the chain always verified, the host name unless
opted out); a TLS failure told apart from an outage; a server without TLS refused before the
login. Certificates and keys are real ones, made with openssl (tests/integration/security)."""
from __future__ import annotations

import argparse
import ssl
import subprocess
from pathlib import Path

import pymysql
import pytest
from pymysql.constants import CLIENT
from pymysql.err import OperationalError

from libs.shipper.shipper import ShipStats
from libs.snapshot import source as snapshot_source
from libs.source import replica_source, source_tls
from libs.source.errors import ShipError
from libs.source.replica_source import ConnectError, ServerOptions, connect_error
from libs.source.source_tls import SourceTls, SourceTlsError
from pipelines import ship
from tests.integration.security.certificates import SourcePki, make_source_pki

SYSTEM = ssl.DefaultVerifyPaths("/etc/ssl/certs/ca-certificates.crt", "/etc/ssl/certs", "SSL_CERT_FILE",
                                "/usr/lib/ssl/cert.pem", "SSL_CERT_DIR", "/usr/lib/ssl/certs")
NO_STORE = SYSTEM._replace(cafile=None, capath=None)
DIR_ONLY = SYSTEM._replace(cafile=None)


@pytest.fixture(scope="module")
def pki(tmp_path_factory) -> SourcePki:
    return make_source_pki(tmp_path_factory.mktemp("pki"))


@pytest.fixture(scope="module")
def files(pki, tmp_path_factory) -> dict[str, str]:
    """Names the tables below use -> paths: good files, and each kind of bad one."""
    work = tmp_path_factory.mktemp("bad")
    bad_ca = work / "bad-ca.pem"
    bad_ca.write_text("-----BEGIN CERTIFICATE-----\nbm90IGEgY2VydGlmaWNhdGU=\n-----END CERTIFICATE-----\n")
    encrypted = work / "encrypted.key"
    subprocess.run(["openssl", "pkcs8", "-topk8", "-in", str(pki.client_key), "-out", str(encrypted),
                    "-passout", "pass:TEST-passphrase"], check=True, capture_output=True)
    encrypted.chmod(0o600)
    shared = work / "shared.key"
    shared.write_bytes(pki.client_key.read_bytes())
    shared.chmod(0o644)
    return {"ca": str(pki.ca), "cert": str(pki.client_cert), "key": str(pki.client_key),
            "server_key": str(pki.server_key), "missing": str(work / "missing.pem"), "dir": str(work),
            "bad_ca": str(bad_ca), "encrypted": str(encrypted), "shared": str(shared)}


def _parse(argv: list[str], files: dict[str, str]) -> argparse.Namespace:
    ap = argparse.ArgumentParser()
    source_tls.add_arguments(ap)
    return ap.parse_args([files.get(arg[1:], arg) if arg.startswith("@") else arg for arg in argv])


def _from(argv: list[str], files: dict[str, str]) -> tuple[SourceTls | None, list[str]]:
    warnings: list[str] = []
    return source_tls.from_arguments(_parse(argv, files), warnings.append), warnings


ACCEPTED = [  # argv ("@name": a file of `files`) -> the settings
    ([], None),
    (["--source-tls"], SourceTls()),
    (["--source-tls", "--source-ca", "@ca"], SourceTls(ca="@ca")),
    (["--source-tls", "--source-ca", "@ca", "--source-tls-no-verify-identity"],
     SourceTls(ca="@ca", verify_identity=False)),
    (["--source-tls", "--source-ca", "@ca", "--source-cert", "@cert", "--source-key", "@key"],
     SourceTls(ca="@ca", cert="@cert", key="@key")),
    (["--source-tls", "--source-cert", "@cert", "--source-key", "@key"], SourceTls(cert="@cert", key="@key")),
]


@pytest.mark.parametrize("argv, expected", ACCEPTED)
def test_the_options_give_the_settings(argv, expected, files):
    tls, warnings = _from(argv, files)
    if expected is not None:
        expected = SourceTls(**{k: files.get(str(v)[1:], v) if str(v).startswith("@") else v
                                for k, v in vars(expected).items()})
    assert (tls, warnings) == (expected, [])


REFUSED = [  # argv -> the one line (with the file's path for "{path}")
    (["--source-ca", "@ca"], "--source-ca: only with --source-tls"),
    (["--source-tls-no-verify-identity"], "--source-tls-no-verify-identity: only with --source-tls"),
    (["--source-tls", "--source-cert", "@cert"],
     "--source-cert: a client certificate needs --source-key too"),
    (["--source-tls", "--source-key", "@key"], "--source-key: a client certificate needs --source-cert too"),
    (["--source-tls", "--source-ca", "@missing"],
     "--source-ca: cannot read {path}: No such file or directory"),
    (["--source-tls", "--source-ca", "@dir"], "--source-ca: cannot read {path}: Is a directory"),
    (["--source-tls", "--source-ca", "@key"], "--source-ca: {path} holds no PEM CERTIFICATE"),
    (["--source-tls", "--source-ca", "@bad_ca"], "--source-ca: {path} cannot be used ("),
    (["--source-tls", "--source-cert", "@key", "--source-key", "@key"],
     "--source-cert: {path} holds no PEM CERTIFICATE"),
    (["--source-tls", "--source-cert", "@cert", "--source-key", "@ca"],
     "--source-key: {path} holds no PEM PRIVATE KEY"),
    (["--source-tls", "--source-cert", "@cert", "--source-key", "@server_key"],
     "--source-key: {path} does not belong to the certificate of --source-cert (KEY_VALUES_MISMATCH)"),
    (["--source-tls", "--source-cert", "@cert", "--source-key", "@encrypted"],
     "--source-key: {path} is encrypted: give the key without a passphrase, readable by its owner only "
     "(chmod 600)"),
]


@pytest.mark.parametrize("argv, line", REFUSED)
def test_a_bad_option_or_file_is_one_line_naming_the_option_and_the_file(argv, line, files):
    with pytest.raises(SourceTlsError) as refused:
        _from(argv, files)
    path = next((files[a[1:]] for a in reversed(argv) if a.startswith("@") and "{path}" in line), "")
    assert str(refused.value).startswith(line.format(path=path)), str(refused.value)
    assert "\n" not in str(refused.value) and "BEGIN" not in str(refused.value)


def test_a_key_other_users_may_read_is_taken_with_a_warning_line(files):
    tls, warnings = _from(["--source-tls", "--source-cert", "@cert", "--source-key", "@shared"], files)
    assert tls.key == files["shared"]
    assert warnings == [f"--source-key {files['shared']} is readable by other users (chmod 600 it)"]


def test_without_a_ca_and_without_a_system_store_the_option_is_asked_for(monkeypatch, files):
    monkeypatch.setattr(source_tls.ssl, "get_default_verify_paths", lambda: NO_STORE)
    with pytest.raises(SourceTlsError) as refused:
        _from(["--source-tls"], files)
    assert str(refused.value) == ("--source-tls: this machine has no default CA store "
                                  "(/usr/lib/ssl/cert.pem, /usr/lib/ssl/certs): give --source-ca FILE")


MAPPED = [  # settings, the machine's default store -> PyMySQL's ssl=
    (SourceTls(ca="ca.pem"), SYSTEM, {"ca": "ca.pem", "verify_mode": True, "check_hostname": True}),
    (SourceTls(ca="ca.pem", verify_identity=False), SYSTEM,
     {"ca": "ca.pem", "verify_mode": True, "check_hostname": False}),
    (SourceTls(), SYSTEM, {"ca": SYSTEM.cafile, "verify_mode": True, "check_hostname": True}),
    (SourceTls(), DIR_ONLY, {"capath": SYSTEM.capath, "verify_mode": True, "check_hostname": True}),
    (SourceTls(ca="ca.pem", cert="c.pem", key="c.key"), SYSTEM,
     {"ca": "ca.pem", "verify_mode": True, "check_hostname": True, "cert": "c.pem", "key": "c.key"}),
]


@pytest.mark.parametrize("tls, store, expected", MAPPED)
def test_the_settings_map_to_pymysqls_ssl_dict(monkeypatch, tls, store, expected):
    monkeypatch.setattr(source_tls.ssl, "get_default_verify_paths", lambda: store)
    assert tls.pymysql_ssl() == expected


CONTEXTS = [  # settings -> (verify_mode, check_hostname) of the context PyMySQL builds
    (dict(ca="@ca"), (ssl.CERT_REQUIRED, True)),
    (dict(ca="@ca", verify_identity=False), (ssl.CERT_REQUIRED, False)),
    (dict(), (ssl.CERT_REQUIRED, True)),  # the system's store: the host name is checked all the same
    (dict(verify_identity=False), (ssl.CERT_REQUIRED, False)),
    (dict(ca="@ca", cert="@cert", key="@key"), (ssl.CERT_REQUIRED, True)),
]


@pytest.mark.parametrize("settings, expected", CONTEXTS)
def test_pymysql_builds_a_context_that_verifies_the_chain_always(settings, expected, files):
    tls = SourceTls(**{k: files[v[1:]] if isinstance(v, str) else v for k, v in settings.items()})
    conn = source_tls.TlsConnection(defer_connect=True, host="localhost", ssl=tls.pymysql_ssl())
    assert (conn.ctx.verify_mode, conn.ctx.check_hostname) == expected
    assert conn.ctx.cert_store_stats()["x509_ca"] >= 1


def _verify_error(code: int, message: str) -> OperationalError:
    cause = ssl.SSLCertVerificationError(1, f"[SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed: "
                                            f"{message} (_ssl.c:1006)")
    cause.verify_code, cause.verify_message, cause.reason = code, message, "CERTIFICATE_VERIFY_FAILED"
    exc = OperationalError(2003, f"Can't connect to MySQL server on 'db' ({cause})")
    exc.original_exception = cause
    return exc


def _ssl_error(cls: type, reason: str, message: str) -> ssl.SSLError:
    """As the ssl module raises one: its OpenSSL reason set."""
    error = cls(1, f"[SSL: {reason}] {message} (_ssl.c:1006)")
    error.reason = reason
    return error


def _handshake_error(cause: ssl.SSLError) -> OperationalError:
    exc = OperationalError(2003, f"Can't connect to MySQL server on 'db' ({cause})")
    exc.original_exception = cause
    return exc


FAILURES = [  # a failed TLS connection -> what the line says (None: no TLS failure, e.g. down)
    (_verify_error(19, "self-signed certificate in certificate chain"),
     "the server's certificate does not verify (unknown CA: self-signed certificate in certificate chain): "
     "--source-ca must name the CA that signed it"),
    (_verify_error(20, "unable to get local issuer certificate"),
     "the server's certificate does not verify (unknown CA: unable to get local issuer certificate): "
     "--source-ca must name the CA that signed it"),
    (_verify_error(64, "IP address mismatch, certificate is not valid for '127.0.0.1'."),
     "the server's certificate does not verify (wrong host name: IP address mismatch, certificate is not "
     "valid for '127.0.0.1'.): connect by a name it holds, or --source-tls-no-verify-identity"),
    (_verify_error(10, "certificate has expired"),
     "the server's certificate does not verify (expired or not yet valid: certificate has expired)"),
    (_handshake_error(_ssl_error(ssl.SSLError, "WRONG_VERSION_NUMBER", "wrong version number")),
     "the TLS handshake failed (WRONG_VERSION_NUMBER)"),
    (source_tls.TlsNotOffered(2026, "the server does not offer TLS"),
     "the server does not offer TLS (is it started with ssl_cert and ssl_key?)"),
    (OperationalError(2013, "Lost connection to MySQL server during query ([SSL: TLSV13_ALERT_CERTIFICATE_"
                            "REQUIRED] tlsv13 alert certificate required (_ssl.c:2580))"),
     "the server refused the TLS session (TLSV13_ALERT_CERTIFICATE_REQUIRED)"),
    (_handshake_error(_ssl_error(ssl.SSLEOFError, "UNEXPECTED_EOF_WHILE_READING", "EOF occurred in violation "
                                                                                   "of protocol")), None),
    (OperationalError(2003, "Can't connect to MySQL server on 'db' ([Errno 111] Connection refused)"), None),
    (OperationalError(1045, "Access denied for user 'cdc'@'127.0.0.1' (using password: YES)"), None),
]


@pytest.mark.parametrize("exc, said", FAILURES)
def test_a_tls_failure_says_what_failed_and_an_outage_is_none(exc, said):
    assert source_tls.failure(exc) == said


AS_CDC = "cannot connect to db:3306 as cdc"
REFUSED_LOGIN = "Access denied for user 'cdc'@'127.0.0.1' (using password: YES)"
NO_TLS_HINT = ("a server with require_secure_transport=ON or a user created REQUIRE SSL refuses a login "
               "without TLS: --source-tls")
REFUSED_TCP = "Can't connect to MySQL server on 'db' ([Errno 111] Connection refused)"
INSECURE = "Connections using insecure transport are prohibited while --require_secure_transport=ON."
CONNECT_ERRORS = [  # tls on?, the error -> (class, line)
    (True, _verify_error(19, "self-signed certificate in certificate chain"), ShipError,
     "cannot connect to db:3306 over TLS: the server's certificate does not verify (unknown CA: self-signed "
     "certificate in certificate chain): --source-ca must name the CA that signed it"),
    (True, source_tls.TlsNotOffered(2026, "the server does not offer TLS"), ShipError,
     "cannot connect to db:3306 over TLS: the server does not offer TLS (is it started with ssl_cert and "
     "ssl_key?)"),
    (True, OperationalError(2003, REFUSED_TCP), ConnectError, f"{AS_CDC}: 2003: {REFUSED_TCP}"),
    (False, OperationalError(2003, REFUSED_TCP), ConnectError, f"{AS_CDC}: 2003: {REFUSED_TCP}"),
    (False, OperationalError(1045, REFUSED_LOGIN), ShipError,
     f"{AS_CDC}: 1045: {REFUSED_LOGIN}; {NO_TLS_HINT}"),
    (True, OperationalError(1045, REFUSED_LOGIN), ShipError, f"{AS_CDC}: 1045: {REFUSED_LOGIN}"),
    (False, OperationalError(3159, INSECURE), ShipError, f"{AS_CDC}: 3159: {INSECURE}; {NO_TLS_HINT}"),
]


@pytest.mark.parametrize("tls, exc, cls, line", CONNECT_ERRORS)
def test_a_tls_failure_is_a_configuration_error_not_an_outage(tls, exc, cls, line):
    opts = ServerOptions("db", 3306, "cdc", "TEST-secret", tls=SourceTls(ca="ca.pem") if tls else None)
    error = connect_error(opts, exc)
    assert (type(error), str(error)) == (cls, line)
    assert "TEST-secret" not in repr(opts)


def test_a_server_that_does_not_offer_tls_is_refused_before_the_login():
    assert callable(getattr(pymysql.connections.Connection, "_request_authentication", None))
    conn = source_tls.TlsConnection(defer_connect=True, host="localhost", user="cdc", password="TEST-secret",
                                    ssl=SourceTls().pymysql_ssl())
    sent = []
    conn.write_packet = sent.append
    conn.server_capabilities = CLIENT.PROTOCOL_41 | CLIENT.SECURE_CONNECTION
    with pytest.raises(source_tls.TlsNotOffered):
        conn._request_authentication()
    assert sent == []


def test_open_connection_without_tls_is_pymysqls_own(monkeypatch):
    monkeypatch.setattr(source_tls.pymysql, "connect", lambda **kwargs: ("plain", kwargs))
    assert source_tls.open_connection(None, host="h", port=1) == ("plain", {"host": "h", "port": 1})


def test_cdc_ship_ends_a_bad_file_with_one_line_before_connecting(files, capsys, monkeypatch):
    monkeypatch.setattr(ship, "ship_server", lambda *a, **k: pytest.fail("connected"))
    argv = ["--server", "127.0.0.1:1", "--user", "cdc", "--bootstrap", "127.0.0.1:1", "--topic", "t",
            "--source", "s", "--source-tls", "--source-ca", files["missing"]]
    assert ship.main(argv) == 2
    assert capsys.readouterr().err.splitlines() == [
        f"cdc-ship: --source-ca: cannot read {files['missing']}: No such file or directory"]


def test_cdc_ship_takes_the_tls_options_only_with_server(files, capsys):
    with pytest.raises(SystemExit) as ended:
        ship.main(["--from-file", files["dir"], "--bootstrap", "b:1", "--topic", "t", "--source", "s",
                   "--source-tls"])
    assert ended.value.code == 2
    assert capsys.readouterr().err.splitlines()[-1] == "cdc-ship: error: --source-tls needs --server"


def test_cdc_ship_passes_the_settings_to_the_server_options(files, capsys, monkeypatch):
    seen = {}

    def ship_server(cfg, opts, **kw):
        seen["opts"] = opts
        return ShipStats()

    monkeypatch.setattr(ship, "ship_server", ship_server)
    argv = ["--server", "db:3306", "--user", "cdc", "--bootstrap", "127.0.0.1:1", "--topic", "t", "--source",
            "s", "--source-tls", "--source-ca", files["ca"], "--source-cert", files["cert"], "--source-key",
            files["shared"], "--source-tls-no-verify-identity"]
    assert ship.main(argv) == 0
    assert seen["opts"].tls == SourceTls(files["ca"], files["cert"], files["shared"], verify_identity=False)
    assert capsys.readouterr().err.splitlines()[0] == (
        f"cdc-ship: warning: --source-key {files['shared']} is readable by other users (chmod 600 it)")
    assert Path(files["shared"]).read_text().splitlines()[1] not in repr(seen["opts"])


@pytest.mark.parametrize("connect", [replica_source.connect, snapshot_source.connect],
                         ids=["binlog dump", "snapshot"])
def test_both_connections_take_the_settings(monkeypatch, connect):
    taken = []
    monkeypatch.setattr(source_tls, "open_connection", lambda tls, **kwargs: taken.append((tls, kwargs)))
    tls = SourceTls(ca="ca.pem")
    connect(ServerOptions("db", 3306, "cdc", "pw", tls=tls))
    connect(ServerOptions("db", 3306, "cdc", "pw"))
    assert [(t, kw["host"], kw["port"], kw["user"]) for t, kw in taken] == [(tls, "db", 3306, "cdc"),
                                                                          (None, "db", 3306, "cdc")]

"""TLS between cdc-ship and its MySQL/MariaDB source (issue #56 item 2; README "Security", "TLS to
the source"). Declared once here; taken by every connection cdc-ship opens to the server: the
binlog dump's (libs/source/replica_source.py connect: the replica stream, the server's identity,
the privilege checks, the lag) and the snapshot's (libs/snapshot/source.py connect), through
ServerOptions.tls.

    SourceTls                  the settings: CA, client certificate and key, host-name check
    add_arguments(ap)          cdc-ship's --source-tls, --source-ca, --source-cert, --source-key,
                               --source-tls-no-verify-identity
    from_arguments(args, warn) -> SourceTls | None, every file checked (SourceTlsError: one line)
    SourceTls.pymysql_ssl()    PyMySQL's ssl= dict
    open_connection(tls, ...)  pymysql.connect, over TLS when tls is given
    failure(exc)               what a TLS connection's failure says, or None for another failure

What is verified, by default, once TLS is on: the server's certificate chain, to --source-ca or,
without it, to this machine's default CA store (OpenSSL's: SSL_CERT_FILE / SSL_CERT_DIR, else the
system bundle), and that the certificate names the host cdc-ship connects to (--server's HOST: a
DNS name or an IP address of its subjectAltName). --source-tls-no-verify-identity drops the
host-name check only. Nothing drops the chain check: a certificate that verifies against no CA
proves nothing about the server; a self-signed server certificate is given as --source-ca itself.

PyMySQL alone goes on in plain text with a server that does not offer TLS (its handshake without
CLIENT_SSL): TlsConnection refuses before the login is sent, as `mysql --ssl-mode=REQUIRED` does.
A certificate that does not verify, a refused handshake or a server without TLS is a configuration
error, one line naming host:port, not retried as an outage is (a ShipError, not a ConnectError:
libs/shipper/server_dump.py retryable). The key is not encrypted (no passphrase option: OpenSSL
would ask for one on the terminal) and, as the source password file, gets a warning line when
other users may read it (libs/source/credentials.py readable_by_others).
"""
from __future__ import annotations

import argparse
import re
import ssl
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Callable

import pymysql
from pymysql.constants import CLIENT, CR
from pymysql.err import MySQLError, OperationalError

from libs.settings.errors import ConfigError
from libs.source.credentials import readable_by_others
from libs.source.errors import ShipError

ENABLE = "--source-tls"
ER_ACCESS_DENIED = 1045  # MariaDB's answer to a plain login that its TLS rules refuse, too
ER_SECURE_TRANSPORT_REQUIRED = 3159  # MySQL's (require_secure_transport=ON)
# OpenSSL's X509_V_ERR_* codes of a certificate that does not verify, by what an operator fixes
_UNKNOWN_CA = frozenset({2, 18, 19, 20, 21})  # no issuer, self-signed, no local issuer, leaf
_WRONG_HOST = frozenset({62, 63, 64})  # host name, e-mail, IP address mismatch
_NOT_IN_TIME = frozenset({9, 10})  # not yet valid, expired
_ALERT = re.compile(r"\[SSL: ((?:SSLV3|TLSV1|TLSV13)_ALERT_[A-Z_]+)\]")
_PEM = "-----BEGIN [A-Z0-9 ]*{kind}-----"


class SourceTlsError(ConfigError):
    """A bad TLS setting: one line naming the option (and its file)."""

    def __init__(self, option: str, reason: str):
        self.option, self.reason = option, reason
        super().__init__(f"{option}: {reason}")


def _setting(option: str, doc: str, default=None):
    return field(default=default, metadata={"option": option, "doc": doc})


@dataclass(frozen=True)
class SourceTls:
    """TLS to the source, on (None in ServerOptions.tls: plain, as without --source-tls)."""

    ca: str | None = _setting(
        "--source-ca", "PEM file of the CA certificate(s) the server's certificate must chain to "
                       "(a self-signed server certificate: that certificate); unset: this machine's "
                       "default CA store")
    cert: str | None = _setting(
        "--source-cert", "PEM file of this client's certificate, for a user created REQUIRE X509 "
                         "(or SUBJECT, ISSUER); with --source-key")
    key: str | None = _setting(
        "--source-key", "PEM file of that certificate's private key, not encrypted, readable by its "
                        "owner only (chmod 600); may be the --source-cert file")
    verify_identity: bool = _setting(
        "--source-tls-no-verify-identity", "do not check that the server's certificate names the "
                                           "--server host (its chain is verified all the same)", True)

    def __post_init__(self) -> None:
        if (self.cert is None) != (self.key is None):
            given, missing = ("key", "cert") if self.cert is None else ("cert", "key")
            raise SourceTlsError(option(given), f"a client certificate needs {option(missing)} too")

    def check(self) -> list[str]:
        """Every file readable and usable (a CA, a certificate and its unencrypted key), before
        anything connects; SourceTlsError naming the option and the file. Returns the warnings:
        a key file other users may read."""
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        if self.ca is None:
            _system_trust()
        else:
            _pem_file("ca", self.ca, "CERTIFICATE")
            _loaded("ca", self.ca, lambda: context.load_verify_locations(cafile=self.ca))
        if self.cert is not None:
            _pem_file("cert", self.cert, "CERTIFICATE")
            _pem_file("key", self.key, "PRIVATE KEY")
            _loaded("key", self.key, lambda: context.load_cert_chain(self.cert, self.key,
                                                                     password=_encrypted(self.key)))
        if self.key is not None and readable_by_others(Path(self.key)):
            return [f"{option('key')} {self.key} is readable by other users (chmod 600 it)"]
        return []

    def pymysql_ssl(self) -> dict:
        """PyMySQL's ssl= (its Connection._create_ssl_ctx reads ca, capath, cert, key,
        check_hostname, verify_mode): verify_mode True is CERT_REQUIRED, the chain checked always.
        Without --source-ca the machine's default store is named all the same: PyMySQL checks no
        host name when its ssl= names no CA."""
        out = {"ca": self.ca} if self.ca is not None else _system_trust()
        out |= {"verify_mode": True, "check_hostname": self.verify_identity}
        if self.cert is not None:
            out |= {"cert": self.cert, "key": self.key}
        return out

    def describe(self) -> str:
        """For a line naming how cdc-ship connects: the files, never their text."""
        parts = [f"CA {self.ca}" if self.ca else "the system's CAs"]
        parts += [] if self.verify_identity else ["host name not checked"]
        parts += [f"client certificate {self.cert}"] if self.cert else []
        return "TLS, " + ", ".join(parts)


def option(name: str) -> str:
    """cdc-ship's option of a SourceTls field: --source-ca, ..."""
    return next(f.metadata["option"] for f in fields(SourceTls) if f.name == name)


def _system_trust() -> dict:
    """The machine's default CA store as PyMySQL's ssl= names a CA (OpenSSL's own default paths,
    SSL_CERT_FILE and SSL_CERT_DIR heeded)."""
    paths = ssl.get_default_verify_paths()
    if paths.cafile:
        return {"ca": paths.cafile}
    if paths.capath:
        return {"capath": paths.capath}
    raise SourceTlsError(ENABLE, f"this machine has no default CA store ({paths.openssl_cafile}, "
                                 f"{paths.openssl_capath}): give {option('ca')} FILE")


def _pem_file(name: str, path: str, kind: str) -> None:
    try:
        text = Path(path).read_bytes().decode("ascii", errors="replace")
    except OSError as exc:
        raise SourceTlsError(option(name), f"cannot read {path}: {exc.strerror}") from None
    if not re.search(_PEM.format(kind=kind), text):
        raise SourceTlsError(option(name), f"{path} holds no PEM {kind}")


def _encrypted(path: str) -> Callable[[], str]:
    """The passphrase callback of a key: it is asked for only when the key is encrypted."""
    def refuse() -> str:
        raise SourceTlsError(option("key"), f"{path} is encrypted: give the key without a passphrase, "
                                            f"readable by its owner only (chmod 600)")
    return refuse


def _loaded(name: str, path: str, load: Callable[[], None]) -> None:
    try:
        load()
    except ssl.SSLError as exc:
        reason = getattr(exc, "reason", None)
        what = (f"does not belong to the certificate of {option('cert')}"
                if reason == "KEY_VALUES_MISMATCH" else "cannot be used")
        raise SourceTlsError(option(name), f"{path} {what} ({reason or exc.strerror or exc})") from None


# -- the command line ------------------------------------------------------------------------------
def add_arguments(ap: argparse.ArgumentParser) -> None:
    """--source-tls and every SourceTls field as its option (help: its doc line)."""
    group = ap.add_argument_group("TLS to the source (README \"Security\"; with --server)")
    group.add_argument(ENABLE, dest="source_tls", action="store_true",
                       help="connect to the server over TLS, its certificate verified: chain and host name")
    for f in fields(SourceTls):
        doc = f.metadata["doc"].replace("%", "%%")
        if f.name == "verify_identity":
            group.add_argument(f.metadata["option"], dest=f"source_tls_{f.name}", action="store_const",
                               const=False, default=None, help=doc)
        else:
            group.add_argument(f.metadata["option"], dest=f"source_tls_{f.name}", metavar="FILE",
                               default=None, help=doc)


def options_given(args: argparse.Namespace) -> list[str]:
    """The TLS options on the command line, --source-tls first."""
    given = [ENABLE] if args.source_tls else []
    return given + [f.metadata["option"] for f in fields(SourceTls)
                    if getattr(args, f"source_tls_{f.name}") is not None]


def from_arguments(args: argparse.Namespace, warn: Callable[[str], None]) -> SourceTls | None:
    """The settings the options give, their files checked (SourceTlsError); None without
    --source-tls. `warn` takes each warning line."""
    values = {f.name: getattr(args, f"source_tls_{f.name}") for f in fields(SourceTls)}
    values = {name: value for name, value in values.items() if value is not None}
    if not args.source_tls:
        if values:
            raise SourceTlsError(option(next(iter(values))), f"only with {ENABLE}")
        return None
    tls = SourceTls(**values)
    for line in tls.check():
        warn(line)
    return tls


# -- connecting ------------------------------------------------------------------------------------
class TlsNotOffered(OperationalError):
    """The server's handshake offers no TLS (CLIENT_SSL): no ssl_cert on it, or a proxy between."""


class TlsConnection(pymysql.connections.Connection):
    """PyMySQL's connection, refusing to log in without TLS (PyMySQL's own would go on in plain
    text with a server that does not offer it)."""

    def _request_authentication(self) -> None:
        if not self.server_capabilities & CLIENT.SSL:
            raise TlsNotOffered(CR.CR_SSL_CONNECTION_ERROR, "the server does not offer TLS")
        super()._request_authentication()


def open_connection(tls: SourceTls | None, **kwargs) -> pymysql.Connection:
    """pymysql.connect(**kwargs), over TLS as `tls` says when given. Files PyMySQL cannot load
    (changed since from_arguments checked them) are a ShipError; the rest raises as PyMySQL does
    (MySQLError)."""
    if tls is None:
        return pymysql.connect(**kwargs)
    try:
        conn = TlsConnection(defer_connect=True, ssl=tls.pymysql_ssl(), **kwargs)
    except OSError as exc:  # ssl.SSLError among them: _create_ssl_ctx loading the files
        raise ShipError(f"cannot connect to {kwargs.get('host')}:{kwargs.get('port')} over TLS: cannot "
                        f"load the files of {tls.describe()} ({exc.strerror or exc})") from None
    conn.connect()
    return conn


def failure(exc: MySQLError) -> str | None:
    """What a failed TLS connection says, naming what to fix; None when `exc` is no TLS failure
    (a server that is down, a refused login): PyMySQL keeps the handshake's ssl error as
    original_exception; an alert the server sends once the handshake is done (TLS 1.3: a client
    certificate it refuses) comes as a lost connection naming it."""
    if isinstance(exc, TlsNotOffered):
        return "the server does not offer TLS (is it started with ssl_cert and ssl_key?)"
    cause = getattr(exc, "original_exception", None)
    if isinstance(cause, ssl.SSLCertVerificationError):
        return _not_verified(cause)
    if isinstance(cause, ssl.SSLError) and not isinstance(cause, ssl.SSLEOFError | ssl.SSLZeroReturnError
                                                          | ssl.SSLSyscallError):
        return f"the TLS handshake failed ({getattr(cause, 'reason', None) or cause.strerror or cause})"
    alert = _ALERT.search(" ".join(str(arg) for arg in exc.args))
    return f"the server refused the TLS session ({alert.group(1)})" if alert else None


def _not_verified(cause: ssl.SSLCertVerificationError) -> str:
    code, message = cause.verify_code, cause.verify_message
    if code in _UNKNOWN_CA:
        return (f"the server's certificate does not verify (unknown CA: {message}): {option('ca')} must "
                f"name the CA that signed it")
    if code in _WRONG_HOST:
        return (f"the server's certificate does not verify (wrong host name: {message}): connect by a "
                f"name it holds, or {option('verify_identity')}")
    kind = "expired or not yet valid" if code in _NOT_IN_TIME else f"X509 error {code}"
    return f"the server's certificate does not verify ({kind}: {message})"


def plain_hint(code: int) -> str:
    """After a refused plain login: a server may refuse it for want of TLS (MariaDB says only
    1045, as for a wrong password; MySQL 3159). Not empty: a refusal, never retried."""
    if code in (ER_ACCESS_DENIED, ER_SECURE_TRANSPORT_REQUIRED):
        return (f"; a server with require_secure_transport=ON or a user created REQUIRE SSL refuses a "
                f"login without TLS: {ENABLE}")
    return ""

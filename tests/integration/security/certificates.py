"""Certificates made by the test, with `openssl`: a CA, the broker's certificate (for 127.0.0.1
and localhost) and a client's, both signed by it, each key PKCS#8 encrypted with a passphrase;
and a second CA nobody's certificate chains to (the "unknown CA" a client may wrongly trust).
Passphrases go to openssl through files (`-passin file:`), never its command line.

make_source_pki: the same for a MySQL/MariaDB source (issue #56 item 2): the server's key is not
encrypted (mariadbd takes no passphrase), and its certificate names `localhost` only, so that a
client connecting to 127.0.0.1 meets a wrong host name on the very same server."""
from __future__ import annotations

import subprocess
from dataclasses import dataclass, field
from pathlib import Path

DAYS = "2"


@dataclass(frozen=True)
class Pki:
    ca: Path           # the CA certificate (PEM): what both sides trust
    other_ca: Path     # a CA that signed nothing here
    broker: Path       # the broker's encrypted key, then its certificate (one PEM file)
    client_cert: Path  # the client's certificate (PEM)
    client_key: Path   # the client's encrypted PKCS#8 key (PEM)
    key_password: str = field(repr=False)  # the passphrase of both keys


def _openssl(*args: str, cwd: Path) -> None:
    run = subprocess.run(["openssl", *args], cwd=cwd, capture_output=True, text=True)
    if run.returncode != 0:
        raise RuntimeError(f"openssl {args[0]} failed: {run.stderr.strip()}")


def _ca(work: Path, name: str) -> None:
    _openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
             "-keyout", f"{name}.key", "-out", f"{name}.pem", "-days", DAYS, "-subj", f"/CN={name}",
             cwd=work)


def _issued(work: Path, name: str, san: str | None) -> None:
    """{name}.crt signed by ca.pem, {name}.plain.key its key (not encrypted, owner-only)."""
    _openssl("genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out",
             f"{name}.plain.key", cwd=work)
    (work / f"{name}.plain.key").chmod(0o600)
    _openssl("req", "-new", "-key", f"{name}.plain.key", "-subj", f"/CN={name}", "-out", f"{name}.csr",
             cwd=work)
    ext = work / f"{name}.ext"
    ext.write_text(f"subjectAltName={san}\n" if san else "basicConstraints=CA:FALSE\n")
    _openssl("x509", "-req", "-in", f"{name}.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
             "-days", DAYS, "-extfile", ext.name, "-out", f"{name}.crt", cwd=work)


def _signed(work: Path, name: str, san: str | None) -> None:
    """{name}.crt signed by ca.pem, {name}.key its PKCS#8 key encrypted with the passphrase file."""
    _issued(work, name, san)
    _openssl("pkcs8", "-topk8", "-in", f"{name}.plain.key", "-out", f"{name}.key", "-v1", "PBE-SHA1-3DES",
             "-passout", "file:passphrase", cwd=work)
    (work / f"{name}.plain.key").unlink()
    (work / f"{name}.key").chmod(0o600)


def make_pki(work: Path, key_password: str) -> Pki:
    work.mkdir(parents=True, exist_ok=True)
    passphrase = work / "passphrase"
    passphrase.write_text(key_password)
    passphrase.chmod(0o600)
    _ca(work, "ca")
    _ca(work, "other-ca")
    _signed(work, "broker", "IP:127.0.0.1,DNS:localhost")
    _signed(work, "client", None)
    broker = work / "broker.pem"
    broker.write_text((work / "broker.key").read_text() + (work / "broker.crt").read_text())
    broker.chmod(0o600)
    passphrase.unlink()
    for key in ("ca.key", "other-ca.key"):
        (work / key).unlink()
    return Pki(work / "ca.pem", work / "other-ca.pem", broker, work / "client.crt", work / "client.key",
               key_password)


@dataclass(frozen=True)
class SourcePki:
    ca: Path           # the CA certificate (PEM) that signed the server's and the client's
    other_ca: Path     # a CA that signed nothing here
    server_cert: Path  # the server's certificate: subjectAltName DNS:localhost only
    server_key: Path   # its key, not encrypted, owner-only
    client_cert: Path  # a client certificate (REQUIRE X509 users)
    client_key: Path   # its key, not encrypted, owner-only


def make_source_pki(work: Path) -> SourcePki:
    """A CA, a server certificate for `localhost` (not 127.0.0.1) and a client certificate, both
    signed by it, plain keys; and a CA that signed nothing (issue #56 item 2)."""
    work.mkdir(parents=True, exist_ok=True)
    _ca(work, "ca")
    _ca(work, "other-ca")
    _issued(work, "server", "DNS:localhost")
    _issued(work, "client", None)
    for key in ("ca.key", "other-ca.key"):
        (work / key).unlink()
    return SourcePki(work / "ca.pem", work / "other-ca.pem", work / "server.crt", work / "server.plain.key",
                     work / "client.crt", work / "client.plain.key")

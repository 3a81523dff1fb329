"""How every Kafka client of the project connects (README "Security"): the shipper's producer and
its resume reader, the rebuild reader, the simulator's producer (confluent-kafka, librdkafka's
names) and the job's Spark Kafka source (Java's names, `kafka.`-prefixed). Declared once here,
as the job configuration's `kafka_security` section and cdc-ship's `--kafka-*` options.

    KafkaSecurity        the settings (no secret): protocol, SASL mechanism and user, files
    .resolve(env)        -> KafkaAuth: the settings with the secrets and PEM texts read
    KafkaAuth.librdkafka()      {"security.protocol": ..., "sasl.password": ...} for confluent-kafka
    KafkaAuth.spark_options()   {"kafka.security.protocol": ..., "kafka.sasl.jaas.config": ...}

Secrets (the SASL password or OAuth client secret, the key's passphrase) come from a file its
owner alone may read (refused otherwise, like ssh refuses a private key others can read) or from
the environment (CDC_KAFKA_SASL_PASSWORD, CDC_KAFKA_KEY_PASSWORD, read by the entry points and
passed in: libraries do not read the environment); never from the command line. No repr, error
or log line holds one: errors name the setting and the file, never a file's text.

Spark's Java client reads PEM from strings (Kafka >= 2.7, KIP-651): the driver reads the CA,
certificate and key files and hands their text to the Kafka source, so executors need no copy of
them. The key is PKCS#8 (`BEGIN PRIVATE KEY`, or `BEGIN ENCRYPTED PRIVATE KEY` in a scheme
Java's Kafka client reads: `openssl pkcs8 -topk8 -v1 PBE-SHA1-3DES`; it refuses PBES2/AES keys,
"PBES2 SecretKeyFactory not available"). The texts holding secrets (the JAAS line, the key) are
options whose names the job's session redacts (pipelines/job/spark_session.py REDACTION_REGEX).
"""
from __future__ import annotations

import argparse
import stat
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Mapping

from libs.settings.errors import ConfigError
from libs.settings.fields import check_fields, setting

PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL = "PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"
PROTOCOLS = (PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL)
PLAIN, SCRAM_256, SCRAM_512, OAUTHBEARER = "PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER"
MECHANISMS = (PLAIN, SCRAM_256, SCRAM_512, OAUTHBEARER)
ENV_SASL_PASSWORD = "CDC_KAFKA_SASL_PASSWORD"
ENV_KEY_PASSWORD = "CDC_KAFKA_KEY_PASSWORD"
SECTION = "kafka_security"  # the job configuration's section (libs/config/job.py)
OPTION_PREFIX = "--kafka-"  # cdc-ship's options: --kafka-security-protocol, --kafka-ca-file, ...

_LOGIN_MODULES = {PLAIN: "org.apache.kafka.common.security.plain.PlainLoginModule",
                  SCRAM_256: "org.apache.kafka.common.security.scram.ScramLoginModule",
                  SCRAM_512: "org.apache.kafka.common.security.scram.ScramLoginModule",
                  OAUTHBEARER: "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule"}
_OAUTH_HANDLER = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginCallbackHandler"
_TLS_FIELDS = ("ca_file", "cert_file", "key_file", "key_password_file")
_SASL_FIELDS = ("sasl_username", "sasl_password_file", "oauth_token_endpoint", "oauth_scope")


class KafkaSecurityError(ConfigError):
    """A problem of one setting: `setting` is its field name (the job names it
    kafka_security.FIELD, cdc-ship --kafka-FIELD; see option_name)."""

    def __init__(self, setting_name: str, reason: str):
        self.setting, self.reason = setting_name, reason
        super().__init__(f"{setting_name}: {reason}")


@dataclass(frozen=True)
class KafkaSecurity:
    """The client security settings (README "Security"); every field a setting of the job's
    `kafka_security` section and a cdc-ship option `--kafka-FIELD` (underscores as dashes)."""

    security_protocol: str = setting(
        "How the Kafka clients connect: PLAINTEXT | SSL (TLS) | SASL_PLAINTEXT (a SASL login without "
        "TLS: the network sees the traffic, and a PLAIN password) | SASL_SSL (a SASL login over TLS)",
        PLAINTEXT, choices=PROTOCOLS)
    sasl_mechanism: str | None = setting(
        "The SASL mechanism of a SASL_* protocol: PLAIN | SCRAM-SHA-256 | SCRAM-SHA-512 | OAUTHBEARER "
        "(OIDC client credentials: oauth_token_endpoint)", None, choices=MECHANISMS)
    sasl_username: str | None = setting("The SASL user (PLAIN, SCRAM), or the OAuth client id (OAUTHBEARER)")
    sasl_password_file: str | None = setting(
        f"File holding the SASL password (OAUTHBEARER: the client secret; one trailing newline ignored), "
        f"readable by its owner only (chmod 600); unset: the environment variable {ENV_SASL_PASSWORD}")
    oauth_token_endpoint: str | None = setting("OAUTHBEARER: the OIDC token endpoint, https://...")
    oauth_scope: str | None = setting("OAUTHBEARER: the scope the token is asked for (optional)")
    ca_file: str | None = setting(
        "PEM file of the CA certificate(s) the broker's certificate must chain to (SSL, SASL_SSL); unset: "
        "the client library's default trust (librdkafka: OpenSSL's default paths; Spark: the JVM's cacerts)")
    cert_file: str | None = setting(
        "PEM file of this client's certificate (and its chain), for a broker that asks for one "
        "(ssl.client.auth); with key_file")
    key_file: str | None = setting(
        "PEM file of the certificate's PKCS#8 private key (BEGIN PRIVATE KEY, or BEGIN ENCRYPTED PRIVATE KEY "
        "made with `openssl pkcs8 -topk8 -v1 PBE-SHA1-3DES`: Java refuses AES-encrypted keys), readable by "
        "its owner only; may be the cert_file itself")
    key_password_file: str | None = setting(
        f"File holding key_file's passphrase (chmod 600); unset: the environment variable "
        f"{ENV_KEY_PASSWORD}, else the key is not encrypted")
    verify_hostname: bool = setting(
        "The broker's certificate must name the host the client connected to (ssl.endpoint.identification."
        "algorithm https); false: any certificate the CA signed is taken", True)

    def __post_init__(self) -> None:
        self.validate()

    def validate(self) -> None:
        """Types and choices, then what goes with what; one line naming the first bad setting."""
        try:
            check_fields(self)
        except ConfigError as exc:  # "FIELD: problem, got VALUE"
            name, _, reason = str(exc).partition(": ")
            raise KafkaSecurityError(name, reason) from None
        sasl, tls = self.security_protocol.startswith("SASL_"), self.security_protocol in (SSL, SASL_SSL)
        if sasl and self.sasl_mechanism is None:
            _refuse("sasl_mechanism", f"required with security_protocol {self.security_protocol}: "
                                      f"one of {MECHANISMS}")
        if not sasl:
            _only_with(self, ("sasl_mechanism", *_SASL_FIELDS), "a SASL_* security_protocol")
        if not tls:
            _only_with(self, _TLS_FIELDS, "security_protocol SSL or SASL_SSL")
            if not self.verify_hostname:
                _refuse("verify_hostname", f"only with security_protocol SSL or SASL_SSL, got "
                                           f"{self.security_protocol}")
        if sasl and self.sasl_username is None:
            _refuse("sasl_username", f"required with sasl_mechanism {self.sasl_mechanism}")
        if self.sasl_mechanism == OAUTHBEARER:
            if self.oauth_token_endpoint is None:
                _refuse("oauth_token_endpoint", "required with sasl_mechanism OAUTHBEARER")
            if not self.oauth_token_endpoint.startswith("https://"):
                _refuse("oauth_token_endpoint", "must be an https:// URL (it receives the client secret)")
        elif sasl:
            _only_with(self, ("oauth_token_endpoint", "oauth_scope"), "sasl_mechanism OAUTHBEARER")
        if (self.cert_file is None) != (self.key_file is None):
            _refuse("cert_file" if self.cert_file is None else "key_file",
                    "a client certificate needs both cert_file and key_file")
        if self.key_password_file is not None and self.key_file is None:
            _refuse("key_password_file", "needs key_file")

    @property
    def sasl(self) -> bool:
        return self.security_protocol.startswith("SASL_")

    def resolve(self, env: Mapping[str, str]) -> KafkaAuth:
        """The settings with their secrets (file, else `env`) and PEM texts read; an unreadable or
        wrong file, a secret file others may read or a missing secret is one KafkaSecurityError."""
        password = None
        if self.sasl:
            password = _secret(self.sasl_password_file, "sasl_password_file", env, ENV_SASL_PASSWORD)
            if password is None:
                _refuse("sasl_password_file", f"{self.sasl_mechanism} needs a password: sasl_password_file "
                                              f"or the environment variable {ENV_SASL_PASSWORD}")
        ca = _pem(self.ca_file, "ca_file", "CERTIFICATE") if self.ca_file else None
        cert = _pem(self.cert_file, "cert_file", "CERTIFICATE") if self.cert_file else None
        key, key_password = self._key(env) if self.key_file is not None else (None, None)
        return KafkaAuth(self, password, key_password, ca, cert, key)

    def _key(self, env: Mapping[str, str]) -> tuple[str, str | None]:
        """key_file's PEM key and, when it is encrypted, its passphrase."""
        _private(Path(self.key_file), "key_file")
        key = _pem(self.key_file, "key_file", "PRIVATE KEY", "ENCRYPTED PRIVATE KEY")
        if "ENCRYPTED PRIVATE KEY" not in key:
            if self.key_password_file is not None:
                _refuse("key_password_file", f"{self.key_file} is not encrypted: no passphrase to give")
            return key, None
        password = _secret(self.key_password_file, "key_password_file", env, ENV_KEY_PASSWORD)
        if password is None:
            _refuse("key_password_file", f"{self.key_file} is encrypted: its passphrase in key_password_file "
                                         f"or the environment variable {ENV_KEY_PASSWORD}")
        return key, password


@dataclass(frozen=True)
class KafkaAuth:
    """KafkaSecurity with what it names read: the two client libraries' settings. Never printed
    whole: every field but the settings is left out of its repr."""

    security: KafkaSecurity = field(default_factory=KafkaSecurity)
    sasl_password: str | None = field(default=None, repr=False)
    key_password: str | None = field(default=None, repr=False)
    ca_pem: str | None = field(default=None, repr=False)
    cert_pem: str | None = field(default=None, repr=False)
    key_pem: str | None = field(default=None, repr=False)

    def describe(self) -> str:
        """One line for a start-up message: protocol, mechanism and user, files (no secret)."""
        s = self.security
        parts = [s.security_protocol]
        if s.sasl:
            parts.append(f"{s.sasl_mechanism} as {s.sasl_username}")
        if s.ca_file:
            parts.append(f"CA {s.ca_file}")
        if s.cert_file:
            parts.append(f"client certificate {s.cert_file}")
        return ", ".join(parts)

    def librdkafka(self) -> dict[str, str]:
        """confluent-kafka (librdkafka) configuration; {} for PLAINTEXT: the clients as before."""
        s = self.security
        if s.security_protocol == PLAINTEXT:
            return {}
        conf = {"security.protocol": s.security_protocol}
        if s.sasl:
            conf["sasl.mechanism"] = s.sasl_mechanism
            if s.sasl_mechanism == OAUTHBEARER:
                conf |= {"sasl.oauthbearer.method": "oidc", "sasl.oauthbearer.client.id": s.sasl_username,
                         "sasl.oauthbearer.client.secret": self.sasl_password,
                         "sasl.oauthbearer.token.endpoint.url": s.oauth_token_endpoint}
                conf |= {"sasl.oauthbearer.scope": s.oauth_scope} if s.oauth_scope else {}
            else:
                conf |= {"sasl.username": s.sasl_username, "sasl.password": self.sasl_password}
        if s.security_protocol in (SSL, SASL_SSL):
            conf["ssl.endpoint.identification.algorithm"] = "https" if s.verify_hostname else "none"
            conf |= {"ssl.ca.location": s.ca_file} if s.ca_file else {}
            if s.cert_file:
                conf |= {"ssl.certificate.location": s.cert_file, "ssl.key.location": s.key_file}
                conf |= {"ssl.key.password": self.key_password} if self.key_password else {}
        return conf

    def spark_options(self, class_prefix: str = "") -> dict[str, str]:
        """Options of Spark's Kafka source (Java names, `kafka.`-prefixed); {} for PLAINTEXT.
        `class_prefix`: where the Kafka client classes are shaded ("kafkashaded." on Databricks)."""
        s = self.security
        if s.security_protocol == PLAINTEXT:
            return {}
        java = {"security.protocol": s.security_protocol}
        if s.sasl:
            java |= {"sasl.mechanism": s.sasl_mechanism, "sasl.jaas.config": self._jaas(class_prefix)}
            if s.sasl_mechanism == OAUTHBEARER:
                java |= {"sasl.login.callback.handler.class": class_prefix + _OAUTH_HANDLER,
                         "sasl.oauthbearer.token.endpoint.url": s.oauth_token_endpoint}
        if s.security_protocol in (SSL, SASL_SSL):
            java["ssl.endpoint.identification.algorithm"] = "https" if s.verify_hostname else ""
            if self.ca_pem:
                java |= {"ssl.truststore.type": "PEM", "ssl.truststore.certificates": self.ca_pem}
            if self.cert_pem:
                java |= {"ssl.keystore.type": "PEM", "ssl.keystore.certificate.chain": self.cert_pem,
                         "ssl.keystore.key": self.key_pem}
                java |= {"ssl.key.password": self.key_password} if self.key_password else {}
        return {f"kafka.{k}": v for k, v in java.items()}

    def _jaas(self, class_prefix: str) -> str:
        s = self.security
        if s.sasl_mechanism == OAUTHBEARER:
            values = {"clientId": s.sasl_username, "clientSecret": self.sasl_password}
            values |= {"scope": s.oauth_scope} if s.oauth_scope else {}
        else:
            values = {"username": s.sasl_username, "password": self.sasl_password}
        pairs = " ".join(f'{k}="{jaas_quoted(v)}"' for k, v in values.items())
        return f"{class_prefix}{_LOGIN_MODULES[s.sasl_mechanism]} required {pairs};"


def jaas_quoted(value: str) -> str:
    """A value inside a JAAS line's double quotes (Kafka's JaasConfig reads it with Java's
    StreamTokenizer: backslash escapes)."""
    return (value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\r", "\\r"))


def _refuse(name: str, reason: str):
    raise KafkaSecurityError(name, reason)


def _only_with(settings: KafkaSecurity, names: tuple[str, ...], needs: str) -> None:
    for name in names:
        if getattr(settings, name) is not None:
            _refuse(name, f"only with {needs}, got security_protocol {settings.security_protocol}"
                    + (f" and sasl_mechanism {settings.sasl_mechanism}" if settings.sasl_mechanism else ""))


def _private(path: Path, name: str) -> None:
    """Refuse a secret file that group or other users may read."""
    try:
        mode = path.stat().st_mode
    except OSError as exc:
        _refuse(name, f"cannot read {path}: {exc.strerror}")
    if mode & (stat.S_IRGRP | stat.S_IROTH):
        _refuse(name, f"{path} is readable by other users: chmod 600 it (it holds a secret)")


def _read(path: Path, name: str) -> str:
    try:
        return path.read_bytes().decode("utf-8")
    except OSError as exc:
        _refuse(name, f"cannot read {path}: {exc.strerror}")
    except UnicodeDecodeError:
        _refuse(name, f"{path} is not UTF-8 text")


def _secret(file: str | None, name: str, env: Mapping[str, str], variable: str) -> str | None:
    """The secret in `file` (one trailing newline dropped), else the environment's `variable`."""
    if file is None:
        return env.get(variable) or None
    path = Path(file)
    _private(path, name)
    text = _read(path, name)
    text = text[:-2] if text.endswith("\r\n") else text[:-1] if text.endswith("\n") else text
    if not text:
        _refuse(name, f"{path} is empty")
    return text


def _pem(file: str, name: str, *kinds: str) -> str:
    """The PEM blocks of `kinds` in the file, in its order (other blocks left out)."""
    path, blocks, block = Path(file), [], None
    for line in _read(path, name).splitlines():
        if block is None and line.startswith("-----BEGIN ") and line[11:].rstrip("-") in kinds:
            block = [line]
        elif block is not None:
            block.append(line)
            if line.startswith("-----END "):
                blocks.append("\n".join(block))
                block = None
    if not blocks:
        other = " (a PKCS#1/SEC1 key: convert it with openssl pkcs8 -topk8)" if "PRIVATE KEY" in kinds else ""
        _refuse(name, f"{path} holds no PEM {' or '.join(kinds)} block{other}")
    return "\n".join(blocks) + "\n"


PLAINTEXT_AUTH = KafkaAuth()  # the default: no security, the clients' settings as before


# -- the same settings as command-line options (cdc-ship, the rebuild and simulator tools) ----------
def option_name(setting_name: str) -> str:
    """cdc-ship's option of a KafkaSecurity field: --kafka-security-protocol, --kafka-ca-file, ..."""
    return OPTION_PREFIX + setting_name.replace("_", "-")


def add_arguments(ap: argparse.ArgumentParser) -> None:
    """Every KafkaSecurity field as `--kafka-FIELD` (help: its doc line), and the secrets' own
    options declared only to be refused (argparse would echo an unknown one's value back)."""
    group = ap.add_argument_group("Kafka security (README \"Security\"; the job's kafka_security section)")
    for f in fields(KafkaSecurity):
        doc = f.metadata["doc"].replace("%", "%%")
        if f.name == "verify_hostname":
            group.add_argument(option_name(f.name), action=argparse.BooleanOptionalAction, default=None,
                               dest=f"kafka_{f.name}", help=doc + " (default: verify)")
            continue
        choices = f.metadata["choices"] or None
        group.add_argument(option_name(f.name), dest=f"kafka_{f.name}", default=None, choices=choices,
                           metavar=None if choices else _metavar(f.name), help=doc)
    for refused in ("sasl_password", "key_password"):
        ap.add_argument(option_name(refused), dest=f"kafka_{refused}", nargs="?", const="", default=None,
                        help=argparse.SUPPRESS)


def _metavar(setting_name: str) -> str:
    if setting_name.endswith("_file"):
        return "FILE"
    return {"sasl_username": "USER", "oauth_token_endpoint": "URL", "oauth_scope": "SCOPE"}.get(
        setting_name, setting_name.upper())


def from_arguments(args: argparse.Namespace) -> KafkaSecurity:
    """The settings the options give (KafkaSecurityError when they do not go together); a secret
    given as an option is refused (KafkaSecurityError), whatever the rest says."""
    for refused, file in (("sasl_password", "sasl_password_file"), ("key_password", "key_password_file")):
        if getattr(args, f"kafka_{refused}", None) is not None:
            variable = ENV_SASL_PASSWORD if refused == "sasl_password" else ENV_KEY_PASSWORD
            _refuse(refused, f"not accepted on the command line (the process list and shell history would "
                             f"show it): use {option_name(file)} FILE or the environment variable {variable}")
    values = {f.name: getattr(args, f"kafka_{f.name}") for f in fields(KafkaSecurity)}
    return KafkaSecurity(**{k: v for k, v in values.items() if v is not None})

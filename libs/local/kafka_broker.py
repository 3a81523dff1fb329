"""A single-node Apache Kafka broker in KRaft mode for local runs and integration tests.

The broker is the real one (kafka_2.13 from Maven Central, resolved by `scripts/dev setup` into
`.cache/jars/kafka`), run in its own JVM with a project-local data directory. No mocks: the
integration tests and the embedded default talk to it with confluent-kafka and Spark's Kafka
source. Start is idempotent; stop kills exactly the pid that start recorded.

Optionally a second client listener, SASL_SSL (SaslSslListener: SCRAM users added after start
with add_scram_user, the broker's certificate and the CA of its clients' certificates made by
the caller), for the Kafka security tests (README "Security"); without it the broker is the plain
PLAINTEXT one every other test and run uses.
"""
from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

DEFAULT_PORT = 19092  # away from Kafka's usual 9092 so a developer's own broker never clashes

_LOG4J = """log4j.rootLogger=WARN, file
log4j.appender.file=org.apache.log4j.FileAppender
log4j.appender.file.File={log}
log4j.appender.file.layout=org.apache.log4j.PatternLayout
log4j.appender.file.layout.ConversionPattern=[%d] %p %m (%c)%n
log4j.logger.kafka.server.KafkaServer=INFO
log4j.logger.kafka.server.KafkaRaftServer=INFO
"""


class BrokerError(RuntimeError):
    pass


@dataclass(frozen=True)
class SaslSslListener:
    """A SASL_SSL client listener on 127.0.0.1:port, beside the PLAINTEXT one (which stays the
    inter-broker listener and the one start() waits on)."""
    port: int
    keystore_pem: Path  # the broker's PKCS#8 key, encrypted with key_password, and its certificate
    key_password: str = field(repr=False)
    client_ca_pem: Path | None = None  # clients must present a certificate this CA signed; None: none asked
    mechanisms: tuple[str, ...] = ("SCRAM-SHA-512", "SCRAM-SHA-256")

    def properties(self) -> dict[str, str]:
        """server.properties of the listener (named SASL_SSL; per-listener SSL settings)."""
        prefix = "listener.name.sasl_ssl."
        props = {"sasl.enabled.mechanisms": ",".join(self.mechanisms),
                 prefix + "ssl.keystore.type": "PEM",
                 prefix + "ssl.keystore.location": str(self.keystore_pem),
                 prefix + "ssl.key.password": self.key_password}
        for mechanism in self.mechanisms:
            props[f"{prefix}{mechanism.lower()}.sasl.jaas.config"] = (
                "org.apache.kafka.common.security.scram.ScramLoginModule required;")
        if self.client_ca_pem is not None:  # KIP-684: mutual TLS on a SASL_SSL listener, per listener
            props |= {prefix + "ssl.truststore.type": "PEM",
                      prefix + "ssl.truststore.location": str(self.client_ca_pem),
                      prefix + "ssl.client.auth": "required"}
        return props


@dataclass(frozen=True)
class BrokerConfig:
    jars_dir: Path  # directory of the broker's jars (.cache/jars/kafka)
    data_dir: Path  # everything the broker writes: logs, metadata, pid file
    port: int = DEFAULT_PORT  # client listener on 127.0.0.1
    heap: str = "512m"  # broker JVM heap; CI machines have 2 cores and share memory with Spark
    properties: tuple[tuple[str, str], ...] = ()  # server.properties set over the defaults below
    sasl_ssl: SaslSslListener | None = None  # a second client listener (module docstring)

    @property
    def controller_port(self) -> int:
        return self.port + 1

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def sasl_ssl_bootstrap(self) -> str:
        if self.sasl_ssl is None:
            raise BrokerError("this broker has no SASL_SSL listener")
        return f"127.0.0.1:{self.sasl_ssl.port}"

    @property
    def pid_file(self) -> Path:
        return self.data_dir / "broker.pid"

    @property
    def log_file(self) -> Path:
        return self.data_dir / "broker.log"


def free_port_pair() -> int:
    """A port p with p and p+1 free on 127.0.0.1: the client and controller listeners of a
    private broker (tests, benchmarks)."""
    for _ in range(50):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        with socket.socket() as s2:
            try:
                s2.bind(("127.0.0.1", port + 1))
            except OSError:
                continue
        return port
    raise BrokerError("no free pair of adjacent ports on 127.0.0.1 for a private Kafka broker")


def free_port() -> int:
    """A free port on 127.0.0.1 (a SaslSslListener's)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _port_open(port: int, timeout: float = 0.5) -> bool:
    with socket.socket() as s:
        s.settimeout(timeout)
        return s.connect_ex(("127.0.0.1", port)) == 0


def _reap(pid: int) -> None:
    """Collect the exit status when the broker is our own child (started in this process)."""
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        pass


def _pid_alive(pid: int) -> bool:
    _reap(pid)
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # a zombie child still answers kill(0); read its state
    try:
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except OSError:
        return False


def _read_pid(cfg: BrokerConfig) -> int | None:
    try:
        pid = int(cfg.pid_file.read_text().strip())
    except (OSError, ValueError):
        return None
    return pid if _pid_alive(pid) else None


def _classpath(cfg: BrokerConfig) -> str:
    jars = sorted(cfg.jars_dir.glob("*.jar"))
    if not any(j.name.startswith("kafka_2.13-") for j in jars):
        raise BrokerError(f"no Kafka broker jars in {cfg.jars_dir}: run `scripts/dev setup` first")
    return os.pathsep.join(str(j) for j in jars)


def _java() -> str:
    java = shutil.which("java")
    if not java:
        raise BrokerError("Java is required to run the Kafka broker (Java 17; `java` not on PATH)")
    return java


def _listeners(cfg: BrokerConfig) -> dict[str, str]:
    """The client, controller and (when asked for) SASL_SSL listeners."""
    client = f"PLAINTEXT://127.0.0.1:{cfg.port}"
    props = {"listeners": f"{client},CONTROLLER://127.0.0.1:{cfg.controller_port}",
             "advertised.listeners": client,
             "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT"}
    if cfg.sasl_ssl is not None:
        secure = f",SASL_SSL://127.0.0.1:{cfg.sasl_ssl.port}"
        protocols = props["listener.security.protocol.map"] + ",SASL_SSL:SASL_SSL"
        props = {"listeners": props["listeners"] + secure, "advertised.listeners": client + secure,
                 "listener.security.protocol.map": protocols, **cfg.sasl_ssl.properties()}
    return props


def _write_config(cfg: BrokerConfig) -> Path:
    props = {
        "process.roles": "broker,controller",
        "node.id": "1",
        "controller.quorum.voters": f"1@127.0.0.1:{cfg.controller_port}",
        **_listeners(cfg),
        "controller.listener.names": "CONTROLLER",
        "inter.broker.listener.name": "PLAINTEXT",
        "log.dirs": str(cfg.data_dir / "logs"),
        "num.partitions": "1",
        "offsets.topic.replication.factor": "1",
        "transaction.state.log.replication.factor": "1",
        "transaction.state.log.min.isr": "1",
        "group.initial.rebalance.delay.ms": "0",
        "auto.create.topics.enable": "true",
        "message.max.bytes": str(64 * 1024 * 1024),  # a binlog event can be as large as max_allowed_packet
        "replica.fetch.max.bytes": str(64 * 1024 * 1024),
        "log.retention.hours": "-1",  # the topic is the source of truth for rebuilding binlogs
    } | dict(cfg.properties)
    path = cfg.data_dir / "server.properties"
    path.touch(mode=0o600)  # a SASL_SSL listener's key password: for the broker's user only
    path.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
    (cfg.data_dir / "log4j.properties").write_text(_LOG4J.format(log=cfg.log_file))
    return path


def status(cfg: BrokerConfig) -> dict:
    pid = _read_pid(cfg)
    return {"running": pid is not None and _port_open(cfg.port), "pid": pid, "bootstrap": cfg.bootstrap}


def start(cfg: BrokerConfig, *, timeout: float = 90.0) -> dict:
    """Start the broker (no-op when ours is already running) and wait until it serves metadata."""
    cfg.data_dir.mkdir(parents=True, exist_ok=True)
    st = status(cfg)
    if st["running"]:
        return st | {"already_running": True}
    ports = [cfg.port, cfg.controller_port] + ([cfg.sasl_ssl.port] if cfg.sasl_ssl is not None else [])
    if any(_port_open(port) for port in ports):
        raise BrokerError(
            f"port {' or '.join(map(str, ports))} on 127.0.0.1 is taken by another process; "
            "choose another with --port")
    java, cp = _java(), _classpath(cfg)
    props = _write_config(cfg)
    jvm = [java, f"-Xmx{cfg.heap}", f"-Xms{cfg.heap}", "-XX:+UseG1GC",
           f"-Dlog4j.configuration=file:{cfg.data_dir / 'log4j.properties'}", "-cp", cp]
    if not (cfg.data_dir / "logs" / "meta.properties").exists():
        fmt = subprocess.run(
            jvm + ["kafka.tools.StorageTool", "format", "-t", uuid.uuid4().hex[:22], "-c", str(props)],
            capture_output=True, text=True)
        if fmt.returncode != 0:
            raise BrokerError(f"kafka storage format failed: {fmt.stderr or fmt.stdout}")
    with open(cfg.data_dir / "broker.out", "ab") as out:
        proc = subprocess.Popen(jvm + ["kafka.Kafka", str(props)], stdout=out, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True)
    cfg.pid_file.write_text(str(proc.pid))
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise BrokerError(f"Kafka broker exited with {proc.returncode}; "
                              f"see {cfg.data_dir / 'broker.out'}")
        if _port_open(cfg.port) and _metadata_ok(cfg.bootstrap):
            return status(cfg) | {"already_running": False}
        time.sleep(0.5)
    stop(cfg)
    raise BrokerError(f"Kafka broker not ready after {timeout:.0f}s; see {cfg.log_file}")


def _metadata_ok(bootstrap: str) -> bool:
    from confluent_kafka.admin import AdminClient

    try:
        AdminClient({"bootstrap.servers": bootstrap}).list_topics(timeout=2)
        return True
    except Exception:  # KafkaException while the broker is still starting
        return False


def add_scram_user(cfg: BrokerConfig, user: str, password: str, mechanism: str = "SCRAM-SHA-512",
                   timeout: float = 30.0) -> None:
    """A SCRAM user of the SASL_SSL listener, set through the PLAINTEXT listener (Kafka's admin API,
    stored in the cluster metadata as a salted hash): no command line ever holds the password."""
    from confluent_kafka.admin import (AdminClient, ScramCredentialInfo, ScramMechanism,
                                       UserScramCredentialUpsertion)

    kind = {"SCRAM-SHA-256": ScramMechanism.SCRAM_SHA_256, "SCRAM-SHA-512": ScramMechanism.SCRAM_SHA_512}
    upsert = UserScramCredentialUpsertion(user, ScramCredentialInfo(kind[mechanism], 8192), password.encode())
    admin = AdminClient({"bootstrap.servers": cfg.bootstrap})
    admin.alter_user_scram_credentials([upsert], request_timeout=timeout)[user].result(timeout)


def stop(cfg: BrokerConfig, *, timeout: float = 30.0) -> bool:
    """Stop the broker this project started (by its recorded pid). True when one was stopped."""
    pid = _read_pid(cfg)
    if pid is None:
        cfg.pid_file.unlink(missing_ok=True)
        return False
    os.killpg(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while _pid_alive(pid) and time.monotonic() < deadline:
        time.sleep(0.2)
    if _pid_alive(pid):
        os.killpg(pid, signal.SIGKILL)
    try:  # our own child (started in this process): collect it so no zombie stays behind
        os.waitpid(pid, 0)
    except ChildProcessError:
        pass
    cfg.pid_file.unlink(missing_ok=True)
    return True

"""The peer's capture side for bench/peer_debezium.py: Debezium's MariaDB connector in a Kafka
Connect standalone worker, publishing change events to the project's broker.

Not a project dependency. Everything lives under its own cache directory (default
.cache/bench-debezium), resolved from Maven Central with `mvn dependency:copy-dependencies` (as
scripts/dev does for the project's jars) from two poms in bench/debezium/:

    connect/                                  Kafka Connect's worker (connect-runtime + connect-json
                                              3.9.1, the project broker's version) + slf4j-reload4j
    plugins/debezium-connector-mariadb/       Debezium 3.1.0.Final's MariaDB connector + its deps
                                              (plugin.path: loaded in its own class loader)

The worker is ConnectStandalone (what the distribution's connect-standalone.sh runs; the project
installs Kafka from Maven jars, which have no bin/ scripts): offsets in a file, REST on a free
port. Converters: JsonConverter WITHOUT schemas on keys and values, so a value is the bare
Debezium envelope {"before", "after", "source", "op", "ts_ms", ...}.

    dirs = resolve(cache_dir)                         # mvn, once; a second run needs no network
    with ConnectWorker.start(dirs, work_dir, bootstrap, server_props) as worker:
        worker.wait_streaming()                       # connector RUNNING, binlog client connected
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
POMS = {"connect": BENCH_DIR / "debezium" / "connect.pom.xml",
        "plugins/debezium-connector-mariadb": BENCH_DIR / "debezium" / "connector.pom.xml"}
CONNECTOR_NAME = "peer-mariadb"
CONNECTOR_CLASS = "io.debezium.connector.mariadb.MariaDbConnector"

_LOG4J = """log4j.rootLogger=INFO, file
log4j.appender.file=org.apache.log4j.FileAppender
log4j.appender.file.File={log}
log4j.appender.file.layout=org.apache.log4j.PatternLayout
log4j.appender.file.layout.ConversionPattern=[%d] %p %m (%c)%n
log4j.logger.org.apache.kafka=WARN
log4j.logger.org.apache.kafka.connect.runtime.WorkerSourceTask=INFO
log4j.logger.org.reflections=ERROR
"""


@dataclass(frozen=True)
class PeerDirs:
    cache: Path

    @property
    def connect_jars(self) -> Path:
        return self.cache / "connect"

    @property
    def plugin_path(self) -> Path:
        return self.cache / "plugins"


def resolve(cache: Path) -> PeerDirs:
    """The worker's and the connector's jars from Maven Central into `cache` (again only when a
    pom changed: a stamp of its hash beside the jars)."""
    mvn = shutil.which("mvn")
    for sub, pom in POMS.items():
        out = cache.resolve() / sub  # absolute: mvn -f takes a relative one from the pom's folder
        want = hashlib.sha256(pom.read_bytes()).hexdigest()
        stamp = out / ".stamp"
        if stamp.exists() and stamp.read_text().strip() == want:
            continue
        if mvn is None:
            raise SystemExit("peer set-up: Maven (mvn) is required to fetch Debezium and Kafka Connect")
        print(f"peer set-up: resolving {pom.name} from Maven Central into {out}", flush=True)
        shutil.rmtree(out, ignore_errors=True)
        done = subprocess.run([mvn, "-q", "-B", "-f", str(pom), "dependency:copy-dependencies",
                               "-DincludeScope=runtime", f"-DoutputDirectory={out}"],
                              capture_output=True, text=True)
        if done.returncode != 0:
            raise SystemExit(f"peer set-up: mvn failed for {pom}:\n"
                             f"{done.stdout[-3000:]}{done.stderr[-3000:]}")
        stamp.write_text(want + "\n")
    return PeerDirs(cache)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _properties(path: Path, props: dict[str, str]) -> Path:
    path.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
    return path


@dataclass
class ConnectWorker:
    """One ConnectStandalone JVM running the Debezium MariaDB connector (one task)."""

    process: subprocess.Popen
    rest_port: int
    log_file: Path

    @classmethod
    def start(cls, dirs: PeerDirs, work: Path, bootstrap: str, *, host: str, port: int, user: str,
              password: str, database: str, topic_prefix: str, server_id: int = 5400,
              heap: str = "1g") -> "ConnectWorker":
        work.mkdir(parents=True, exist_ok=True)
        rest_port = _free_port()
        log_file = work / "connect.log"
        (work / "log4j.properties").write_text(_LOG4J.format(log=log_file))
        worker = _properties(work / "worker.properties", {
            "bootstrap.servers": bootstrap,
            "key.converter": "org.apache.kafka.connect.json.JsonConverter",
            "value.converter": "org.apache.kafka.connect.json.JsonConverter",
            "key.converter.schemas.enable": "false",
            "value.converter.schemas.enable": "false",
            "offset.storage.file.filename": str(work / "connect.offsets"),
            "offset.flush.interval.ms": "1000",
            "plugin.path": str(dirs.plugin_path),
            "listeners": f"http://127.0.0.1:{rest_port}",
        })
        connector = _properties(work / "connector.properties", {
            "name": CONNECTOR_NAME,
            "connector.class": CONNECTOR_CLASS,
            "tasks.max": "1",
            "database.hostname": host,
            "database.port": str(port),
            "database.user": user,
            "database.password": password,
            "database.server.id": str(server_id),
            "database.ssl.mode": "disable",
            "topic.prefix": topic_prefix,
            "database.include.list": database,
            # the tables are empty when it starts: their schema, then the binlog from that
            # position (the project's shipper takes its --snapshot at the same point)
            "snapshot.mode": "no_data",
            "schema.history.internal.kafka.bootstrap.servers": bootstrap,
            "schema.history.internal.kafka.topic": f"{topic_prefix}-schema-history",
            "include.schema.changes": "false",
            "tombstones.on.delete": "false",  # a delete is its 'd' event; no null-valued record after it
            "decimal.handling.mode": "string",  # DECIMAL as its digits, not base64 of the unscaled bytes
        })
        java = shutil.which("java")
        if java is None:
            raise SystemExit("peer set-up: java is required for Kafka Connect")
        classpath = os.pathsep.join(str(j) for j in sorted(dirs.connect_jars.glob("*.jar")))
        with open(work / "connect.out", "ab") as out:
            proc = subprocess.Popen(
                [java, f"-Xmx{heap}", f"-Xms{heap}", "-XX:+UseG1GC",
                 f"-Dlog4j.configuration=file:{work / 'log4j.properties'}", "-cp", classpath,
                 "org.apache.kafka.connect.cli.ConnectStandalone", str(worker), str(connector)],
                stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
        return cls(proc, rest_port, log_file)

    def status(self) -> dict | None:
        try:
            with urllib.request.urlopen(
                    f"http://127.0.0.1:{self.rest_port}/connectors/{CONNECTOR_NAME}/status", timeout=2) as r:
                return json.load(r)
        except (urllib.error.URLError, OSError, ValueError):
            return None

    def wait_streaming(self, timeout: float = 180.0) -> None:
        """Until the connector's task is RUNNING and its binlog client has connected (its
        no_data snapshot finished: changes from now on are captured)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise SystemExit(f"Kafka Connect exited {self.process.returncode}: {self.tail()}")
            st = self.status()
            tasks = (st or {}).get("tasks", [])
            if any(t.get("state") == "FAILED" for t in tasks):
                raise SystemExit(f"Debezium task failed: {tasks[0].get('trace', '')[:3000]}")
            if tasks and all(t.get("state") == "RUNNING" for t in tasks) and self._streaming():
                return
            time.sleep(0.5)
        raise SystemExit(f"Debezium not streaming after {timeout:.0f} s: {self.tail()}")

    def _streaming(self) -> bool:
        try:
            text = self.log_file.read_text(errors="replace")
        except OSError:
            return False
        return "Connected to binlog at" in text or "Connected to MariaDB binlog" in text

    def tail(self, lines: int = 30) -> str:
        try:
            return "\n".join(self.log_file.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"

    def cpu_pid(self) -> int:
        return self.process.pid

    def stop(self, timeout: float = 30.0) -> None:
        if self.process.poll() is not None:
            return
        os.killpg(self.process.pid, signal.SIGTERM)
        try:
            self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(10)

    def __enter__(self) -> "ConnectWorker":
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

"""A private MariaDB server (never a system service): for the tests, the benchmarks and the
onboarding demo (pipelines/onboard_demo.py).

    from libs.local.mariadb_server import MariaDBServer
    with MariaDBServer.start(tmp_dir) as db:          # or the session fixture `mariadb`
        db.sql("CREATE DATABASE d; CREATE TABLE d.t (id INT PRIMARY KEY); INSERT INTO d.t VALUES (1)")
        db.query("SELECT COUNT(*) FROM d.t")        # -> [(1,)]
        db.binlog_path("mdb-bin.000001")             # bytes on disk: db.binlog_path(f).read_bytes()

API (kept small on purpose; other suites reuse it):
  host, port, socket, user, password   TCP login for clients/replicas (user has ALL PRIVILEGES)
  binlog_dir                           directory of mdb-bin.NNNNNN + mdb-bin.index
  sql(script, database=None)           run a multi-statement script with the `mariadb` client
  query(sql, args=None) -> list[tuple] one statement through PyMySQL (TCP, autocommit)
  connect(**kw) -> pymysql.Connection  a new TCP connection
  master_status() -> (file, pos)       SHOW MASTER STATUS
  flush_binlogs() -> str               FLUSH BINARY LOGS; returns the new current file
  binlog_path(name) -> Path
  stop()
  kill()                               SIGKILL mariadbd, as a crash (bench/chaos_restarts.py)
  restart(timeout)                     mariadbd again on its data dir, binlog and port (crash recovery)
Replication (failover tests): start(..., server_id=N) gives each server its own id; every
server runs log_slave_updates=ON, so a replica's binlog holds its primary's transactions under
their GTIDs and can take over as the binlog source.
  replicate_from(primary)              CHANGE MASTER TO ... MASTER_USE_GTID=slave_pos; START SLAVE
  wait_caught_up(primary, timeout)     until this replica applied the primary's @@gtid_binlog_pos
  promote()                            STOP SLAVE; RESET SLAVE ALL; read_only OFF: a primary now
TLS (issue #56 item 2 tests): start(..., tls=ServerTls(ca, cert, key)) serves TLS with that
certificate and, by default, require_secure_transport=ON (a TCP client without TLS is refused; the
socket stays usable); query() and connect() then go over TLS, trusting `ca`.

Server options follow /work/shared/corpus/README.md (the corpus' start_mariadb.sh): binlog ROW,
CRC32, annotate on, server_id 1, 127.0.0.1 + a free port + its own socket, with a smaller
buffer pool for CI. Runs as root (--user=root) in a temporary datadir.
"""
from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

import pymysql

BINLOG_BASENAME = "mdb-bin"
USER, PASSWORD = "cdc", "cdc-test"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _binary(name: str, *alternatives: str) -> str:
    for candidate in (name, *alternatives):
        found = shutil.which(candidate) or (f"/usr/sbin/{candidate}"
                                            if os.path.exists(f"/usr/sbin/{candidate}") else None)
        if found:
            return found
    raise RuntimeError(f"{name} not found: run scripts/install_mariadb.sh")


@dataclass(frozen=True)
class ServerTls:
    """A TLS server: its certificate and key (PEM, the key not encrypted), the CA its clients trust
    (and client certificates must chain to), and whether TCP clients must use TLS."""

    ca: Path
    cert: Path
    key: Path
    require: bool = True

    def options(self) -> tuple[str, ...]:
        required = ("--require-secure-transport=ON",) if self.require else ()
        return (f"--ssl-ca={self.ca}", f"--ssl-cert={self.cert}", f"--ssl-key={self.key}", *required)

    def client_ssl(self) -> dict:
        """PyMySQL's ssl= for this server's own clients: the chain checked, not the host name."""
        return {"ca": str(self.ca), "check_hostname": False}


@dataclass
class MariaDBServer:
    base_dir: Path
    port: int
    host: str = "127.0.0.1"
    user: str = USER
    password: str = PASSWORD
    process: subprocess.Popen | None = field(default=None, repr=False)
    command: list[str] = field(default_factory=list, repr=False)  # mariadbd's, for restart()
    client_ssl: dict | None = field(default=None, repr=False)  # connect()'s ssl= (ServerTls)

    @property
    def socket(self) -> Path:
        return self.base_dir / "mdb.sock"

    @property
    def binlog_dir(self) -> Path:
        return self.base_dir / "binlog"

    @property
    def tmp_dir(self) -> Path:
        # Its own, not the shared /tmp: a server names its on-disk temporary tables by its pid,
        # and two mariadb-install-db runs started together under load deleted each other's
        # there ("Error on delete of '/tmp/#sql-temptable-...'": 2 of 24 pairs failed, 0 of 24
        # with a directory each), which errored every integration test of one suite worker.
        return self.base_dir / "tmp"

    @property
    def data_dir(self) -> Path:
        return self.base_dir / "data"

    @property
    def error_log(self) -> Path:
        return self.base_dir / "error.log"

    @classmethod
    def start(cls, base_dir: Path, *, extra_options: tuple[str, ...] = (), server_id: int = 1,
              timeout: float = 60.0, tls: ServerTls | None = None) -> "MariaDBServer":
        """mariadb-install-db into base_dir/data, then mariadbd in the background."""
        server = cls(Path(base_dir), _free_port(), client_ssl=None if tls is None else tls.client_ssl())
        extra_options = (*(tls.options() if tls is not None else ()), *extra_options)
        server.data_dir.mkdir(parents=True, exist_ok=True)
        server.binlog_dir.mkdir(parents=True, exist_ok=True)
        server.tmp_dir.mkdir(parents=True, exist_ok=True)
        install = subprocess.run(
            [_binary("mariadb-install-db", "mysql_install_db"), "--no-defaults",
             f"--datadir={server.data_dir}", f"--tmpdir={server.tmp_dir}", "--user=root",
             "--auth-root-authentication-method=socket", "--skip-test-db"], capture_output=True, text=True)
        if install.returncode != 0:
            raise RuntimeError(f"mariadb-install-db failed:\n{install.stdout}\n{install.stderr}")
        args = [_binary("mariadbd", "mysqld"), "--no-defaults", "--user=root",
                f"--datadir={server.data_dir}", f"--tmpdir={server.tmp_dir}", f"--socket={server.socket}",
                f"--pid-file={server.base_dir / 'mdb.pid'}", f"--log-error={server.error_log}",
                f"--log-bin={server.binlog_dir / BINLOG_BASENAME}", f"--server-id={server_id}",
                "--log-slave-updates=ON",
                "--binlog-format=ROW", "--binlog-checksum=CRC32", "--binlog-annotate-row-events=ON",
                "--skip-networking=0", "--bind-address=127.0.0.1", f"--port={server.port}",
                "--skip-name-resolve", "--max-binlog-size=1G", "--max-allowed-packet=256M",
                "--binlog-cache-size=1M", "--innodb-buffer-pool-size=128M",
                "--innodb-flush-log-at-trx-commit=2", "--sync-binlog=0",
                "--explicit-defaults-for-timestamp=1", "--skip-log-warnings", *extra_options]
        server.command = args
        server._launch()
        server._wait_ready(timeout)
        server.sql(f"CREATE USER '{USER}'@'%' IDENTIFIED BY '{PASSWORD}';"
                   f"GRANT ALL PRIVILEGES ON *.* TO '{USER}'@'%' WITH GRANT OPTION;")
        return server

    def _launch(self) -> None:
        self.process = subprocess.Popen(self.command, stdout=subprocess.DEVNULL,
                                        stderr=subprocess.DEVNULL, start_new_session=True)

    def kill(self) -> None:
        """SIGKILL mariadbd, as a crash kills it (no shutdown, nothing flushed by the server
        itself); returns once it is gone."""
        if self.process is not None and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(30)

    def restart(self, timeout: float = 120.0) -> None:
        """mariadbd again on the same data directory, binlog and port, after stop() or kill()
        (after a kill, InnoDB and the binlog recover as after a crash)."""
        if self.process is not None and self.process.poll() is None:
            raise RuntimeError("mariadbd is still running")
        self.socket.unlink(missing_ok=True)  # a killed server's: ready once the new one makes it
        self._launch()
        self._wait_ready(timeout)

    def _wait_ready(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"mariadbd exited with {self.process.returncode}:\n"
                                   f"{self._log_tail()}")
            if self.socket.exists():
                probe = subprocess.run(self._client_args() + ["-e", "SELECT 1"],
                                       capture_output=True)
                if probe.returncode == 0:
                    return
            time.sleep(0.2)
        self.stop()
        raise RuntimeError(f"mariadbd not ready after {timeout:.0f}s:\n{self._log_tail()}")

    def _log_tail(self) -> str:
        try:
            return "\n".join(self.error_log.read_text(errors="replace").splitlines()[-20:])
        except OSError:
            return "(no error log)"

    def _client_args(self) -> list[str]:
        return [_binary("mariadb", "mysql"), "--no-defaults", f"--socket={self.socket}", "-uroot",
                "--default-character-set=utf8mb4", "--batch"]

    def sql(self, script: str, database: str | None = None) -> str:
        """Run `script` (any number of statements) with the mariadb client; returns stdout."""
        args = self._client_args() + ([database] if database else [])
        done = subprocess.run(args, input=script, capture_output=True, text=True)
        if done.returncode != 0:
            raise RuntimeError(f"SQL failed ({done.returncode}): {done.stderr.strip()}")
        return done.stdout

    def connect(self, **kw) -> pymysql.Connection:
        if self.client_ssl is not None:
            kw.setdefault("ssl", self.client_ssl)
        return pymysql.connect(host=self.host, port=self.port, user=self.user,
                               password=self.password, autocommit=True, **kw)

    def query(self, statement: str, args=None) -> list[tuple]:
        conn = self.connect()
        try:
            with conn.cursor() as cur:
                cur.execute(statement, args)
                return list(cur.fetchall())
        finally:
            conn.close()

    def master_status(self) -> tuple[str, int]:
        row = self.query("SHOW MASTER STATUS")[0]
        return row[0], int(row[1])

    def flush_binlogs(self) -> str:
        self.query("FLUSH BINARY LOGS")
        return self.master_status()[0]

    def binlog_path(self, name: str) -> Path:
        return self.binlog_dir / name

    def replicate_from(self, primary: "MariaDBServer") -> None:
        """Become a GTID replica of `primary`, from its transactions after now on (each server
        created its own user at start: replaying the primary's CREATE USER would fail)."""
        self.query("SET GLOBAL gtid_slave_pos = %s", (primary.query("SELECT @@gtid_binlog_pos")[0][0],))
        self.query("CHANGE MASTER TO MASTER_HOST=%s, MASTER_PORT=%s, MASTER_USER=%s, "
                   "MASTER_PASSWORD=%s, MASTER_USE_GTID=slave_pos",
                   (primary.host, primary.port, primary.user, primary.password))
        self.query("START SLAVE")

    def wait_caught_up(self, primary: "MariaDBServer", timeout: float = 60.0) -> None:
        """Until this replica has applied everything in `primary`'s binlog so far."""
        target = primary.query("SELECT @@gtid_binlog_pos")[0][0]
        done = self.query("SELECT MASTER_GTID_WAIT(%s, %s)", (target, timeout))[0][0]
        if done != 0:
            status = self.query("SHOW SLAVE STATUS")
            raise RuntimeError(f"replica did not reach {target} in {timeout:.0f}s: {status}")

    def promote(self) -> None:
        """Stop replicating and take writes: the replica is a primary now."""
        self.query("STOP SLAVE")
        self.query("RESET SLAVE ALL")
        self.query("SET GLOBAL read_only = OFF")

    def stop(self, timeout: float = 30.0) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(10)

    def __enter__(self) -> "MariaDBServer":
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

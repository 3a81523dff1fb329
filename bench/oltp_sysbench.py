"""Debian's sysbench (1.0.20, `oltp_read_write`) against a private MariaDB, for bench/oltp_bench.py.

sysbench is the benchmark's own set-up, not a product dependency: `ensure_sysbench` installs the
Debian package with apt-get when the binary is missing.

oltp_read_write's transaction (sysbench's oltp_common.lua, defaults): 10 point SELECTs, 4 range
SELECTs, one UPDATE of the indexed column k, one UPDATE of c, one DELETE of a random id and the
INSERT of that id again: 4 row changes per transaction, over tables sbtest1..N
(id INT AUTO_INCREMENT PRIMARY KEY, k INT, c CHAR(120), pad CHAR(60), INDEX(k)).

Row changes are counted by the server (`row_changes`: Handler_write + Handler_update +
Handler_delete since it started; MariaDB counts temporary tables apart, in Handler_tmp_*, and
10.11 leaves Innodb_rows_* at 0; only the sbtest tables take writes here). A transaction sysbench
retried after a deadlock counts the rows it changed before its rollback, which the binlog does
not hold: `Run.ignored_errors` says how many there were.
"""
from __future__ import annotations

import re
import shutil
import subprocess
from dataclasses import dataclass

DB = "sbtest"
SCRIPT = "oltp_read_write"
COUNTERS = ("Handler_write", "Handler_update", "Handler_delete")
SERVER_OPTIONS = ("--binlog-row-image=MINIMAL", "--binlog-format=ROW", "--binlog-annotate-row-events=ON",
                  "--innodb-buffer-pool-size=512M")


def start_server(base_dir):
    """A private MariaDB (libs/local/mariadb_server.py) with ROW, MINIMAL images, annotate ON (checked:
    stops otherwise) and an empty database `sbtest`."""
    from libs.local.mariadb_server import MariaDBServer

    server = MariaDBServer.start(base_dir, extra_options=SERVER_OPTIONS)
    try:
        settings = server.query("SELECT @@version, @@binlog_format, @@binlog_row_image, "
                                "@@binlog_annotate_row_events")[0]
        print("MariaDB {}: binlog_format={} binlog_row_image={} binlog_annotate_row_events={}"
              .format(*settings), flush=True)
        if tuple(settings[1:]) != ("ROW", "MINIMAL", 1):
            raise SystemExit(f"server settings {settings[1:]} are not ROW, MINIMAL, annotate ON")
        server.query(f"CREATE DATABASE `{DB}`")
    except BaseException:
        server.stop()
        raise
    return server


def ensure_sysbench() -> str:
    """The sysbench binary; apt-get installs Debian's package when it is missing."""
    found = shutil.which("sysbench")
    if found:
        return found
    env = {"DEBIAN_FRONTEND": "noninteractive", "PATH": "/usr/sbin:/usr/bin:/sbin:/bin"}
    subprocess.run(["apt-get", "update"], check=True, env=env)  # a fresh image has no package lists
    subprocess.run(["apt-get", "install", "-y", "--no-install-recommends", "sysbench"], check=True, env=env)
    found = shutil.which("sysbench")
    if not found:
        raise SystemExit("apt-get installed sysbench, but no sysbench binary is on PATH")
    return found


@dataclass(frozen=True)
class Sysbench:
    binary: str
    host: str
    port: int
    user: str
    password: str
    tables: int
    rows: int
    script: str = SCRIPT

    def args(self, command: str, *extra: str) -> list[str]:
        return [self.binary, self.script, "--db-driver=mysql", f"--mysql-host={self.host}",
                f"--mysql-port={self.port}", f"--mysql-user={self.user}", f"--mysql-password={self.password}",
                f"--mysql-db={DB}", f"--tables={self.tables}", f"--table-size={self.rows}", *extra, command]

    def prepare(self) -> None:
        done = subprocess.run(self.args("prepare", "--threads=2"), capture_output=True, text=True)
        if done.returncode != 0:
            raise SystemExit(f"sysbench prepare failed ({done.returncode}): {done.stderr.strip()[-500:]}")

    def run(self, seconds: float, *, rate: float | None = None, threads: int = 2,
            events: int | None = None) -> "Run":
        """`sysbench <script> run` for `seconds` (0: no limit), at `rate` transactions/s (None: as
        fast as it can), or until `events` transactions in all."""
        extra = [f"--threads={threads}", f"--time={int(seconds)}", "--report-interval=0"]
        if events is not None:
            extra.append(f"--events={events}")
        if rate is not None:
            extra.append(f"--rate={rate:g}")
        done = subprocess.run(self.args("run", *extra), capture_output=True, text=True)
        if done.returncode != 0:
            raise SystemExit(f"sysbench run failed ({done.returncode}): {done.stderr.strip()[-500:]}")
        return Run.parse(done.stdout)


@dataclass(frozen=True)
class Run:
    transactions: int
    tps: float
    ignored_errors: int
    seconds: float

    @classmethod
    def parse(cls, out: str) -> "Run":
        def grab(pattern: str) -> re.Match:
            found = re.search(pattern, out)
            if found is None:
                raise SystemExit(f"sysbench output without /{pattern}/:\n{out[-1500:]}")
            return found

        trx = grab(r"transactions:\s+(\d+)\s+\(([\d.]+) per sec")
        return cls(int(trx.group(1)), float(trx.group(2)),
                   int(grab(r"ignored errors:\s+(\d+)").group(1)),
                   float(grab(r"total time:\s+([\d.]+)s").group(1)))


def row_changes(server) -> int:
    """Rows the server inserted, updated and deleted in tables (not temporary ones) since it started."""
    rows = server.query("SHOW GLOBAL STATUS WHERE Variable_name IN (%s, %s, %s)", COUNTERS)
    return sum(int(v) for _, v in rows)


def row_bytes(server, table: str) -> float:
    """The average row's size of a sysbench table as data: 4 + 4 bytes of INTs and the CHARs'
    characters (the size a changed row has, whatever a Delta file compresses it to)."""
    return float(server.query(f"SELECT AVG(8 + LENGTH(c) + LENGTH(pad)) FROM `{DB}`.`{table}`")[0][0])

"""Integration fixtures shared by the suites under tests/integration.

`mariadb`: one private MariaDB server per test session (libs/local/mariadb_server.py):
binlog ROW + CRC32 + annotate, server_id 1, 127.0.0.1 on a free port, own socket and datadir;
stopped at the end. Tests share it: create your own database names, and read positions with
`mariadb.master_status()` / `mariadb.flush_binlogs()` instead of assuming file numbers.
"""
from __future__ import annotations

import pytest

from libs.local.mariadb_server import MariaDBServer


@pytest.fixture(scope="session")
def mariadb(tmp_path_factory):
    server = MariaDBServer.start(tmp_path_factory.mktemp("mariadb"))
    yield server
    server.stop()

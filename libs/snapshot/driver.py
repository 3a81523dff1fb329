"""The snapshot reader's client library, loaded before anything else in a process that snapshots.

mysql-connector-python's C extension reads rows ~5x faster than a pure-Python client
(libs/snapshot/source.py has the figures), but glibc refuses to load it once pyarrow's libraries
are in the process ("libstdc++.so.6: cannot allocate memory in static TLS block": both use
static TLS), and the library then reports no C extension. Importing this module first, as
pipelines/ship.py, tests/conftest.py and bench/snapshot_bench.py do, keeps the order right;
where it did not, source.connect falls back to the pure-Python protocol and says so.
"""
from __future__ import annotations

import mysql.connector

C_EXTENSION: bool = bool(mysql.connector.HAVE_CEXT)

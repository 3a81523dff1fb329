"""Which error of a source connection is an outage to ride through (retried with the shipper's
outage timing) and which is a refusal that will not change by itself (one line, exit 1).

    code                  what                                         rule
    0                     no code: the socket failed under PyMySQL     retry
    2000-2999             CR_* client errors: unreachable (2003),      retry
                          gone away (2006), lost (2013), ...
      2059, 2061          ... but an auth plugin the client cannot     refuse
                          load, or one that needs TLS: configuration
    1040                  too many connections                         retry
    1053                  server shutdown in progress (a restart)      retry
    1152, 1158-1161       the server's network read/write failed       retry
    3032                  MySQL: the server is in offline mode         retry
    4031                  MySQL 8.0.24+: disconnected for inactivity   retry
    anything else         the server's answer: 1045 access denied,     refuse
                          1130 host not allowed, 1236 purged binlog,
                          1927 connection killed (a KILL, or another
                          replica with this server_id took the dump),
                          MySQL 3xxx / MariaDB 4xxx refusals

Codes: MariaDB's and MySQL's server and client error references (include/mysqld_error.h,
include/errmsg.h). A TLS failure is decided before the code (libs/source/source_tls.py).
"""
from __future__ import annotations

CLIENT_ERRORS = range(2000, 3000)
CLIENT_CONFIGURATION_ERRORS = frozenset({2059, 2061})
SERVER_OUTAGES = frozenset({1040, 1053, 1152, 1158, 1159, 1160, 1161, 3032, 4031})


def is_lost_connection(code: int) -> bool:
    """Worth retrying: the connection or the server is away for now (module docstring)."""
    if code == 0 or code in SERVER_OUTAGES:
        return True
    return code in CLIENT_ERRORS and code not in CLIENT_CONFIGURATION_ERRORS

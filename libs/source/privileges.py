"""The source privileges cdc-ship needs, and a refusal for want of one as one line naming it
(issue #39 item 6; README "Preparing the source").

Minimal grants, measured on MariaDB 10.11 (tests/integration/shipper/test_source_privileges.py):

    GRANT REPLICATION SLAVE, REPLICATION CLIENT ON *.* TO 'cdc'@'%';   -- MariaDB: REPLICATION
    GRANT SELECT ON shop.* TO 'cdc'@'%';                                --  CLIENT = BINLOG MONITOR

What each one is for, and what its absence does:
  REPLICATION SLAVE    the binlog dump (COM_REGISTER_SLAVE, COM_BINLOG_DUMP): MariaDB answers
                       the dump without it with 1045 "Access denied for user", the same code as
                       a wrong password at login, so after a login that succeeded it means this.
  REPLICATION CLIENT   SHOW BINARY LOGS (where to start, the lag in bytes, purge checks) and, on
                       MySQL, SHOW MASTER / BINARY LOG STATUS: 1227 naming BINLOG MONITOR (MariaDB).
  SELECT               the snapshot's SHOW CREATE TABLE and SELECT (1142, 1143, 1044); MariaDB
                       also hides a table the user has no privilege on from information_schema.
  RELOAD               MySQL only: the snapshot's FLUSH TABLES WITH READ LOCK (1227).
"""
from __future__ import annotations

import re

from pymysql.err import MySQLError

from libs.source.errors import ShipError

REPLICATION_SLAVE = "REPLICATION SLAVE"
REPLICATION_CLIENT = "REPLICATION CLIENT (BINLOG MONITOR)"
SELECT = "SELECT"
BINLOG_DUMP = "the binlog dump (COM_BINLOG_DUMP)"

ER_DBACCESS_DENIED = 1044  # "Access denied for user ... to database ..."
ER_ACCESS_DENIED = 1045  # "Access denied for user ... (using password: YES)"
ER_TABLEACCESS_DENIED = 1142  # "SELECT command denied to user ... for table ..."
ER_COLUMNACCESS_DENIED = 1143
ER_SPECIFIC_ACCESS_DENIED = 1227  # "Access denied; you need (at least one of) the X privilege(s) ..."
ER_NO_BINARY_LOGGING = 1381  # "You are not using binary logging": log_bin is off (not a privilege)
_TABLE_OR_DB = (ER_DBACCESS_DENIED, ER_TABLEACCESS_DENIED, ER_COLUMNACCESS_DENIED)

# The privileges a 1227 names, as the grant README "Preparing the source" gives for them.
_AS_GRANTED = {"BINLOG MONITOR": REPLICATION_CLIENT, "REPLICATION CLIENT": REPLICATION_CLIENT,
               "REPLICATION SLAVE": REPLICATION_SLAVE, "REPLICATION SLAVE ADMIN": REPLICATION_SLAVE,
               "RELOAD": "RELOAD"}
_NEEDED = re.compile(r"you need \(at least one of\) the (.+?) privilege", re.I)


class SourceAccessError(ShipError):
    """The source refused a statement for want of a privilege (or of its binlog)."""


def _code(exc: MySQLError) -> int:
    return exc.args[0] if exc.args and isinstance(exc.args[0], int) else 0


def needed_privilege(exc: MySQLError, operation: str) -> str | None:
    """The grant a refusal of `operation` asks for, or None when it is no privilege refusal."""
    code = _code(exc)
    if code == ER_SPECIFIC_ACCESS_DENIED:
        named = _NEEDED.search(str(exc.args[1]) if len(exc.args) > 1 else "")
        listed = [p.strip().upper() for p in named.group(1).split(",")] if named else []
        ours = [_AS_GRANTED[p] for p in listed if p in _AS_GRANTED]
        return ours[0] if ours else (" or ".join(listed) or "a privilege")
    if code == ER_ACCESS_DENIED and operation == BINLOG_DUMP:
        return REPLICATION_SLAVE
    if code in _TABLE_OR_DB:
        return SELECT
    return None


def access_error(server: str, exc: MySQLError, operation: str, *, on: str | None = None,
                 source: str | None = None) -> SourceAccessError | None:
    """`source H:P: access denied: needs PRIV for OPERATION (error N)`, or None when `exc` is
    neither a privilege refusal nor a server without binlog. `on`: the object a SELECT is needed
    on (db.table)."""
    if _code(exc) == ER_NO_BINARY_LOGGING:
        return SourceAccessError(f"source {server}: the binary log is off: start the server with log_bin "
                                 f"(refused {operation}, error {ER_NO_BINARY_LOGGING})", source=source)
    privilege = needed_privilege(exc, operation)
    if privilege is None:
        return None
    target = f" on {on}" if on and privilege == SELECT else ""
    return SourceAccessError(f"source {server}: access denied: needs {privilege}{target} for {operation} "
                             f"(error {_code(exc)})", source=source)

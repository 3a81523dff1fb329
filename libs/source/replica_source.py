"""Connect to a MySQL/MariaDB master as a replica and read its event stream.

PyMySQL does the connection and authentication; the replication commands are ours
(replica_protocol.py). Session set-up, as a MariaDB replica does (sql/slave.cc
get_master_version_and_clock / request_dump):
  SET @master_binlog_checksum = @@global.binlog_checksum   (MariaDB, MySQL < 8.0.26)
  SET @source_binlog_checksum = @@global.binlog_checksum   (MySQL >= 8.0.26)
      -- without it a checksumming master refuses: "Slave can not handle replication events
         with the checksum that master is configured to log"
  SET @master_heartbeat_period = <ns>   -- heartbeats while idle: liveness + SIGTERM checks
  SET @mariadb_slave_capability = N     -- 4 = understands ignorable events: no dummies (seed 003)
  [MariaDB GTID] SET @slave_connect_state = '...', @slave_gtid_strict_mode = 1
Every packet of the stream is 0x00 + one event; 0xFE (EOF) ends a NON_BLOCK dump; errors
come as ERR packets, which PyMySQL raises.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterator

import pymysql
from pymysql.err import MySQLError

from libs.source import privileges, source_tls
from libs.source import replica_protocol as proto
from libs.source.errors import ShipError
from libs.source.retryable_errors import is_lost_connection
from libs.source.source_tls import SourceTls

DEFAULT_HEARTBEAT_S = 1.0


@dataclass(frozen=True)
class ServerOptions:
    host: str
    port: int
    user: str
    password: str = field(default="", repr=False)  # never in a repr, a log line or an error
    server_id: int = 4242  # this replica's id: must differ from the master's and other replicas'
    capability: int = 4    # @mariadb_slave_capability
    heartbeat_s: float = DEFAULT_HEARTBEAT_S
    non_block: bool = False  # stop at the end of the binlog instead of waiting (tests, one-shot)
    tls: SourceTls | None = None  # None: plain TCP; else TLS, verified (source_tls.py, issue #56 item 2)


class ConnectError(ShipError):
    """The server could not be reached (worth retrying, unlike a refused replication start)."""


def connect(opts: ServerOptions, *, read_timeout: float | None = None) -> pymysql.Connection:
    """A client connection, over TLS when opts.tls says so (libs/source/source_tls.py)."""
    try:
        return source_tls.open_connection(opts.tls, host=opts.host, port=opts.port, user=opts.user,
                                          password=opts.password, autocommit=True, connect_timeout=10,
                                          read_timeout=read_timeout, charset="utf8mb4")
    except MySQLError as exc:
        raise connect_error(opts, exc) from None


def error_code(exc: MySQLError) -> int:
    """The server's (ER_*) or client's (CR_*) error number of a PyMySQL error; 0 when it has none."""
    return exc.args[0] if exc.args and isinstance(exc.args[0], int) else 0


def error_text(exc: MySQLError) -> str:
    """'1146: Table 'd.a' doesn't exist' of a PyMySQL error, whose own str is its args tuple."""
    code = error_code(exc)
    return f"{code}: {exc.args[1]}" if code and len(exc.args) > 1 else str(exc)


def connect_error(opts: ServerOptions, exc: MySQLError) -> ShipError:
    """The error of a failed connection, by the server's or client's error code: an outage
    (libs/source/retryable_errors.py) is worth retrying (ConnectError); a server's refusal
    (1045 access denied, 1130 host not allowed, ...) will not change by itself, nor will a TLS
    failure (a certificate that does not verify, a server without TLS: issue #56 item 2).
    `opts`: ServerOptions, or any object with host, port and user (tls when it has one)."""
    tls = getattr(opts, "tls", None)
    refused = source_tls.failure(exc) if tls is not None else None
    if refused is not None:
        return ShipError(f"cannot connect to {opts.host}:{opts.port} over TLS: {refused}")
    code = error_code(exc)
    hint = source_tls.plain_hint(code) if tls is None else ""
    cls = ConnectError if is_lost_connection(code) and not hint else ShipError
    return cls(f"cannot connect to {opts.host}:{opts.port} as {opts.user}: {error_text(exc)}{hint}")


def is_mariadb(conn: pymysql.Connection) -> bool:
    return "mariadb" in conn.get_server_info().lower()


def _set_session(conn, opts: ServerOptions, gtid: str | None, mariadb: bool) -> None:
    with conn.cursor() as cur:
        cur.execute("SET @master_binlog_checksum = @@global.binlog_checksum")
        cur.execute("SET @source_binlog_checksum = @@global.binlog_checksum")
        cur.execute(f"SET @master_heartbeat_period = {int(opts.heartbeat_s * 1e9)}")
        cur.execute("SET @mariadb_slave_capability = %s", (int(opts.capability),))
        if gtid is not None and mariadb:
            cur.execute("SET @slave_connect_state = %s", (gtid,))
            cur.execute("SET @slave_gtid_strict_mode = 1")
            cur.execute("SET @slave_gtid_ignore_duplicates = 0")


def replica_connection(opts: ServerOptions) -> pymysql.Connection:
    """The connection a dump runs on: ask it what it is (server_identity.read_identity, the
    binlog list), then start_dump() on it."""
    # read timeout: a live master sends a heartbeat at least every heartbeat_s while idle
    return connect(opts, read_timeout=max(10.0, 5 * opts.heartbeat_s))


def start_dump(conn: pymysql.Connection, opts: ServerOptions, *, file: str | None = None,
               pos: int = 4, gtid: str | None = None) -> Iterator[bytes]:
    """Start a dump at (file, pos), or at a GTID state (MariaDB 'd-s-n,...' or MySQL set), on
    `conn` (replica_connection). Returns an iterator of event frames; close conn to stop. On a
    refusal the connection is closed and a ShipError raised."""
    try:
        mariadb = is_mariadb(conn)
        _set_session(conn, opts, gtid, mariadb)
        conn._execute_command(proto.COM_REGISTER_SLAVE,
                              proto.register_slave(opts.server_id, user=opts.user))
        conn._read_packet()  # OK (an ERR raises)
        flags = proto.BINLOG_SEND_ANNOTATE_ROWS_EVENT
        if opts.non_block:
            flags |= proto.BINLOG_DUMP_NON_BLOCK
        if gtid is not None and not mariadb:
            conn._execute_command(proto.COM_BINLOG_DUMP_GTID, proto.binlog_dump_gtid(
                gtid, opts.server_id, flags=flags & proto.BINLOG_DUMP_NON_BLOCK))
        else:
            if gtid is not None and not proto.is_mariadb_gtid_state(gtid):
                raise ShipError(f"--gtid {gtid!r} is not a MariaDB GTID state (domain-server-seq)")
            conn._execute_command(proto.COM_BINLOG_DUMP, proto.binlog_dump(
                file or "", pos if gtid is None else 4, opts.server_id, flags))
    except MySQLError as exc:
        conn.close()
        raise (privileges.access_error(f"{opts.host}:{opts.port}", exc, privileges.BINLOG_DUMP)
               or ShipError(f"replication start refused by {opts.host}:{opts.port}: {error_text(exc)}",
                            file=file, pos=pos)) from None
    except ValueError as exc:  # a start point the protocol cannot carry (bad GTID set, position)
        conn.close()
        raise ShipError(f"cannot start replication: {exc}", file=file, pos=pos) from None
    except BaseException:
        conn.close()
        raise
    return _packets(conn)


def open_stream(opts: ServerOptions, *, file: str | None = None, pos: int = 4,
                gtid: str | None = None) -> tuple[pymysql.Connection, Iterator[bytes]]:
    """replica_connection + start_dump: the connection (close it to stop) and its frames."""
    conn = replica_connection(opts)
    return conn, start_dump(conn, opts, file=file, pos=pos, gtid=gtid)


def gtid_state_at(conn, file: str, pos: int) -> str | None:
    """MariaDB's GTID state at binlog position file:pos (BINLOG_GTID_POS); None when the server
    cannot tell (no such position, or not MariaDB)."""
    try:
        with conn.cursor() as cur:
            cur.execute("SELECT BINLOG_GTID_POS(%s, %s)", (file, pos))
            row = cur.fetchone()
    except MySQLError:
        return None
    return None if row is None or row[0] is None else str(row[0])


def _packets(conn) -> Iterator[bytes]:
    while True:
        packet = conn._read_packet()
        data = packet.get_all_data()
        if data[:1] == b"\x00":
            yield data[1:]
        elif packet.is_eof_packet():
            return
        else:
            raise ShipError(f"unexpected replication packet starting 0x{data[:1].hex()}")


def binary_logs(conn) -> list[tuple[str, int]]:
    """SHOW BINARY LOGS: [(file, size)] in order (for the lag in bytes)."""
    try:
        with conn.cursor() as cur:
            cur.execute("SHOW BINARY LOGS")
            return [(row[0], int(row[1])) for row in cur.fetchall()]
    except MySQLError as exc:
        refused = privileges.access_error(f"{conn.host}:{conn.port}", exc, "SHOW BINARY LOGS")
        if refused is None:
            raise
        raise refused from None

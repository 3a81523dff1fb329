"""Where a server dump starts, from the topic's last record of the source (pure: no I/O).

    same server as the last record (or a topic that does not say): file:pos, right after it
    another server, --follow-gtid: a GTID dump from the topic's GTID state, one epoch later
    another server, no --follow-gtid: refused (ServerChangedError), naming both servers

Following a promoted replica needs its binlog to hold the old primary's transactions under their
GTIDs (log_slave_updates=ON, GTID replication); the GTID state names the last transaction the
topic holds whole, so the new server sends every later one, the one cut mid-way included, from
its start. The records from there on name the new server's files: the epoch tells consumers
that positions start over in another server's binlog (libs/binlog/file_names.py).

Before a file:pos resume on the same server, the position must be one the server has
(unknown_position: SHOW BINARY LOGS lists the file and pos <= its size; a purged file is
purge.py's to tell): a record naming the source with a made-up position is refused in one line,
not followed. Which record is the topic's last one the shipper trusts: resume_reader.py.
"""
from __future__ import annotations

from dataclasses import dataclass

from libs.source.errors import ServerChangedError, ShipError
from libs.shipper.gtid_state import GtidState
from libs.shipper.purge import is_purged
from libs.contracts.topic import KafkaRecord
from libs.source.server_identity import MARIADB, ServerIdentity


@dataclass(frozen=True)
class StartPoint:
    file: str | None          # None: a GTID dump
    pos: int
    gtid: str | None          # the GTID state a GTID dump starts after
    epoch: int
    state: GtidState | None   # GTID state before the first event shipped; None: unknown
    open_gtid: str | None = None      # the group the dump starts inside (a file:pos resume)
    last_frame: bytes | None = None   # the topic's last binlog event (tells a standalone GTID)


def last_identity(last: KafkaRecord) -> ServerIdentity | None:
    """The server the record came from; None for records that do not say (older topics,
    binlog files, snapshot records)."""
    if last.origin is None or last.origin.identity is None:
        return None
    return ServerIdentity.parse(last.origin.identity)


def epoch_for(last: KafkaRecord | None, now: ServerIdentity) -> int:
    """The epoch of records shipped from `now` after `last`: one more when the server changed."""
    if last is None:
        return 0
    before = last_identity(last)
    return last.epoch if before is None or before.same_server(now) else last.epoch + 1


def resume_point(last: KafkaRecord, now: ServerIdentity, *, follow_gtid: bool, server: str
                 ) -> StartPoint:
    """Where to continue after `last` on the server `now` (reached as `server`, HOST:PORT)."""
    before = last_identity(last)
    origin = last.origin
    state = GtidState.parse(origin.gtid_state) if origin and origin.gtid_state is not None else None
    if before is None or before.same_server(now):
        return StartPoint(last.binlog_file, last.end_pos, None, last.epoch, state,
                          origin.gtid if origin else None, None if last.is_side else last.value)
    where = f"{last.binlog_file}:{last.end_pos}"
    if not follow_gtid:
        raise ServerChangedError(
            f"the topic's last record came from {before} ({where}) but {server} is {now}: a "
            f"file:pos resume would read another server's binlog; if {server} is a promoted "
            f"replica of it, run cdc-ship with --follow-gtid to continue after GTID state "
            f"{state if state else '(none recorded)'}", source=last.source,
            file=last.binlog_file, pos=last.end_pos)
    if now.flavour != MARIADB or before.flavour != MARIADB:
        raise ShipError(f"--follow-gtid follows MariaDB servers only; the topic's last record came "
                        f"from {before} ({where}), {server} is {now}", source=last.source)
    if not state:
        raise ShipError(f"cannot follow {server} ({now}) by GTID: the topic's last record "
                        f"({where}, from {before}) carries no GTID state (shipped from a server "
                        f"without GTIDs, or by an older cdc-ship); way on: cdc-ship --resnapshot",
                        source=last.source)
    return StartPoint(None, 4, str(state), last.epoch + 1, state)


def unknown_position(logs: list[tuple[str, int]], file: str, pos: int) -> str | None:
    """Why the server whose SHOW BINARY LOGS is `logs` cannot hold file:pos (a file it does not
    list, a position past the file's end); None when it can, or when the file sorts before its
    oldest one (purged: purge.py's error says that, with the way on)."""
    sizes = dict(logs)
    if file in sizes:
        return None if pos <= sizes[file] else f"its {file} is {sizes[file]} bytes long"
    if is_purged(logs, file):
        return None
    return f"it has no binlog file {file} (its binlog: {logs[0][0]} .. {logs[-1][0]})"

"""One dump connection of the shipper's server loop (shipper.ship_server): the server's identity
and binlog list are read first; the dump starts after the source's last record in the topic that
the shipper trusts (resume_reader.py; libs/shipper/resume.py: the same server by file:pos when it
has that position, another by GTID with follow_gtid, else refused), or at the requested start; a
purged start is one plain error (purge.py); then every
frame is shipped stamped with where it came from (record.Origin: the server's identity, the GTID
state the topic holds whole, the record's GTID, the epoch), and a server heartbeat at the
shipper's own position becomes a heartbeat record (heartbeat.py)."""
from __future__ import annotations

import sys
import time
from dataclasses import replace

from pymysql.err import MySQLError

from libs.binlog.errors import BinlogError
from libs.binlog.header import event_type

from libs.source import replica_source
from libs.source.errors import ShipError
from libs.shipper.gtid_state import GroupTracker, GtidState
from libs.contracts.heartbeat import HeartbeatRecord, is_caught_up
from libs.shipper.resume_reader import ResumeRead, resume_read
from libs.shipper.purge import is_purged, purged_error
from libs.contracts.topic import KafkaRecord, Origin, TopicKind
from libs.source.replica_source import ConnectError, ServerOptions
from libs.source.retryable_errors import is_lost_connection
from libs.shipper.resume import StartPoint, resume_point, unknown_position
from libs.source.server_identity import MARIADB, ServerIdentity, read_identity
from libs.shipper.stream import (ARTIFICIAL_FDE, HEARTBEAT as HEARTBEAT_STEP, PUBLISH, SKIPPED,
                                 StreamTracker)

ER_MASTER_FATAL_ERROR_READING_BINLOG = 1236  # the dump's start is not in the server's binlog
# What a dump reads that shows it moving: file content (shipped, or skipped before a GTID start's
# first group) and heartbeats; not the fake Rotate and Format_description every connection begins with.
READS = frozenset({PUBLISH, SKIPPED, HEARTBEAT_STEP})


def retryable(exc: BaseException) -> bool:
    """Dropped connections / unreachable server: retry. Server-side refusals (e.g. 1236 'could
    not find first log file', a capability-0 dummy failure) are fatal."""
    if isinstance(exc, ConnectError | OSError | ConnectionError):
        return True
    if isinstance(exc, MySQLError):
        return is_lost_connection(replica_source.error_code(exc))
    return False


def stream_once(cfg, opts, sink, progress, stats, state, requested, follow_gtid, watch,
                should_stop) -> bool:
    """One dump connection. True when the stream ended by itself (NON_BLOCK) or stop was asked."""
    conn = replica_source.replica_connection(opts)
    start: StartPoint | None = None
    try:
        identity = read_identity(conn, replica_source.is_mariadb(conn))
        logs = replica_source.binary_logs(conn)
        start = _start_point(sink, opts, conn, stats, identity, logs, requested, follow_gtid)
        if start.file is not None and is_purged(logs, start.file):
            raise purged_error(logs, _server(opts), cfg.source, file=start.file, pos=start.pos,
                               gtid=None)
        watch.check(logs, start.file)
        stats.server, stats.epoch = identity.text(), start.epoch
        if start.gtid is not None and start.epoch > 0:
            stats.followed_by_gtid = start.gtid
        frames = replica_source.start_dump(conn, opts, file=start.file, pos=start.pos,
                                           gtid=start.gtid)
        return _pump(cfg, sink, progress, stats, state, frames, start, identity, should_stop)
    except MySQLError as exc:
        if retryable(exc):
            raise
        if start is None:  # refused before the dump (a query the server does not allow)
            raise ShipError(f"server {_server(opts)} refused: {exc}", source=cfg.source) from None
        raise _refusal(cfg, opts, exc, start) from None
    finally:
        try:
            conn.close()
        except Exception:  # noqa: BLE001 - the connection may already be broken
            pass


def _server(opts: ServerOptions) -> str:
    return f"{opts.host}:{opts.port}"


def _start_point(sink, opts, conn, stats, identity: ServerIdentity, logs, requested: StartPoint,
                 follow_gtid: bool) -> StartPoint:
    """Where this connection's dump starts: after the source's last record in the topic that the
    shipper trusts (resume_reader.py; resume.py: same server by file:pos, if the server has that
    position, another by GTID or refused), else the requested start (default: the server's oldest
    binlog; a topic holding only untrusted records of the source needs it named). A GTID state the
    topic does not give is asked of the server at the start position (MariaDB BINLOG_GTID_POS)."""
    read = resume_read(sink)
    last = read.record
    if last is None:
        if read.untrusted_only and requested.file is None and requested.gtid is None:
            raise ShipError(read.refusal(sink.source, sink.topic, "give --start-file F [--start-pos P] or "
                                                                  "--gtid STATE"), source=sink.source)
        start = _requested_start(opts, logs, requested, identity)
    else:
        start = resume_point(last, identity, follow_gtid=follow_gtid, server=_server(opts))
        if start.gtid is None:
            _check_position(sink, opts, read, logs, start)
        if stats.resumed_from is None:
            stats.resumed_from = (last.binlog_file, last.end_pos)
            print(_resume_line(sink, last, start, identity), file=sys.stderr, flush=True)
    if start.state is None and start.file is not None and identity.flavour == MARIADB:
        seeded = replica_source.gtid_state_at(conn, start.file, start.pos)
        if seeded is not None:
            start = replace(start, state=GtidState.parse(seeded))
    return start


def _check_position(sink, opts, read: ResumeRead, logs, start: StartPoint) -> None:
    """A file:pos resume only at a position the server has (resume.unknown_position): else one
    line naming the record and the position; cdc-ship does not guess another start."""
    problem = unknown_position(logs, start.file, start.pos)
    if problem is not None:
        raise ShipError(f"the topic's last record of source {sink.source} (partition {read.partition} "
                        f"offset {read.offset}) resumes at {start.file}:{start.pos}, a position server "
                        f"{_server(opts)} does not have: {problem}; cdc-ship does not guess where to start "
                        f"(a record written by someone else, or a server whose binlog was reset: README "
                        f"\"Who may write the topic\")", source=sink.source, file=start.file, pos=start.pos)


def _requested_start(opts, logs, requested: StartPoint, identity: ServerIdentity) -> StartPoint:
    if requested.gtid is not None:
        try:  # the state a MariaDB GTID start ships after; a MySQL set is not tracked
            state = GtidState.parse(requested.gtid) if identity.flavour == MARIADB else None
        except ValueError:
            state = None  # start_dump refuses it with its own line
        return replace(requested, state=state)
    if requested.file is not None:
        return requested
    if not logs:
        raise ShipError(f"server {_server(opts)} has no binary logs (is log_bin on?)")
    return replace(requested, file=logs[0][0], pos=4)


def _resume_line(sink, last: KafkaRecord, start: StartPoint, identity: ServerIdentity) -> str:
    if start.gtid is None:
        return (f"cdc-ship {sink.source}: resuming at {last.binlog_file}:{last.end_pos} "
                f"(topic {sink.topic})")
    return (f"cdc-ship {sink.source}: following {identity} by GTID after {start.gtid} "
            f"(the topic's last record: {last.binlog_file}:{last.end_pos} from "
            f"{last.origin.identity}; topic {sink.topic})")


def _refusal(cfg, opts, exc: MySQLError, start: StartPoint) -> ShipError:
    """A server's refusal of the dump as one line: the purged-binlog error when that is what it
    is (the server's binlog list, asked again, no longer has the start), else its message."""
    if replica_source.error_code(exc) == ER_MASTER_FATAL_ERROR_READING_BINLOG:
        logs = _binary_logs_or_none(opts)
        if logs is not None and (start.file is not None and is_purged(logs, start.file)
                                 or start.gtid is not None and "purged" in str(exc)):
            return purged_error(logs, _server(opts), cfg.source, file=start.file, pos=start.pos,
                                gtid=start.gtid)
    return ShipError(f"server {_server(opts)} refused: {exc}"
                     + (f" (GTID state {start.gtid})" if start.gtid else ""),
                     source=cfg.source, file=start.file, pos=start.pos if start.file else None)


def _binary_logs_or_none(opts: ServerOptions):
    try:
        conn = replica_source.connect(opts)
    except ShipError:
        return None
    try:
        return replica_source.binary_logs(conn)
    except MySQLError:
        return None
    finally:
        conn.close()


def _pump(cfg, sink, progress, stats, state, frames, start: StartPoint,
          identity: ServerIdentity, should_stop) -> bool:
    """Ship the dump's frames, each stamped with where it came from (record.Origin)."""
    tracker = state["tracker"] = StreamTracker(cfg.source, gtid_start=start.gtid is not None)
    groups = (GroupTracker.resuming(start.state, start.open_gtid, start.last_frame)
              if start.state is not None else None)
    server = identity.text()

    def origin(gtid: str | None) -> Origin:
        return Origin(server, None if groups is None else str(groups.state), gtid, start.epoch)

    expect = (start.file, start.pos) if start.gtid is None else None
    try:
        for frame in frames:
            step = tracker.feed(frame)
            if step.kind in READS:  # the stream moves: an outage before it is over (shipper.Outage)
                stats.received += 1
            if step.kind == PUBLISH:
                if expect is not None:
                    # first event after (re)connecting must be exactly where Kafka left off
                    moved_on = step.pos == 4 and step.file != expect[0]  # resumed at a file end
                    if (step.file, step.pos) != expect and not moved_on:
                        raise ShipError(f"server resumed at {step.file}:{step.pos}, expected "
                                        f"{expect[0]}:{expect[1]}", source=cfg.source)
                    expect = None
                if step.format_first is not None:  # a GTID start's first group (stream.py)
                    _send_format(cfg, sink, groups, step, step.format_first, origin)
                gtid = groups.feed(frame, step.pos) if groups is not None else None
                sink.send(KafkaRecord(cfg.source, step.file, step.pos, frame, origin=origin(gtid)))
                progress.event(step.file, step.pos, frame)
                stats.events += 1
            elif step.kind == ARTIFICIAL_FDE:
                # A dump that starts inside a file gets its Format_description with log_pos 0:
                # not file content, but the job cannot decode what follows without it.
                _send_format(cfg, sink, groups, step, frame, origin)
            elif step.kind == HEARTBEAT_STEP and _caught_up(cfg, frame, tracker):
                # the server has logged nothing after our position: say so in the topic, so the
                # job can tell an idle source from a stalled one (libs/contracts/heartbeat.py). It
                # carries the origin too: a resume may start from it as the last record.
                now = time.time_ns()
                beat = HeartbeatRecord(cfg.source, now // 1000, frame)
                progress.heartbeat(now / 1e9, tracker.file, tracker.pos)
                sink.send(KafkaRecord(cfg.source, tracker.file, tracker.pos, beat.encode(),
                                      TopicKind.HEARTBEAT, origin=origin(None)))
                stats.heartbeats += 1
            else:
                sink.poll()
            progress.report()
            if should_stop():
                return True
        return True
    finally:
        stats.holes += tracker.holes


def _caught_up(cfg, frame: bytes, tracker: StreamTracker) -> bool:
    """Does the server's heartbeat name the shipper's own position (libs/contracts/heartbeat.py)?
    A heartbeat that does not parse is the server's protocol broken: one line, naming it."""
    try:
        return is_caught_up(frame, tracker.file, tracker.pos)
    except BinlogError as exc:
        raise ShipError(f"server heartbeat (type {event_type(frame)}): {exc}", source=cfg.source,
                        file=tracker.file, pos=tracker.pos) from None


def _send_format(cfg, sink, groups, step, fde: bytes, origin) -> None:
    if groups is not None:
        groups.format_description(fde)
    sink.send(KafkaRecord(cfg.source, step.file, step.pos, fde, TopicKind.FORMAT, origin=origin(None)))

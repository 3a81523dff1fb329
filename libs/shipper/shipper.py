"""The shipper loops: binlog files -> Kafka, and a live server (as a replica) -> Kafka.

Both resume from Kafka, not from a local file: the last record of the source gives
binlog_file and binlog_pos + len(value) = the next event to ship, so a restart (or a reconnect
after a dropped connection) leaves no gap and no duplicate. A stop request (SIGTERM) is honoured
between events: the producer is flushed and the loop returns normally.

From a server, every record also says where it came from (record.Origin: the server's identity,
the GTID state the topic holds whole, the record's GTID, the epoch). Each dump connection reads
the server's identity first: a file:pos resume is only made against the server the topic's last
record came from; another server is followed by GTID with follow_gtid, else refused
(libs/shipper/resume.py). Each connection also compares the position with the server's binlog
list: a purged start is one plain error, a start in the oldest files a warning (purge.py).
"""
from __future__ import annotations

import sys
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Callable

from pymysql.err import MySQLError

from libs.binlog.errors import BinlogError
from libs.snapshot import DEFAULT_CHUNK_ROWS

from libs.metrics import serve

from . import replica_source, ship_metrics
from .errors import ShipError
from .file_source import Inputs, iter_file_events
from .gtid_state import GroupTracker, GtidState
from .kafka_sink import KafkaSink, last_record
from .progress import Progress
from .heartbeat import FollowBeat, HeartbeatRecord, is_caught_up
from .purge import PurgeWatch, is_purged, purged_error
from .record import FORMAT, HEARTBEAT, KafkaRecord, Origin
from .replica_source import ConnectError, ServerOptions
from .resume import StartPoint, resume_point
from .server_identity import MARIADB, ServerIdentity, read_identity
from .stream import ARTIFICIAL_FDE, HEARTBEAT as HEARTBEAT_STEP, PUBLISH, StreamTracker

ER_MASTER_FATAL_ERROR_READING_BINLOG = 1236  # the dump's start is not in the server's binlog


@dataclass(frozen=True)
class ShipConfig:
    bootstrap: str  # Kafka bootstrap HOST:PORT
    topic: str
    source: str     # source id: record key and `source` header
    progress_s: float = 5.0  # seconds between progress lines on stderr
    # Warn (one line, at most every purge_warn_interval_s) when the binlog file the shipper reads
    # is among the server's purge_warn_files oldest and not the one being written: the next
    # purge removes what it has not shipped (libs/shipper/purge.py).
    purge_warn_files: int = 1
    purge_warn_interval_s: float = 60.0
    metrics_port: int | None = None  # serve Prometheus metrics on 127.0.0.1:PORT (libs/shipper/ship_metrics.py)


@dataclass
class ShipStats:
    events: int = 0
    reconnects: int = 0
    holes: int = 0
    heartbeats: int = 0  # heartbeat records published (libs/shipper/heartbeat.py)
    resumed_from: tuple[str, int] | None = None
    snapshot: object | None = None  # snapshot_run.SnapshotStats when --snapshot/--resnapshot
    server: str | None = None  # identity of the server shipped from (the last connection's)
    epoch: int = 0             # record.Origin.epoch of what was shipped
    followed_by_gtid: str | None = None  # the GTID state a move to another server started after
    purge_warnings: int = 0


def _log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def ship_files(cfg: ShipConfig, paths: list[Path], *, follow: bool = False,
               should_stop: Callable[[], bool] = lambda: False, poll_s: float = 0.2,
               heartbeat_s: float | None = 1.0) -> ShipStats:
    """Ship binlog files; with `follow`, a heartbeat record after each `heartbeat_s` (None: none)
    of reading nothing new at the newest file's end (libs/shipper/heartbeat.py FollowBeat)."""
    inputs = Inputs.from_paths(paths, follow=follow)
    sink = KafkaSink(cfg.bootstrap, cfg.topic, cfg.source)
    last = last_record(cfg.bootstrap, cfg.topic, cfg.source)
    stats = ShipStats(resumed_from=(last.binlog_file, last.end_pos) if last else None)
    if last:
        _log(f"cdc-ship {cfg.source}: resuming after {last.binlog_file}:{last.binlog_pos} "
             f"(topic {cfg.topic})")
    progress = Progress(cfg.source, interval_s=cfg.progress_s)
    progress.lag_bytes = lambda: inputs.remaining_bytes(progress.last_file, progress.last_pos)
    _serve_metrics(cfg, progress, stats)
    beats = FollowBeat(heartbeat_s) if follow and heartbeat_s is not None else None

    def on_idle(name: str, pos: int, at_ns: int) -> None:
        if beats.due(at_ns, stats.events):  # everything the file held at at_ns is sent
            record = HeartbeatRecord(cfg.source, at_ns // 1000)
            sink.send(KafkaRecord(cfg.source, name, pos, record.encode(), HEARTBEAT))
            progress.heartbeat(at_ns / 1e9)
            stats.heartbeats += 1
        else:
            sink.poll()  # delivery reports of what was sent before the silence

    try:
        for name, pos, frame in iter_file_events(inputs, cfg.source, resume=stats.resumed_from,
                                                 follow=follow, poll_s=poll_s, should_stop=should_stop,
                                                 on_idle=on_idle if beats is not None else None):
            sink.send(KafkaRecord(cfg.source, name, pos, frame))
            progress.event(name, pos, frame)
            stats.events += 1
            progress.report()
    except OSError as exc:  # a binlog file vanished or became unreadable while shipping
        raise ShipError(f"reading {exc.filename or 'a binlog file'}: {exc.strerror or exc}",
                        source=cfg.source) from None
    finally:
        sink.flush()
    progress.report(force=True)
    return stats


def _serve_metrics(cfg: ShipConfig, progress: Progress, stats: ShipStats) -> None:
    if cfg.metrics_port is not None:
        try:
            serve(lambda: ship_metrics.families(cfg.source, progress, stats), cfg.metrics_port)
        except OSError as exc:  # the port is taken: one line, before anything is shipped
            raise ShipError(f"cannot serve metrics on 127.0.0.1:{cfg.metrics_port}: {exc.strerror or exc}",
                            source=cfg.source) from None


def _retryable(exc: BaseException) -> bool:
    """Dropped connections / unreachable server: retry. Server-side refusals (e.g. 1236 'could
    not find first log file', a capability-0 dummy failure) are fatal."""
    if isinstance(exc, ConnectError | OSError | ConnectionError):
        return True
    if isinstance(exc, MySQLError):
        return replica_source.is_lost_connection(replica_source.error_code(exc))
    return False


class _ServerLag:
    """Lag in bytes of the tracker's position behind the server's binlog end (SHOW BINARY LOGS
    on a second connection, opened lazily, dropped on error)."""

    def __init__(self, opts: ServerOptions, tracker_ref: Callable[[], StreamTracker | None],
                 watch: PurgeWatch):
        self.opts, self.tracker_ref, self.watch, self.conn = opts, tracker_ref, watch, None

    def __call__(self) -> int | None:
        t = self.tracker_ref()
        if t is None or t.file is None:
            return None
        try:
            if self.conn is None:
                self.conn = replica_source.connect(self.opts, read_timeout=5)
            logs = replica_source.binary_logs(self.conn)
        except (ShipError, MySQLError, OSError):
            self.close()
            return None
        self.watch.check(logs, t.file)  # the same list tells whether a purge threatens
        names = [n for n, _ in logs]
        if t.file not in names:
            return None
        i = names.index(t.file)
        return sum(size for _, size in logs[i:]) - (t.pos or 0)

    def close(self) -> None:
        if self.conn is not None:
            try:
                self.conn.close()
            except Exception:  # noqa: BLE001 - closing a broken side connection
                pass
            self.conn = None


def ship_server(cfg: ShipConfig, opts: ServerOptions, *, start_file: str | None = None,
                start_pos: int = 4, gtid: str | None = None, follow_gtid: bool = False,
                should_stop: Callable[[], bool] = lambda: False,
                give_up_after_s: float = 60.0, snapshot: str | None = None,
                include: tuple[str, ...] = (), exclude: tuple[str, ...] = (),
                snapshot_chunk_rows: int = DEFAULT_CHUNK_ROWS) -> ShipStats:
    """Stream from the server until stopped (or, with opts.non_block, to the end of its binlog).

    start_file/start_pos or gtid: where to start when the topic has no record of the source.
    follow_gtid: when the topic's last record came from another server (a promoted replica),
    continue after the topic's GTID state there instead of refusing (libs/shipper/resume.py).
    snapshot 'initial' / 'resnapshot' (libs/snapshot/protocol.py): first publish a consistent
    snapshot of the tables `include`/`exclude` select when the topic's last record of the source
    says one is due (libs/shipper/snapshot_run.py), then follow the binlog from where that run
    says it continues. A bad include/exclude regex raises ValueError before anything connects."""
    stats = ShipStats()
    sink = KafkaSink(cfg.bootstrap, cfg.topic, cfg.source)
    state: dict = {"tracker": None}
    watch = PurgeWatch(cfg.source, cfg.purge_warn_files, cfg.purge_warn_interval_s)
    lag = _ServerLag(opts, lambda: state["tracker"], watch)
    progress = Progress(cfg.source, interval_s=cfg.progress_s, lag_bytes=lag,
                        note=lambda: watch.risk and "at risk of purge")
    _serve_metrics(cfg, progress, stats)
    requested = StartPoint(start_file, start_pos if start_file else 4, gtid, 0, None)
    failing_since: float | None = None
    try:
        if snapshot is not None:
            stats.snapshot = _snapshot_first(cfg, opts, sink, snapshot, include, exclude,
                                             snapshot_chunk_rows)
        while not should_stop():
            sink.flush()  # everything produced so far is in Kafka before we ask where we are
            try:
                ended = _stream_once(cfg, opts, sink, progress, stats, state, requested,
                                     follow_gtid, watch, should_stop)
                failing_since = None
                if ended:
                    break
            except Exception as exc:  # noqa: BLE001 - classified right below
                if not _retryable(exc):
                    raise
                now = time.monotonic()
                failing_since = failing_since or now
                if now - failing_since > give_up_after_s:
                    raise ShipError(f"server {opts.host}:{opts.port} unreachable for "
                                    f"{give_up_after_s:.0f}s: {exc}", source=cfg.source) from exc
                stats.reconnects += 1
                _log(f"cdc-ship {cfg.source}: connection lost ({exc}); reconnecting")
                time.sleep(min(2.0, 0.2 * stats.reconnects))
    finally:
        lag.close()
        sink.flush()
        stats.purge_warnings = watch.warnings
    progress.report(force=True)
    return stats


def _snapshot_first(cfg, opts, sink, mode, include, exclude, chunk_rows):
    # imported here: the snapshot reader and its value conversions load only when asked for
    from . import snapshot_run
    snap = snapshot_run.SnapshotOptions(mode, tuple(include), tuple(exclude), chunk_rows)
    return snapshot_run.snapshot_if_due(cfg.bootstrap, cfg.topic, cfg.source, opts, sink, snap,
                                        progress_s=cfg.progress_s)


def _server(opts: ServerOptions) -> str:
    return f"{opts.host}:{opts.port}"


def _start_point(cfg, opts, conn, stats, identity: ServerIdentity, logs, requested: StartPoint,
                 follow_gtid: bool) -> StartPoint:
    """Where this connection's dump starts: after the source's last record in the topic
    (resume.py: same server by file:pos, another by GTID or refused), else the requested start
    (default: the server's oldest binlog). A GTID state the topic does not give is asked of the
    server at the start position (MariaDB BINLOG_GTID_POS)."""
    last = last_record(cfg.bootstrap, cfg.topic, cfg.source)
    if last is None:
        start = _requested_start(opts, logs, requested, identity)
    else:
        start = resume_point(last, identity, follow_gtid=follow_gtid, server=_server(opts))
        if stats.resumed_from is None:
            stats.resumed_from = (last.binlog_file, last.end_pos)
            _log(_resume_line(cfg, last, start, identity))
    if start.state is None and start.file is not None and identity.flavour == MARIADB:
        seeded = replica_source.gtid_state_at(conn, start.file, start.pos)
        if seeded is not None:
            start = replace(start, state=GtidState.parse(seeded))
    return start


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


def _resume_line(cfg, last: KafkaRecord, start: StartPoint, identity: ServerIdentity) -> str:
    if start.gtid is None:
        return (f"cdc-ship {cfg.source}: resuming at {last.binlog_file}:{last.end_pos} "
                f"(topic {cfg.topic})")
    return (f"cdc-ship {cfg.source}: following {identity} by GTID after {start.gtid} "
            f"(the topic's last record: {last.binlog_file}:{last.end_pos} from "
            f"{last.origin.identity}; topic {cfg.topic})")


def _stream_once(cfg, opts, sink, progress, stats, state, requested, follow_gtid, watch,
                 should_stop) -> bool:
    """One dump connection. True when the stream ended by itself (NON_BLOCK) or stop was asked."""
    conn = replica_source.replica_connection(opts)
    start: StartPoint | None = None
    try:
        identity = read_identity(conn, replica_source.is_mariadb(conn))
        logs = replica_source.binary_logs(conn)
        start = _start_point(cfg, opts, conn, stats, identity, logs, requested, follow_gtid)
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
        if _retryable(exc):
            raise
        if start is None:  # refused before the dump (a query the server does not allow)
            raise ShipError(f"server {_server(opts)} refused: {exc}", source=cfg.source) from None
        raise _refusal(cfg, opts, exc, start) from None
    finally:
        try:
            conn.close()
        except Exception:  # noqa: BLE001 - the connection may already be broken
            pass


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
                # job can tell an idle source from a stalled one (libs/shipper/heartbeat.py). It
                # carries the origin too: a resume may start from it as the last record.
                now = time.time_ns()
                beat = HeartbeatRecord(cfg.source, now // 1000, frame)
                progress.heartbeat(now / 1e9)
                sink.send(KafkaRecord(cfg.source, tracker.file, tracker.pos, beat.encode(), HEARTBEAT,
                                      origin=origin(None)))
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
    """Does the server's heartbeat name the shipper's own position (libs/shipper/heartbeat.py)?
    A heartbeat that does not parse is the server's protocol broken: one line, naming it."""
    try:
        return is_caught_up(frame, tracker.file, tracker.pos)
    except BinlogError as exc:
        raise ShipError(f"server heartbeat (type {frame[4]}): {exc}", source=cfg.source,
                        file=tracker.file, pos=tracker.pos) from None


def _send_format(cfg, sink, groups, step, fde: bytes, origin) -> None:
    if groups is not None:
        groups.format_description(fde)
    sink.send(KafkaRecord(cfg.source, step.file, step.pos, fde, FORMAT, origin=origin(None)))

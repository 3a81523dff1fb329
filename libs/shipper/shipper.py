"""The shipper loops: binlog files -> Kafka, and a live server (as a replica) -> Kafka.

Both resume from Kafka, not from a local file: the last record of the source gives
binlog_file and binlog_pos + len(value) = the next event to ship, so a restart (or a reconnect
after a dropped connection) leaves no gap and no duplicate. A stop request (SIGTERM) is honoured
between events: the producer is flushed and the loop returns normally.
"""
from __future__ import annotations

import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from pymysql.err import MySQLError

from libs.snapshot import DEFAULT_CHUNK_ROWS

from . import replica_source
from .errors import ShipError
from .file_source import Inputs, iter_file_events
from .kafka_sink import KafkaSink, last_record
from .progress import Progress
from .heartbeat import HeartbeatRecord, is_caught_up
from .record import FORMAT, HEARTBEAT, KafkaRecord
from .replica_source import ConnectError, ServerOptions
from .stream import ARTIFICIAL_FDE, HEARTBEAT as HEARTBEAT_STEP, PUBLISH, StreamTracker


@dataclass(frozen=True)
class ShipConfig:
    bootstrap: str  # Kafka bootstrap HOST:PORT
    topic: str
    source: str     # source id: record key and `source` header
    progress_s: float = 5.0  # seconds between progress lines on stderr


@dataclass
class ShipStats:
    events: int = 0
    reconnects: int = 0
    holes: int = 0
    heartbeats: int = 0  # heartbeat records published (libs/shipper/heartbeat.py)
    resumed_from: tuple[str, int] | None = None
    snapshot: object | None = None  # snapshot_run.SnapshotStats when --snapshot/--resnapshot


def _log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def ship_files(cfg: ShipConfig, paths: list[Path], *, follow: bool = False,
               should_stop: Callable[[], bool] = lambda: False, poll_s: float = 0.2) -> ShipStats:
    inputs = Inputs.from_paths(paths, follow=follow)
    sink = KafkaSink(cfg.bootstrap, cfg.topic, cfg.source)
    last = last_record(cfg.bootstrap, cfg.topic, cfg.source)
    stats = ShipStats(resumed_from=(last.binlog_file, last.end_pos) if last else None)
    if last:
        _log(f"cdc-ship {cfg.source}: resuming after {last.binlog_file}:{last.binlog_pos} "
             f"(topic {cfg.topic})")
    progress = Progress(cfg.source, interval_s=cfg.progress_s)
    progress.lag_bytes = lambda: inputs.remaining_bytes(progress.last_file, progress.last_pos)
    try:
        for name, pos, frame in iter_file_events(inputs, cfg.source, resume=stats.resumed_from,
                                                 follow=follow, poll_s=poll_s,
                                                 should_stop=should_stop):
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


def _retryable(exc: BaseException) -> bool:
    """Dropped connections / unreachable server: retry. Server-side refusals (e.g. 1236 'could
    not find first log file', a capability-0 dummy failure) are fatal."""
    if isinstance(exc, ConnectError | OSError | ConnectionError):
        return True
    if isinstance(exc, MySQLError):
        code = exc.args[0] if exc.args and isinstance(exc.args[0], int) else 0
        return code == 0 or code >= 2000  # CR_* client errors: lost connection, gone away
    return False


class _ServerLag:
    """Lag in bytes of the tracker's position behind the server's binlog end (SHOW BINARY LOGS
    on a second connection, opened lazily, dropped on error)."""

    def __init__(self, opts: ServerOptions, tracker_ref: Callable[[], StreamTracker | None]):
        self.opts, self.tracker_ref, self.conn = opts, tracker_ref, None

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
                start_pos: int = 4, gtid: str | None = None,
                should_stop: Callable[[], bool] = lambda: False,
                give_up_after_s: float = 60.0, snapshot: str | None = None,
                include: tuple[str, ...] = (), exclude: tuple[str, ...] = (),
                snapshot_chunk_rows: int = DEFAULT_CHUNK_ROWS) -> ShipStats:
    """Stream from the server until stopped (or, with opts.non_block, to the end of its binlog).

    snapshot 'initial' / 'resnapshot' (libs/snapshot/protocol.py): first publish a consistent
    snapshot of the tables `include`/`exclude` select when the topic's last record of the source
    says one is due (libs/shipper/snapshot_run.py), then follow the binlog from where that run
    says it continues. A bad include/exclude regex raises ValueError before anything connects."""
    stats = ShipStats()
    sink = KafkaSink(cfg.bootstrap, cfg.topic, cfg.source)
    state: dict = {"tracker": None}
    lag = _ServerLag(opts, lambda: state["tracker"])
    progress = Progress(cfg.source, interval_s=cfg.progress_s, lag_bytes=lag)
    failing_since: float | None = None
    first = True
    try:
        if snapshot is not None:
            stats.snapshot = _snapshot_first(cfg, opts, sink, snapshot, include, exclude,
                                             snapshot_chunk_rows)
        while not should_stop():
            sink.flush()  # everything produced so far is in Kafka before we ask where we are
            file, pos, use_gtid = _resume_at(cfg, opts, stats, first, start_file, start_pos, gtid)
            first = False
            try:
                ended = _stream_once(cfg, opts, sink, progress, stats, state, file, pos, use_gtid,
                                     should_stop)
                failing_since = None
                if ended:
                    break
            except Exception as exc:  # noqa: BLE001 - classified right below
                if not _retryable(exc):
                    if isinstance(exc, MySQLError):  # a refusal (e.g. 1236): fatal, one line
                        raise ShipError(f"server {opts.host}:{opts.port} refused: {exc}",
                                        source=cfg.source, file=file, pos=pos) from None
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
    progress.report(force=True)
    return stats


def _snapshot_first(cfg, opts, sink, mode, include, exclude, chunk_rows):
    # imported here: the snapshot reader and its value conversions load only when asked for
    from . import snapshot_run
    snap = snapshot_run.SnapshotOptions(mode, tuple(include), tuple(exclude), chunk_rows)
    return snapshot_run.snapshot_if_due(cfg.bootstrap, cfg.topic, cfg.source, opts, sink, snap,
                                        progress_s=cfg.progress_s)


def _resume_at(cfg, opts, stats, first, start_file, start_pos, gtid):
    """(file, pos, gtid) to dump from: where the source's last record in the topic ends (a
    snapshot record: its header position), else the requested start."""
    last = last_record(cfg.bootstrap, cfg.topic, cfg.source)
    if last is None:
        if start_file is None and gtid is None:
            return _first_binlog(opts), start_pos, None
        return start_file, start_pos, gtid
    if first:
        stats.resumed_from = (last.binlog_file, last.end_pos)
        _log(f"cdc-ship {cfg.source}: resuming at {last.binlog_file}:{last.end_pos} "
             f"(topic {cfg.topic})")
    return last.binlog_file, last.end_pos, None


def _first_binlog(opts: ServerOptions) -> str:
    conn = replica_source.connect(opts)
    try:
        logs = replica_source.binary_logs(conn)
    finally:
        conn.close()
    if not logs:
        raise ShipError(f"server {opts.host}:{opts.port} has no binary logs (is log_bin on?)")
    return logs[0][0]


def _stream_once(cfg, opts, sink, progress, stats, state, file, pos, gtid, should_stop) -> bool:
    """One dump connection. True when the stream ended by itself (NON_BLOCK) or stop was asked."""
    conn, frames = replica_source.open_stream(opts, file=file, pos=pos, gtid=gtid)
    tracker = state["tracker"] = StreamTracker(cfg.source)
    expect = (file, pos) if gtid is None else None
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
                sink.send(KafkaRecord(cfg.source, step.file, step.pos, frame))
                progress.event(step.file, step.pos, frame)
                stats.events += 1
            elif step.kind == ARTIFICIAL_FDE:
                # A dump that starts inside a file gets its Format_description with log_pos 0:
                # not file content, but the job cannot decode what follows without it.
                sink.send(KafkaRecord(cfg.source, step.file, step.pos, frame, FORMAT))
            elif step.kind == HEARTBEAT_STEP and is_caught_up(frame, tracker.file, tracker.pos):
                # the server has logged nothing after our position: say so in the topic, so the
                # job can tell an idle source from a stalled one (libs/shipper/heartbeat.py)
                beat = HeartbeatRecord(cfg.source, time.time_ns() // 1000, frame)
                sink.send(KafkaRecord(cfg.source, tracker.file, tracker.pos, beat.encode(), HEARTBEAT))
                stats.heartbeats += 1
            else:
                sink.poll()
            progress.report()
            if should_stop():
                return True
        return True
    finally:
        stats.holes += tracker.holes
        try:
            conn.close()
        except Exception:  # noqa: BLE001 - the connection may already be broken
            pass

"""The shipper loops: binlog files -> Kafka, and a live server (as a replica) -> Kafka.

Both resume from Kafka, not from a local file: the last record of the source gives
binlog_file and binlog_pos + len(value) = the next event to ship, so a restart (or a reconnect
after a dropped connection) leaves no gap and no duplicate. With a topic secret every record sent
carries its tag, and the last record is the newest whose tag verifies (resume_reader.py). A stop
request (SIGTERM) is honoured between events: the producer is flushed and the loop returns normally.

From a server, every record also says where it came from (record.Origin: the server's identity,
the GTID state the topic holds whole, the record's GTID, the epoch). Each dump connection reads
the server's identity first: a file:pos resume is only made against the server the topic's last
record came from; another server is followed by GTID with follow_gtid, else refused
(libs/shipper/resume.py). Each connection also compares the position with the server's binlog
list: a purged start is one plain error, a start in the oldest files a warning (purge.py). One
dump connection: server_dump.py.
"""
from __future__ import annotations

import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from pymysql.err import MySQLError

from libs.runtime.metrics import serve
from libs.settings.kafka_security import PLAINTEXT_AUTH, KafkaAuth
from libs.snapshot import DEFAULT_CHUNK_ROWS

from libs.shipper import ship_metrics
from libs.source import replica_source
from libs.source.errors import ShipError
from libs.shipper.file_source import Inputs, iter_file_events
from libs.contracts.heartbeat import FollowBeat, HeartbeatRecord
from libs.shipper.kafka_sink import MAX_EVENT_BYTES, KafkaSink
from libs.shipper.resume_reader import resume_read
from libs.contracts.topic_tag import TopicKeys
from libs.shipper.progress import Progress
from libs.shipper.purge import PurgeWatch
from libs.contracts.topic import KafkaRecord, TopicKind
from libs.source.replica_source import ServerOptions
from libs.shipper.resume import StartPoint
from libs.shipper.server_dump import retryable, stream_once
from libs.shipper.stream import StreamTracker


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
    # serve Prometheus metrics on 127.0.0.1:PORT (libs/shipper/ship_metrics.py)
    metrics_port: int | None = None
    # The largest record sent; the broker's message.max.bytes must take it (libs/shipper/kafka_sink.py).
    max_event_bytes: int = MAX_EVENT_BYTES
    # How every Kafka client of the shipper connects: TLS, SASL (libs/settings/kafka_security.py)
    kafka: KafkaAuth = PLAINTEXT_AUTH
    # The topic secrets: every record sent is tagged with the first, the resume read trusts only
    # records whose tag verifies (libs/contracts/topic_tag.py, resume_reader.py); None: no tag, and
    # the resume read trusts the newest record of the source
    topic_keys: TopicKeys | None = None


@dataclass
class ShipStats:
    events: int = 0
    reconnects: int = 0
    holes: int = 0
    heartbeats: int = 0  # heartbeat records published (libs/contracts/heartbeat.py)
    # binlog events and server heartbeats read from the server: one read ends an outage (Outage)
    received: int = 0
    resumed_from: tuple[str, int] | None = None
    snapshot: object | None = None  # snapshot_run.SnapshotStats when --snapshot/--resnapshot
    server: str | None = None  # identity of the server shipped from (the last connection's)
    epoch: int = 0             # record.Origin.epoch of what was shipped
    followed_by_gtid: str | None = None  # the GTID state a move to another server started after
    purge_warnings: int = 0


def _log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


class Outage:
    """One outage of the server, timed on its own (issue #56 item 5): it starts at the first lost
    connection after the stream last read something (ShipStats.received moved: a binlog event or
    a heartbeat came through a connection made again) and ends at the next read. Before, the
    clock ran from the first loss of the process's life until stream_once returned, which a
    follower's never does: a second server restart minutes after the first ended the shipper."""

    def __init__(self) -> None:
        self.since: float | None = None  # when this outage began (time.monotonic; None: none yet)
        self.attempts = 0                # failed connections in this outage
        self._received = -1

    def lost(self, received: int) -> float:
        """A connection failed with `received` reads in the process's life so far: seconds this
        outage has lasted (0 at its first failure)."""
        now = time.monotonic()
        if self.since is None or received != self._received:
            self.since, self.attempts, self._received = now, 0, received
        self.attempts += 1
        return now - self.since

    def pause_s(self) -> float:
        """The wait before the next connection: 0.2 s more per failure of this outage, at most 2 s."""
        return min(2.0, 0.2 * self.attempts)


def ship_files(cfg: ShipConfig, paths: list[Path], *, follow: bool = False,
               should_stop: Callable[[], bool] = lambda: False, poll_s: float = 0.2,
               heartbeat_s: float | None = 1.0) -> ShipStats:
    """Ship binlog files; with `follow`, a heartbeat record after each `heartbeat_s` (None: none)
    of reading nothing new at the newest file's end (libs/contracts/heartbeat.py FollowBeat)."""
    inputs = Inputs.from_paths(paths, follow=follow)
    sink = _sink(cfg)
    read = resume_read(sink)
    if read.untrusted_only:
        raise ShipError(read.refusal(cfg.source, cfg.topic, "ship these files to another topic, or give "
                                     "the secret their records were tagged with"), source=cfg.source)
    last = read.record
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
            sink.send(KafkaRecord(cfg.source, name, pos, record.encode(), TopicKind.HEARTBEAT))
            progress.heartbeat(at_ns / 1e9, name, pos)
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


def _sink(cfg: ShipConfig) -> KafkaSink:
    """The run's producer; with a topic secret it tags every record it sends."""
    sink = KafkaSink(cfg.bootstrap, cfg.topic, cfg.source, max_event_bytes=cfg.max_event_bytes,
                     auth=cfg.kafka)
    sink.keys = cfg.topic_keys
    return sink


def _serve_metrics(cfg: ShipConfig, progress: Progress, stats: ShipStats) -> None:
    if cfg.metrics_port is not None:
        try:
            serve(lambda: ship_metrics.families(cfg.source, progress, stats), cfg.metrics_port)
        except OSError as exc:  # the port is taken: one line, before anything is shipped
            raise ShipError(f"cannot serve metrics on 127.0.0.1:{cfg.metrics_port}: {exc.strerror or exc}",
                            source=cfg.source) from None


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
    sink = _sink(cfg)
    state: dict = {"tracker": None}
    watch = PurgeWatch(cfg.source, cfg.purge_warn_files, cfg.purge_warn_interval_s)
    lag = _ServerLag(opts, lambda: state["tracker"], watch)
    progress = Progress(cfg.source, interval_s=cfg.progress_s, lag_bytes=lag,
                        note=lambda: watch.risk and "at risk of purge")
    _serve_metrics(cfg, progress, stats)
    requested = StartPoint(start_file, start_pos if start_file else 4, gtid, 0, None)
    outage = Outage()
    try:
        if snapshot is not None:
            stats.snapshot = _snapshot_first(cfg, opts, sink, snapshot, include, exclude,
                                             snapshot_chunk_rows)
        while not should_stop():
            sink.flush()  # everything produced so far is in Kafka before we ask where we are
            try:
                if stream_once(cfg, opts, sink, progress, stats, state, requested,
                               follow_gtid, watch, should_stop):
                    break
            except Exception as exc:  # noqa: BLE001 - classified right below
                if not retryable(exc):
                    raise
                if outage.lost(stats.received) > give_up_after_s:
                    raise ShipError(f"server {opts.host}:{opts.port} unreachable for "
                                    f"{give_up_after_s:.0f}s: {exc}", source=cfg.source) from exc
                stats.reconnects += 1
                _log(f"cdc-ship {cfg.source}: connection lost ({exc}); reconnecting")
                time.sleep(outage.pause_s())
    finally:
        lag.close()
        sink.flush()
        stats.purge_warnings = watch.warnings
    progress.report(force=True)
    return stats


def _snapshot_first(cfg, opts, sink, mode, include, exclude, chunk_rows):
    # imported here: the snapshot reader and its value conversions load only when asked for
    from libs.shipper import snapshot_run
    snap = snapshot_run.SnapshotOptions(mode, tuple(include), tuple(exclude), chunk_rows)
    return snapshot_run.snapshot_if_due(cfg.bootstrap, cfg.topic, cfg.source, opts, sink, snap,
                                        progress_s=cfg.progress_s)


"""`cdc-ship --server ... --snapshot | --resnapshot`: decide from the source's last record in the
topic whether a snapshot run is due (libs/snapshot/protocol.py plan_start), and publish it.

A run publishes begin, per table: table, rows..., table_end, then end, every record with Kafka
header position C = plan.binlog_from (an earlier, interrupted run's position, or the end of the
binlog already shipped) or, when the topic has nothing to continue, the run's own P. The binlog
loop then resumes where the topic's last record ends: at C (KafkaRecord.end_pos of a snapshot
record is its header position).
"""
from __future__ import annotations

import sys
import time
import uuid
from dataclasses import dataclass, field

from libs.snapshot import source
from libs.snapshot import DEFAULT_CHUNK_ROWS
from libs.snapshot.chunks import last_state
from libs.snapshot.protocol import INITIAL, RUN, Position, StartPlan, plan_start
from libs.snapshot.record import ROWS, TABLE_END

from .kafka_sink import KafkaSink, last_record
from .record import SNAPSHOT, KafkaRecord
from .replica_source import ServerOptions


@dataclass(frozen=True)
class SnapshotOptions:
    mode: str = INITIAL  # protocol.INITIAL | protocol.RESNAPSHOT
    include: tuple[str, ...] = ()  # regexes, re.fullmatch on 'db.table'
    exclude: tuple[str, ...] = ()
    chunk_rows: int = DEFAULT_CHUNK_ROWS
    table_filter: source.TableFilter = field(init=False, repr=False, compare=False)

    def __post_init__(self):  # a bad regex is a ValueError here, before anything connects
        object.__setattr__(self, "table_filter", source.TableFilter.compile(self.include,
                                                                             self.exclude))


@dataclass
class SnapshotStats:
    runs: int = 0
    tables: int = 0
    rows: int = 0
    seconds: float = 0.0


def _log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def snapshot_if_due(bootstrap: str, topic: str, name: str, opts: ServerOptions, sink: KafkaSink,
                    snap: SnapshotOptions, *, progress_s: float = 5.0) -> SnapshotStats:
    """Run the snapshot when plan_start says RUN; flushes the sink before returning."""
    stats = SnapshotStats()
    plan = plan_start(last_state(last_record(bootstrap, topic, name)), snap.mode)
    if plan.action != RUN:
        _log(f"cdc-ship {name}: no snapshot ({snap.mode}): the topic already has this source's "
             f"records; following the binlog from {plan.binlog_from}")
        return stats
    conn = source.connect(opts)
    try:
        _run(conn, name, sink, snap, plan, stats, progress_s)
        conn.rollback()  # read only: nothing to commit; ends the snapshot transaction
    finally:
        conn.close()
    sink.flush()
    return stats


def _run(conn, name, sink, snap: SnapshotOptions, plan: StartPlan, stats: SnapshotStats,
         progress_s: float) -> None:
    started = time.monotonic()
    try:
        point = source.open_snapshot(conn)
    except source.MySQLError as exc:
        raise source.SnapshotError(f"cannot open the consistent snapshot: {exc}",
                                   source=name) from None
    tables = _run_tables(conn, plan, snap, name)
    at = plan.binlog_from or Position(point.file, point.pos)
    run = source.Run(name, uuid.uuid4().hex, point, chunk_rows=snap.chunk_rows,
                     progress_s=progress_s)
    _log(f"cdc-ship {name}: snapshot {run.snapshot_id} of {len(tables)} table(s) at "
         f"{point.file}:{point.pos} (gtid {point.gtid or '?'}); the binlog continues at {at}")
    for rec in source.run_records(conn, run, tables):
        sink.send(KafkaRecord(name, at.file, at.pos, rec.encode(), kind=SNAPSHOT))
        if rec.kind == ROWS:
            stats.rows += rec.row_count
        stats.tables += rec.kind == TABLE_END
    stats.runs += 1
    stats.seconds = time.monotonic() - started
    _log(f"cdc-ship {name}: snapshot {run.snapshot_id} done: {stats.tables} table(s), "
         f"{stats.rows:,} rows in {stats.seconds:.1f} s")


def _run_tables(conn, plan: StartPlan, snap: SnapshotOptions, name: str) -> list:
    """The run's tables: every included table, or the remaining tables of an interrupted run
    (named in its last record, whatever --include says now) that still exist."""
    try:
        if plan.tables is None:
            return source.list_tables(conn, snap.table_filter)
        existing = {t.qualified: t for t in source.list_tables(conn)}
    except source.MySQLError as exc:
        raise source.SnapshotError(f"cannot list the tables: {exc}", source=name) from None
    gone = [t for t in plan.tables if t not in existing]
    if gone:
        _log(f"cdc-ship {name}: snapshot: {', '.join(gone)} no longer exist(s); not read "
             f"(the binlog from the run's position holds the DROP)")
    return [existing[t] for t in dict.fromkeys(plan.tables) if t in existing]

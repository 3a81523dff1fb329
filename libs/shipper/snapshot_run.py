"""`cdc-ship --server ... --snapshot | --resnapshot`: decide from the source's last record in the
topic whether a snapshot run is due (libs/snapshot/protocol.py plan_start), and publish it.

A run publishes begin, per table: table, rows..., table_end, then end, every record with Kafka
header position C = plan.binlog_from (an earlier, interrupted run's position, or the end of the
binlog already shipped) or, when the topic has nothing to continue, the run's own P. The binlog
loop then resumes where the topic's last record ends: at C (KafkaRecord.end_pos of a snapshot
record is its header position).

When the binlog cannot continue at C (the server purged it, or the server is another one than
the topic's last record came from: C means nothing in its binlog), the run's binlog continues
at its own position P instead: the run is the way on, and tables it does not include miss the
changes in between (the log line says so). Snapshot records carry the server's identity and
epoch like binlog events (record.Origin), so the binlog after them resumes against that server.
"""
from __future__ import annotations

import sys
import time
import uuid
from dataclasses import dataclass, field

from libs.snapshot import chunk_values, oversized, schema_lock, source
from libs.snapshot import DEFAULT_CHUNK_BYTES, DEFAULT_CHUNK_ROWS
from libs.snapshot.chunks import last_state
from libs.snapshot.protocol import INITIAL, RESNAPSHOT, RUN, StartPlan, plan_start
from libs.contracts.position import BinlogPosition
from libs.snapshot.record import ROWS, TABLE, TABLE_END, SnapshotRecord
from libs.contracts.sql_names import quote_identifier
from libs.contracts.table_names import TableName, parse_table_key

from libs.shipper.kafka_sink import KafkaSink
from libs.shipper.resume_reader import resume_read
from libs.source.errors import ShipError
from libs.shipper.purge import is_purged
from libs.contracts.topic import KafkaRecord, Origin, TopicKind
from libs.source.replica_source import ServerOptions, binary_logs, connect, is_mariadb
from libs.shipper.resume import epoch_for, last_identity
from libs.source.server_identity import read_identity


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
    """Run the snapshot when plan_start says RUN; flushes the sink before returning. The topic's
    last record is the newest one the shipper trusts (resume_reader.py); a topic holding only
    untrusted records of the source is refused, but for --resnapshot (a new run, the binlog
    after it from the run's own position)."""
    stats = SnapshotStats()
    read = resume_read(sink)
    if read.untrusted_only and snap.mode != RESNAPSHOT:
        raise ShipError(read.refusal(name, topic, "give --resnapshot to publish a new snapshot and follow "
                                                  "the binlog from its position"), source=name)
    last = read.record
    plan = plan_start(last_state(last), snap.mode)
    if plan.action != RUN:
        _log(f"cdc-ship {name}: no snapshot ({snap.mode}): the topic already has this source's "
             f"records; following the binlog from {plan.binlog_from}")
        return stats
    identity, logs = _server_facts(opts)
    plan = _continuable(name, last, identity, logs, plan)
    origin = Origin(identity.text(), epoch=epoch_for(last, identity))
    conn = source.connect(opts)
    try:
        _run(conn, name, sink, snap, plan, stats, progress_s, origin, lambda: source.connect(opts))
        conn.rollback()  # read only: nothing to commit; ends the snapshot transaction
    finally:
        conn.close()
    sink.flush()
    return stats


def _server_facts(opts: ServerOptions):
    """(identity, SHOW BINARY LOGS) on a plain client connection (the snapshot's own returns
    raw bytes)."""
    conn = connect(opts)
    try:
        return read_identity(conn, is_mariadb(conn)), binary_logs(conn)
    finally:
        conn.close()


def _continuable(name, last, identity, logs, plan: StartPlan) -> StartPlan:
    """The plan, or a run whose binlog continues at its own position when the binlog cannot
    continue at plan.binlog_from on this server (module doc)."""
    if plan.binlog_from is None:
        return plan
    before = last_identity(last) if last is not None else None
    if before is not None and not before.same_server(identity):
        why = f"the topic's last record came from {before}, this server is {identity}"
    elif is_purged(logs, plan.binlog_from.file):
        why = f"the server purged {plan.binlog_from.file}"
    else:
        return plan
    _log(f"cdc-ship {name}: the binlog cannot continue at {plan.binlog_from} ({why}): it "
         f"continues at the new snapshot's position; tables outside this snapshot miss the "
         f"changes in between")
    return StartPlan(RUN, None)


def _run(conn, name, sink, snap: SnapshotOptions, plan: StartPlan, stats: SnapshotStats,
         progress_s: float, origin: Origin, guard_connect) -> None:
    started = time.monotonic()
    notes: list[str] = []  # _run_tables' lines, of the attempt that opened the snapshot

    def tables_now() -> list:
        notes.clear()
        return _run_tables(conn, plan, snap, name, log=notes.append)

    try:
        point, tables = schema_lock.open_locked(conn, tables_now, guard_connect, name)
    except source.MySQLError as exc:
        raise source.SnapshotError(f"cannot open the consistent snapshot: {source.error_text(exc)}",
                                   source=name) from None
    for line in notes:
        _log(line)
    source.refuse_versioned(tables, name)
    at = plan.binlog_from or BinlogPosition(point.file, point.pos)
    # chunks cut under the record limit: only a single row over it makes a record too large
    run = source.Run(name, uuid.uuid4().hex, point, chunk_rows=snap.chunk_rows,
                     chunk_bytes=min(DEFAULT_CHUNK_BYTES, max(1, sink.max_event_bytes // 2)),
                     progress_s=progress_s)
    _log(f"cdc-ship {name}: snapshot {run.snapshot_id} of {len(tables)} table(s) at "
         f"{point.file}:{point.pos} (gtid {point.gtid or '?'}); the binlog continues at {at}"
         + ("" if tables else " (no table selected: the server lists only tables the user has a privilege "
                              "on, e.g. SELECT)"))
    if plan.binlog_from is None and point.gtid:  # the binlog continues at P, whose state it is
        origin = Origin(origin.identity, point.gtid, None, origin.epoch)
    create_table, table_rows = None, 0  # of the table being read: for an oversized row's line
    for rec in source.run_records(conn, run, tables):
        value = rec.encode()
        if rec.kind == TABLE:
            create_table, table_rows = rec.create_table, 0
        elif rec.kind == ROWS and len(value) > sink.max_event_bytes:
            raise _oversized_error(rec, create_table, table_rows, len(value), sink.max_event_bytes, name)
        sink.send(KafkaRecord(name, at.file, at.pos, value, kind=TopicKind.SNAPSHOT, origin=origin))
        if rec.kind == ROWS:
            stats.rows += rec.row_count
            table_rows += rec.row_count
        stats.tables += rec.kind == TABLE_END
    stats.runs += 1
    stats.seconds = time.monotonic() - started
    _log(f"cdc-ship {name}: snapshot {run.snapshot_id} done: {stats.tables} table(s), "
         f"{stats.rows:,} rows in {stats.seconds:.1f} s")


def _oversized_error(rec: SnapshotRecord, create_table: str | None, rows_before: int, size: int,
                     limit: int, name: str) -> source.SnapshotError:
    """One line naming the table, the chunk's largest row (its primary key, or its place in the
    chunk), the size and the limit (libs/snapshot/oversized.py)."""
    per_column = chunk_values.decode(rec.columns, rec.values)
    index, _size = oversized.largest_row(per_column)
    label = oversized.row_label([c.name for c in rec.columns], per_column, index,
                                _primary_key(rec, create_table), rec.chunk_no, rows_before)
    return source.SnapshotError(
        oversized.oversized_line(TableName(rec.database, rec.table), label, size, limit),
        source=name, file=rec.binlog_file, pos=rec.binlog_pos)


def _primary_key(rec: SnapshotRecord, create_table: str | None) -> tuple[str, ...]:
    """The table's primary-key columns from its SHOW CREATE TABLE; () when it has none or the
    text does not parse (the row is then named by its place in the chunk)."""
    if not create_table:
        return ()
    from libs.targets.ddl import parse_ddl  # sqlglot: loaded only for this error
    try:
        (ddl,) = parse_ddl(f"USE {quote_identifier(rec.database)};\n{create_table}")
    except Exception:  # noqa: BLE001 - any parse failure: fall back to the row's place
        return ()
    return tuple(ddl.primary_key)


def _run_tables(conn, plan: StartPlan, snap: SnapshotOptions, name: str, log=_log) -> list:
    """The run's tables: every included table, or the remaining tables of an interrupted run
    (named in its last record, whatever --include says now) that still exist, less those the
    restart's --exclude matches (one line names them: their snapshot is abandoned)."""
    try:
        if plan.tables is None:
            return source.list_tables(conn, snap.table_filter)
        existing = source.list_tables(conn)
    except source.MySQLError as exc:
        raise source.SnapshotError(f"cannot list the tables: {source.error_text(exc)}", source=name) from None
    remaining, left_out = oversized.resume_tables(plan.tables, snap.table_filter.excludes)
    if left_out:
        log(oversized.left_out_line(name, left_out))
    found, gone = {}, []
    for text in remaining:
        tables = _named(text, existing)
        found.update((t.pair, t) for t in tables)
        gone += [] if tables else [text]
    if gone:
        log(f"cdc-ship {name}: snapshot: {', '.join(gone)} no longer exist(s); not read "
            f"(the binlog from the run's position holds the DROP)")
    return list(found.values())


def _named(text: str, existing: list) -> list:
    """The existing table(s) a record's `tables` entry names: its pair (libs/contracts/table_names.py);
    a 'db.table' that a run before that rule joined from a database with a '.' in its name
    names every table whose joined name it is (reading one table too many is harmless)."""
    pair = parse_table_key(text)
    exact = [t for t in existing if t.pair == pair]
    if exact or text.startswith("`"):
        return exact
    return [t for t in existing if t.qualified == text]

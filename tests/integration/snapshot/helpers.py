"""What the snapshot tests need beside the shipper (tests/integration/shipper/helpers.py): a
recorded workload, the server's table content at a binlog position P (exact, from the server
itself), and the topic's snapshot records.

The content at P, soundly: every workload transaction is recorded with its GTID seq_no
(@@last_gtid right after its COMMIT, same session); the binlog files on disk give each GTID
event's position. The transactions in a snapshot at P are exactly those whose GTID event lies
before P (P is a transaction boundary: MariaDB's binlog_snapshot_position). A reference copy of
the tables, taken before the workload started, with sql_log_bin = 0 so it never reaches the
binlog, gets those transactions replayed in seq_no (= commit) order; its rows, read with the
snapshot's own column conversions, are the server's rows at P. Statements are deterministic
(no NOW(), RAND(); LIMIT 1 only among identical rows), so the replay reproduces the effect.
"""
from __future__ import annotations

import collections
import random
import threading
import time

from libs.binlog import iter_frames
from libs.binlog.file_names import binlog_sort_key
from libs.shipper.rebuild import read_records
from libs.local.demo_database import TABLES, create_script, workload_transaction
from libs.snapshot import chunk_values, source, values
from libs.snapshot.record import SnapshotRecord

GTID_EVENT = 162
COLUMN_KEYS = ("ordinal", "name", "type_code", "text", "binary")


class Recorder:
    """Committed transactions as (seq_no, [sql with {db}]), from any number of sessions."""

    def __init__(self):
        self.lock = threading.Lock()
        self.done: list[tuple[int, list[str]]] = []

    def commit(self, conn, db: str, statements: list[str]) -> None:
        with conn.cursor() as cur:
            cur.execute("BEGIN")
            for sql in statements:
                cur.execute(sql.format(db=db))
            cur.execute("COMMIT")
            cur.execute("SELECT @@last_gtid")
            seq = int(cur.fetchone()[0].split("-")[-1])
        with self.lock:
            self.done.append((seq, statements))


def create_schema(db, name: str, sizes: dict[str, int], ref: str) -> None:
    """`name` (binlogged) and its reference copy `ref` (never binlogged) with the same rows."""
    copy = [f"SET SESSION sql_log_bin = 0; DROP DATABASE IF EXISTS {ref}; CREATE DATABASE {ref};"]
    for t in TABLES:
        copy.append(f"CREATE TABLE {ref}.{t} LIKE {name}.{t}; "
                    f"INSERT INTO {ref}.{t} SELECT * FROM {name}.{t};")
    db.sql(create_script(name, sizes) + "\n" + "\n".join(copy))


def workload(db, name: str, recorder: Recorder, stop: threading.Event, errors: list, *,
             tables: set[str], seed: int, pause_s: float = 0.004, first: int = 0) -> None:
    """Transactions first, first + 1, ... (their new ids and codes never collide with another
    session's when `first` differs by more than the transactions of a run)."""
    try:
        conn = db.connect()
        with conn.cursor() as cur:
            cur.execute("SET SESSION binlog_row_image = MINIMAL")
        rng, i = random.Random(seed), first
        while not stop.is_set():
            recorder.commit(conn, name, workload_transaction(rng, i, tables))
            i += 1
            time.sleep(pause_s)
        conn.close()
    except Exception as exc:  # noqa: BLE001 - surfaced by the test
        errors.append(exc)


class Workload:
    """`sessions` workload sessions in threads, each its own seed and id range."""

    def __init__(self, db, name: str, tables, seed: int, sessions: int = 1, pause_s: float = 0.004):
        self.recorder, self.stop_event, self.errors = Recorder(), threading.Event(), []
        self.threads = [threading.Thread(target=workload,
                                         args=(db, name, self.recorder, self.stop_event, self.errors),
                                         kwargs=dict(tables=set(tables), seed=seed + k, pause_s=pause_s,
                                                     first=(k + 1) * 10_000_000), daemon=True)
                        for k in range(sessions)]
        for thread in self.threads:
            thread.start()
        deadline = time.monotonic() + 20  # returned once 20 transactions committed (or one failed)
        while len(self.recorder.done) < 20 and time.monotonic() < deadline and not self.errors:
            time.sleep(0.02)

    def committed(self) -> int:
        return len(self.recorder.done)

    def stop(self) -> None:
        self.stop_event.set()
        for thread in self.threads:
            thread.join(30)


def start_workload(db, name: str, tables, seed: int):
    """One workload session (Workload), as (recorder, stop event, errors, thread)."""
    load = Workload(db, name, tables, seed)
    return load.recorder, load.stop_event, load.errors, load.threads[0]


def gtid_positions(db) -> dict[int, tuple]:
    """seq_no -> (binlog sort key, position) of every GTID event in the server's binlog files."""
    found = {}
    for (name, _size) in db.query("SHOW BINARY LOGS"):
        for pos, frame in iter_frames(db.binlog_path(name).read_bytes()):
            if frame[4] == GTID_EVENT:
                found[int.from_bytes(frame[19:27], "little")] = (binlog_sort_key(name), pos)
    return found


def row_key(row: list[dict]) -> tuple:
    return tuple(tuple(v.get(k) for k in COLUMN_KEYS) for v in row)


class Reference:
    """The reference copy, advanced to a binlog position by replaying the recorded workload."""

    def __init__(self, db, ref: str, recorder: Recorder, positions: dict[int, tuple]):
        self.db, self.ref, self.positions = db, ref, positions
        self.pending = sorted(recorder.done)
        self.conn = source.connect(ServerOpts(db))
        setup = values.SESSION_SETUP
        with self.conn.cursor() as cur:
            for sql in ("SET SESSION sql_log_bin = 0", *([setup] if isinstance(setup, str) else setup)):
                cur.execute(sql)
        self.applied = 0

    def advance_to(self, file: str, pos: int) -> int:
        """Apply the recorded transactions committed before file:pos; how many so far."""
        at = (binlog_sort_key(file), pos)
        with self.conn.cursor() as cur:
            while self.pending and self.positions[self.pending[0][0]] < at:
                _seq, statements = self.pending.pop(0)
                cur.execute("BEGIN")
                for sql in statements:
                    cur.execute(sql.format(db=self.ref))
                cur.execute("COMMIT")
                self.applied += 1
        return self.applied

    def rows(self, table: str) -> collections.Counter:
        t = source.SourceTable(self.ref, table)
        _create, columns = source.describe(self.conn, t)
        batches = source.stream_batches(self.conn, source.select_statement(t, columns), columns, 1 << 22)
        return collections.Counter(row_key(image) for batch in batches
                                   for image in chunk_values.row_images(
                                       columns, chunk_values.encode(columns, batch)))

    def close(self):
        self.conn.close()


class ServerOpts:
    def __init__(self, db):
        self.host, self.port, self.user, self.password = db.host, db.port, db.user, db.password


def topic_records(bootstrap: str, topic: str, source_id: str):
    """(every record of the source in order, [(record, decoded SnapshotRecord)] of the snapshot)."""
    records = list(read_records(bootstrap, topic, source_id))
    snaps = [(r, SnapshotRecord.decode(r.value)) for r in records if r.is_snapshot]
    return records, snaps


def snapshot_rows(snaps, snapshot_id: str, table: str) -> collections.Counter:
    return collections.Counter(row_key(row) for _r, s in snaps
                               if s.snapshot_id == snapshot_id and s.kind == "rows"
                               and s.table == table for row in s.row_images())

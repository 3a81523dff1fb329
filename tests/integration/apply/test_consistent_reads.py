"""Consistent reads on a live source (issue #40 acceptance): a real MariaDB moves amounts between
rows of two tables, each move one transaction (the sum over both tables never changes);
cdc-ship follows it into Kafka and cdc-replicate applies it while a reader thread reads both
tables through pipelines/reads/consistent_read.py: every read has the invariant sum.

A plain read of each table's latest version does not: the tables of one batch commit one after
another. Shown once, deterministically: a hook in the job commits the first table's write of one
batch, reads both tables plainly (the sum is off by that batch's moves) and through the helper at
that same instant (the sum holds: the previous batch), then lets the batch's other writes commit."""
from __future__ import annotations

import random
import threading
import time

import pytest

from libs.config.job import JobConfig
from libs.tables.system_tables import APP_ID
from pipelines.apply.batch_writes import BatchWrites
from pipelines.reads.consistent_read import ConsistentReadError, consistent_point, read_consistent
from pipelines.delta.delta_tables import read
from pipelines.replicate import build_query, make_applier, stop_between_batches

from ..shipper.helpers import password_file, start_shipper, stop_shipper
from ..waiting import wait_until

pytestmark = pytest.mark.integration

DB, ROWS, START = "bank40", 5, 100
TOTAL = 2 * ROWS * START
TABLES = [f"{DB}__acc_a", f"{DB}__acc_b"]
MOVES = 24  # spread over ~5 s: several batches at a 1 s trigger


def _sum(frames) -> int:
    return sum(df.agg({"amount": "sum"}).collect()[0][0] or 0 for df in frames)


def _move_money(mariadb, stop: threading.Event) -> None:
    """MOVES transactions, each taking an amount from a row of acc_a to a row of acc_b."""
    rng = random.Random(40)
    conn = mariadb.connect()
    try:
        with conn.cursor() as cur:
            for _ in range(MOVES):
                if stop.is_set():
                    return
                amount, a, b = rng.randint(1, 9), rng.randint(1, ROWS), rng.randint(1, ROWS)
                cur.execute("BEGIN")
                cur.execute(f"UPDATE {DB}.acc_a SET amount = amount - %s WHERE id = %s", (amount, a))
                cur.execute(f"UPDATE {DB}.acc_b SET amount = amount + %s WHERE id = %s", (amount, b))
                cur.execute("COMMIT")
                time.sleep(0.2)
    finally:
        conn.close()


def _plan_of(write):
    """The TablePlan of a target write (BatchWrites._target_write: `_commit` with a `make` of the
    plan), or None (an executor table's write)."""
    make = getattr(write, "keywords", {}).get("make")
    return getattr(make, "keywords", {}).get("plan")


class _HalfBatch:
    """Once, in a batch of moves writing both tables: acc_a's write commits, both tables are read
    plainly and through the helper, then acc_b's write (and the batch's others) commit. A batch's
    tables commit one after another (pipelines/apply/batch_writes.py); this fixes their order and
    the read's instant, with no wait that a batch without one of them could leave hanging."""

    def __init__(self, spark, root):
        self.spark, self.root = spark, root
        self.real = BatchWrites._write_targets
        self.moving = threading.Event()  # armed once both tables' snapshots are in and moves begin
        self.batch: int | None = None
        self.plain = self.consistent = None

    def __call__(self, writes, spark, batch_id, batch_writes):
        plans = {plan.target.delta_table: w for w in batch_writes
                 if (plan := _plan_of(w)) is not None and not plan.replace}
        if self.batch is not None or not self.moving.is_set() or not set(TABLES) <= plans.keys():
            return self.real(writes, spark, batch_id, batch_writes)
        self.batch = batch_id
        first = plans[TABLES[0]]
        self.real(writes, spark, batch_id, [first])
        self.plain = _sum(read(spark, writes.tables.table(t)) for t in TABLES)
        self.consistent = (_sum(read_consistent(spark, self.root, TABLES).values()),
                           consistent_point(spark, self.root, TABLES).batch_id)
        self.real(writes, spark, batch_id, [w for w in batch_writes if w is not first])


def test_a_reader_through_the_helper_never_sees_half_a_move(mariadb, kafka_broker, topic, spark, tmp_path,
                                                            monkeypatch):
    values = ", ".join(f"({i}, {START})" for i in range(1, ROWS + 1))
    mariadb.sql(f"DROP DATABASE IF EXISTS {DB}; CREATE DATABASE {DB}; "
                f"CREATE TABLE {DB}.acc_a (id INT PRIMARY KEY, amount INT NOT NULL); "
                f"CREATE TABLE {DB}.acc_b (id INT PRIMARY KEY, amount INT NOT NULL); "
                f"INSERT INTO {DB}.acc_a VALUES {values}; INSERT INTO {DB}.acc_b VALUES {values}")
    root = str(tmp_path / "delta")
    half = _HalfBatch(spark, root)
    monkeypatch.setattr(BatchWrites, "_write_targets",
                        lambda writes, spark_, batch_id, batch_writes:
                            half(writes, spark_, batch_id, batch_writes))
    shipper = start_shipper("--server", f"{mariadb.host}:{mariadb.port}", "--user", mariadb.user,
                            "--password-file", password_file(mariadb), "--bootstrap", kafka_broker.bootstrap,
                            "--topic", topic, "--source", "bank1", "--snapshot", "--include", rf"{DB}\..*")
    cfg = JobConfig(bootstrap=kafka_broker.bootstrap, topic=topic, delta_root=root,
                    checkpoint=str(tmp_path / "ckpt"), trigger_seconds=1.0,
                    tables={"include": [rf"{DB}\..*"]})
    query = build_query(spark, cfg, make_applier(cfg))
    stop, seen = threading.Event(), []

    def reader():
        while not stop.is_set():
            try:
                point = consistent_point(spark, root, TABLES)
            except ConsistentReadError:  # the snapshot is not in yet
                time.sleep(0.2)
                continue
            frames = read_consistent(spark, root, TABLES, batch_id=point.batch_id)
            seen.append((point.batch_id, _sum(frames.values())))
            time.sleep(0.3)  # the job's batches need the cores more

    threads = [threading.Thread(target=reader), threading.Thread(target=_move_money, args=(mariadb, stop))]
    try:
        threads[0].start()
        wait_until(lambda: seen, 300, "the snapshot of both tables in Delta")  # bounds for a loaded machine
        half.moving.set()
        threads[1].start()
        threads[1].join(120)
        (last_gtid,), = mariadb.query("SELECT @@gtid_binlog_pos")
        wait_until(lambda: _point_at(spark, root, last_gtid), 300, f"GTID {last_gtid} applied")
        assert query.exception() is None
    finally:
        stop.set()
        for thread in threads:
            if thread.is_alive():
                thread.join(60)
        # the shipper first: while its heartbeats keep a batch running every trigger, the query
        # may find no moment between batches until stop_between_batches' timeout (300 s)
        code, output = stop_shipper(shipper)
        stop_between_batches(query)
    assert code == 0, output

    batches = sorted({batch for batch, _ in seen})
    print(f"{len(seen)} consistent reads over batches {batches}; the half-written batch {half.batch}: "
          f"plain sum {half.plain}, consistent {half.consistent}")
    assert [s for s in seen if s[1] != TOTAL] == []
    assert len(batches) >= 3  # read while the job applied the moves, not only before or after
    assert half.batch is not None and half.plain < TOTAL  # the plain read saw acc_a's commit without acc_b's
    assert half.consistent[0] == TOTAL and half.consistent[1] < half.batch
    server = [sorted(mariadb.query(f"SELECT id, amount FROM {DB}.{t}")) for t in ("acc_a", "acc_b")]
    frames = read_consistent(spark, root, TABLES)
    assert [sorted(tuple(r) for r in frames[t].select("id", "amount").collect()) for t in TABLES] == server
    assert sum(amount for _, amount in server[0]) < ROWS * START  # the moves are in


def _point_at(spark, root, gtid) -> bool:
    try:
        return consistent_point(spark, root, TABLES, gtid=gtid, app_id=APP_ID).batch_id >= 0
    except ConsistentReadError:
        return False

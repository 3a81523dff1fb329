"""Issue #5 "Exactly once" (DESIGN.md "Semantics that must hold": kill the job at any instant,
restart it: every committed source transaction is in Delta exactly once).

Real parts only: a MariaDB server (binlog ROW, MINIMAL row images, annotate rows) runs the
workload of workload.py while `cdc-ship --server` ships its binlog into the Kafka broker;
`cdc-replicate --target-ddl` (a subprocess, micro-batches of 40 frames, so transactions straddle
them) is SIGKILLed KILLS times while the workload still writes, and restarted from the same
checkpoint each time; a final `--available-now` run drains the topic.

Where the kills land: each kill aims at a point of a micro-batch (replicator.STAGES: running,
nothing written yet; change log committed; a target table's write, MERGE or whole-table
overwrite, committed; progress committed), drawn from the seed: in the suite 2 kills (each
cold restart costs ~30 s of the suite's budget), one of them after the change log's or a
target's write (a batch left half-written), the other at any other point, so every point is
hit over a few runs; with CDC_EXACTLY_ONCE_KILLS >= 4 every point at least once
(bench/kill_rounds.py runs that, round after round). Each kill fires a seeded random delay
after this run reached its point (0-8 s after the run's first batch started; 0-1.5 s after a
write, 0-0.25 s for the kill aimed at a half-written batch). The printed schedule says what each
kill interrupted: the batch in flight, the Delta commits this run made for it (told by commit
versions) and those the batch markers credit to it (any run: Delta's txn actions on target
writes, commit marks on appends).
Then, against oracles from the server itself:
  * every Delta target table equals `SELECT *` on the server, row for row (oracle.normalise);
  * `_cdc_change_log` holds each change once: no (source, trx_id, change_seq) twice, and per
    (GTID, table, op) as many row changes as `mariadb-binlog -vv` shows in the server's files;
  * `_cdc_progress`'s latest row is the server's `@@gtid_binlog_pos`; nothing was quarantined.

Seed: CDC_EXACTLY_ONCE_SEED (default: drawn and printed, so a failing run can be repeated).
Kills: CDC_EXACTLY_ONCE_KILLS (default 2).
"""
from __future__ import annotations

import collections
import os
import random
import shutil
import threading
import time

import pytest
from confluent_kafka import Consumer, TopicPartition

from tests.drawn import drawn_seed
from tests.integration.shipper.helpers import (password_file, shipper_output, start_shipper, stop_shipper,
                                              wait_shipped)

from .oracle import binlog_row_changes, delta_rows, server_rows
from .replicator import CHANGE_LOG, IN_FLIGHT, STAGES, TARGET, Replicator
from .workload import TABLES, run_round, schema_sql

pytestmark = pytest.mark.integration

DB = "exactly_once"
SOURCE = "mdb-eo"
KILLS = int(os.environ.get("CDC_EXACTLY_ONCE_KILLS") or 2)  # each cold restart costs ~30 s
MAX_KILL_DELAY_S = 1.5  # after the drawn stage's write was seen
# The kill aimed at a half-written batch (kill_stages): a target's write and the batch's last one
# can be well under a second apart (small tables written side by side), so it fires sooner.
HALF_WRITTEN_MAX_DELAY_S = 0.25
IN_FLIGHT_MAX_DELAY_S = 8.0  # after this run's first batch started (query up)
ROUND_PAUSE_S = (1.0, 5.0)  # between workload rounds (~70 frames each) while the job is killed
WORKLOAD_ROUNDS = 60  # at most: bounds what the final drain has to apply on a slow machine
CONTINUOUS_CONF = "trigger_seconds: 0.5\nmax_offsets_per_trigger: 40\n"  # many small batches,
# transactions straddle them (a round is ~70 frames)
DRAIN_CONF = "trigger_seconds: 0.5\nmax_offsets_per_trigger: 100000\n"
HALF_WRITTEN = (CHANGE_LOG, TARGET)  # a kill after these writes lands before the batch's progress


def kill_stages(rng: random.Random, kills: int = KILLS) -> list[str]:
    """Where in a micro-batch each kill aims (replicator.STAGES), in a drawn order. With fewer
    kills than stages: one after a write that leaves its batch half-written (the case exactly
    once is about, asserted below), the others drawn from the remaining stages; with more:
    every stage once, the rest drawn."""
    if kills >= len(STAGES):
        stages = list(STAGES) + rng.choices(STAGES, k=kills - len(STAGES))
    else:
        half = rng.choice(HALF_WRITTEN)
        stages = [half] + rng.sample([s for s in STAGES if s != half], kills - 1)
    rng.shuffle(stages)
    return stages


def _target_ddl(mariadb) -> str:
    """The replica's declaration = the source tables' SHOW CREATE TABLE (issue #5 --target-ddl)."""
    return f"USE `{DB}`;\n" + "".join(mariadb.query(f"SHOW CREATE TABLE `{DB}`.`{t}`")[0][1] + ";\n"
                                      for t in TABLES)


def _minimal_session(mariadb):
    conn = mariadb.connect()
    with conn.cursor() as cur:
        cur.execute("SET SESSION binlog_row_image = MINIMAL")
    return conn


class Workload(threading.Thread):
    """Rounds of workload.py, one after the other with seeded pauses, until stopped."""

    def __init__(self, mariadb, rng: random.Random, first_round: int):
        super().__init__(daemon=True)
        self.mariadb, self.rng, self.round = mariadb, rng, first_round
        self.stop, self.error = threading.Event(), None

    def run(self) -> None:
        try:
            conn = _minimal_session(self.mariadb)
            while not self.stop.is_set() and self.round < WORKLOAD_ROUNDS:
                run_round(conn, DB, self.round, self.rng)
                self.round += 1
                self.stop.wait(self.rng.uniform(*ROUND_PAUSE_S))
            conn.close()
        except Exception as exc:  # noqa: BLE001 - re-raised by the test
            self.error = exc


def _context(bootstrap: str, topic: str, shipper, workload: Workload, work_dir) -> str:
    """For a failed wait: is anything new in the topic for the job, and why not."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "exactly-once-diagnosis"})
    try:
        partitions = consumer.list_topics(topic, timeout=10).topics[topic].partitions
        end = "ends at " + (", ".join(
            f"partition {p}: offset {consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1]}"
            for p in sorted(partitions)) or "nothing: it has no partition (not created yet)")
    except Exception as exc:  # noqa: BLE001 - a diagnosis must not hide the failure it explains
        end = f"unreadable ({exc})"
    finally:
        consumer.close()
    alive = "running" if shipper.poll() is None else f"exited {shipper.returncode}"
    free_mib = shutil.disk_usage(work_dir).free // 2**20
    return (f"topic {topic} {end}; {free_mib:,} MiB free on the test's disk\n"
            f"workload: round {workload.round}, {'running' if workload.is_alive() else 'stopped'}, "
            f"error {workload.error!r}\n"
            f"cdc-ship {alive}, its last lines:\n{shipper_output(shipper, 5)}")


def _feed_stopped(shipper, workload: Workload) -> str | None:
    if shipper.poll() is not None:
        return f"cdc-ship exited {shipper.returncode} while the job was running"
    if workload.error is not None:
        return f"the workload failed: {workload.error!r}"
    return None


def _closed_files(mariadb, first: str, current: str) -> list[str]:
    names = [row[0] for row in mariadb.query("SHOW BINARY LOGS")]
    return names[names.index(first):names.index(current)]


def test_sigkilled_replicate_applies_every_change_exactly_once(mariadb, kafka_broker, topic, tmp_path,
                                                               request):
    seed = drawn_seed("CDC_EXACTLY_ONCE_SEED")
    print(f"\nexactly-once: seed {seed} (CDC_EXACTLY_ONCE_SEED={seed} repeats the draws)")
    kill_rng, workload_rng = random.Random(seed), random.Random(seed + 1)
    began = time.monotonic()

    start_file = mariadb.flush_binlogs()
    mariadb.sql(schema_sql(DB))
    ddl = tmp_path / "target.sql"
    ddl.write_text(_target_ddl(mariadb))
    continuous, drain = tmp_path / "continuous.yaml", tmp_path / "drain.yaml"
    continuous.write_text(CONTINUOUS_CONF)
    drain.write_text(DRAIN_CONF)
    job = Replicator(tmp_path, ["--bootstrap", kafka_broker.bootstrap, "--topic", topic,
                                "--target-ddl", str(ddl), "--delta-root", str(tmp_path / "delta"),
                                "--checkpoint", str(tmp_path / "ckpt")],
                     checkpoint=tmp_path / "ckpt", delta_root=tmp_path / "delta")
    shipper = start_shipper("--server", f"{mariadb.host}:{mariadb.port}", "--user", mariadb.user,
                            "--password-file", password_file(mariadb), "--bootstrap", kafka_broker.bootstrap,
                            "--topic", topic, "--source", SOURCE, "--start-file", start_file)
    workload = Workload(mariadb, workload_rng, first_round=0)
    job.context = lambda: _context(kafka_broker.bootstrap, topic, shipper, workload, tmp_path)
    job.feed_stopped = lambda: _feed_stopped(shipper, workload)
    try:
        workload.start()
        partial_kills = 0  # kills that left a batch with some of its Delta writes committed
        for kill, stage in enumerate(kill_stages(kill_rng)):
            started = time.monotonic()
            job.start(continuous)
            job.wait_started()
            up = time.monotonic() - started
            # The kill lands after the first write of `stage` made by THIS run: in the batch the
            # previous kill interrupted (replayed first) unless that write was made before the
            # kill, else in a later batch. IN_FLIGHT is this run's first batch, replay or not:
            # killed while recovering, before its first write (a batch is ~10 s warm, ~35 s cold).
            _planned, committed = job.batches()
            batch = job.wait_stage(after=committed, stage=stage)
            aimed_half = stage in HALF_WRITTEN and not partial_kills
            delay = kill_rng.uniform(0.0, IN_FLIGHT_MAX_DELAY_S if stage == IN_FLIGHT
                                     else HALF_WRITTEN_MAX_DELAY_S if aimed_half else MAX_KILL_DELAY_S)
            job.watch(delay)
            planned, committed = job.batches()
            job.kill()
            in_flight = planned if planned > committed else None
            this_run = job.written_by_this_run(in_flight) if in_flight is not None else []
            all_runs = job.delta_commits_of(in_flight) if in_flight is not None else []
            partial_kills += bool(this_run or all_runs)
            print(f"exactly-once: kill {kill + 1}/{KILLS}: SIGKILL {time.monotonic() - started:5.1f}s after "
                  f"start (query up after {up:.1f}s), {delay:.2f}s after batch {batch} reached '{stage}'; "
                  f"at the kill: last committed batch {committed}, in flight: "
                  + ("none" if in_flight is None else
                     f"batch {in_flight}, its Delta commits by this run [{', '.join(this_run)}], "
                     f"by txn marker [{', '.join(all_runs)}]")
                  + f"; workload at round {workload.round}")
        workload.stop.set()
        workload.join(60)
        assert workload.error is None, workload.error
        assert not workload.is_alive()
        end_file = mariadb.flush_binlogs()
        files = _closed_files(mariadb, start_file, end_file)
        wait_shipped(kafka_broker.bootstrap, topic, SOURCE, files[-1],
                     mariadb.binlog_path(files[-1]).stat().st_size, proc=shipper)
    finally:
        workload.stop.set()
        rc, err = stop_shipper(shipper)
        if job.proc is not None and job.proc.poll() is None:
            job.kill()
    assert rc == 0, err
    # the case exactly-once is about: a batch retried after only part of it reached Delta
    assert partial_kills >= 1, "no kill interrupted a half-written micro-batch"

    drain_started = time.monotonic()
    job.start(drain, "--available-now")
    assert job.proc.wait(900) == 0, job.log_tail()
    print(f"exactly-once: drained with --available-now in {time.monotonic() - drain_started:.1f}s; "
          f"{workload.round} workload rounds over {len(files)} binlog files; "
          f"{len(job.runs)} cdc-replicate runs in {time.monotonic() - began:.0f}s")

    spark = request.getfixturevalue("spark")  # only now: no idle JVM beside the killed ones
    delta = str(tmp_path / "delta")

    # 0. the workload did what it claims: every operation on every table, MINIMAL images
    #    (WL#5092: with a primary or NOT NULL unique key the before image is that key alone)
    binlog = binlog_row_changes([mariadb.binlog_path(f) for f in files])
    every = {(t, op) for t in TABLES for op in ("insert", "update", "delete")}
    assert {(c.table, c.op) for c in binlog} == every
    key_images = {tuple(c.before) for c in binlog if c.table in ("t_pk", "t_uk") and c.op != "insert"}
    assert key_images == {(1,)}, key_images
    assert any(len(c.after) == 1 for c in binlog if c.table == "t_pk" and c.op == "update")

    # 1. every target table = the server's table, row for row
    for table in TABLES:
        columns, expected = server_rows(mariadb, DB, table)
        got = delta_rows(spark, f"{delta}/{DB}__{table}", columns)
        assert got == expected, (f"{table}: Delta minus server {list((got - expected).items())[:5]}, "
                                 f"server minus Delta {list((expected - got).items())[:5]}")
        assert sum(expected.values()) > 0, table

    # 2. the change log: each change once, as many as the server's binlog holds (one collect:
    #    a few thousand small rows, counted here rather than in several Spark jobs)
    log = [r.asDict() for r in spark.read.format("delta").load(f"{delta}/_cdc_change_log").select(
        "lineage.source", "lineage.trx_id", "lineage.change_seq", "lineage.gtid", "database", "table",
        "op", "outcome").collect()]
    identities = collections.Counter((r["source"], r["trx_id"], r["change_seq"]) for r in log)
    assert [i for i, n in identities.items() if n > 1] == []
    got_changes = collections.Counter((r["gtid"], r["database"], r["table"], r["op"]) for r in log
                                      if r["op"] in ("insert", "update", "delete"))
    oracle = collections.Counter((c.gtid, c.database, c.table, c.op) for c in binlog)
    assert got_changes == oracle, (f"change log minus binlog {list((got_changes - oracle).items())[:5]}, "
                                   f"binlog minus change log {list((oracle - got_changes).items())[:5]}")
    assert {r["outcome"] for r in log} <= {"applied", "ddl_recorded"}

    # 3. progress = the source's last GTID, one row per batch; nothing quarantined
    progress = spark.read.format("delta").load(f"{delta}/_cdc_progress").select(
        "source", "gtid", "batch_id").collect()
    latest = max(progress, key=lambda r: r["batch_id"])
    assert (latest["source"], latest["gtid"]) == (SOURCE, mariadb.query("SELECT @@gtid_binlog_pos")[0][0])
    assert len({r["batch_id"] for r in progress}) == len(progress)
    quarantine = tmp_path / "delta" / "_cdc_quarantine"
    if quarantine.is_dir():  # created by the first quarantined record (or an empty append)
        assert spark.read.format("delta").load(str(quarantine)).count() == 0
    print(f"exactly-once: {len(binlog)} row changes in {len({c.gtid for c in binlog})} "
          f"transactions applied exactly once")

"""Issue #17 acceptance: "kill -9 of the job between a DDL and the next DML (and in the middle of
a batch holding both): after restart, data and schema equal the server, nothing applied twice."

Real parts: a MariaDB server (binlog_row_metadata NO_LOG, MINIMAL row images: every image is
read through the schema version at its position), its snapshot and binlog shipped into the
Kafka broker by cdc-ship, and `cdc-replicate` with no target DDL (targets follow the source's
schema) as a subprocess, micro-batches of 8 frames, so a DDL and the DML after it share a batch
or sit on either side of a batch's end. The whole workload is shipped first; the job is then
SIGKILLed (replicator.py: the driver, its JVM and its Python workers at one instant) at points
of batches that rewrote a target's schema (pipelines/apply/schema_changes.py):
  * right after a target's schema rewrite (one commit with the batch's rows, after its change
    log: the first target write of such a batch is this one or another target's rows before it);
  * after the change log, after the progress row of such a batch;
  * while a batch is in flight after a restart (a DDL and the DML after it span batches of 8 frames);
and restarted from the same checkpoint each time; a final `--available-now` run drains the topic.
In the suite 2 of these kill points per run, drawn from a printed seed (CDC_SIGKILL_DDL_SEED
repeats it; each cold restart costs ~40 s of the suite's budget), so every point is hit over a
few runs; CDC_SIGKILL_DDL_KILLS=4 takes all four (bench/kill_rounds.py runs that).

Then, against the server: every Delta table's columns AND rows equal its `SELECT *`; the change
log holds each row change once and as many per (GTID, table, op) as `mariadb-binlog -vv` shows;
no Delta transaction (schema rewrite or rows, app id and batch) was committed twice; the last
progress row is the server's @@gtid_binlog_pos; nothing was quarantined.
"""
from __future__ import annotations

import collections
import os
import random
import time
from pathlib import Path

import pytest

from libs.tables.system_tables import QUARANTINE
from tests.delta_log import commit_actions
from tests.drawn import drawn_seed

from ..schema_history.helpers import delta_table, row_metadata, server_table, ship_snapshot
from .oracle import binlog_row_changes
from .replicator import CHANGE_LOG, IN_FLIGHT, PROGRESS, SCHEMA, Replicator, is_schema_rewrite

pytestmark = pytest.mark.integration

DB = "eo_ddl"
BATCH_CONF = f"trigger_seconds: 0.5\nmax_offsets_per_trigger: 8\ntables:\n  include: ['{DB}\\..*']\n"
DRAIN_CONF = f"trigger_seconds: 0.5\nmax_offsets_per_trigger: 100000\ntables:\n  include: ['{DB}\\..*']\n"
# Where each kill lands: (stage, `also`) for Replicator.wait_stage. Each needs a batch of this
# run with a schema rewrite: ten of the twelve DDL rewrite a target (in 6 or more batches).
# (TARGET, SCHEMA) would be (SCHEMA, None) again: a rewrite is its target's one write.
KILL_POINTS = [(SCHEMA, None), (CHANGE_LOG, SCHEMA), (PROGRESS, SCHEMA), (IN_FLIGHT, None)]
KILLS = int(os.environ.get("CDC_SIGKILL_DDL_KILLS") or 2)


def drawn_kills(rng: random.Random, kills: int = KILLS) -> list[tuple[str, str | None]]:
    """`kills` of KILL_POINTS (all of them from 4 on), drawn, in KILL_POINTS' order."""
    chosen = set(rng.sample(range(len(KILL_POINTS)), min(kills, len(KILL_POINTS))))
    return [point for i, point in enumerate(KILL_POINTS) if i in chosen]

SETUP = ("CREATE TABLE t (id INT PRIMARY KEY, a INT, b VARCHAR(10));"
         "CREATE TABLE u (id INT PRIMARY KEY, v INT);"
         "INSERT INTO t VALUES (1, 10, 'one'), (2, 20, 'two'), (3, 30, 'three');"
         "INSERT INTO u VALUES (1, 1), (2, 2)")
# Each DDL, then the DML that follows it (autocommit: one transaction each).
WORKLOAD = [
    (None, ["INSERT INTO t VALUES (4, 40, 'four')", "UPDATE t SET a = 11 WHERE id = 1",
            "INSERT INTO u VALUES (3, 30)"]),
    ("ALTER TABLE t ADD COLUMN c INT DEFAULT 7 AFTER id",
     ["INSERT INTO t (id, c, a, b) VALUES (5, 55, 50, 'five')", "UPDATE t SET c = 22 WHERE id = 2"]),
    ("ALTER TABLE t ADD z VARCHAR(4) DEFAULT 'zz' FIRST",
     ["UPDATE t SET z = 'y' WHERE id = 1", "INSERT INTO u VALUES (4, 40)"]),
    ("ALTER TABLE t DROP COLUMN a", ["UPDATE t SET b = 'THREE' WHERE id = 3", "DELETE FROM t WHERE id = 4"]),
    ("ALTER TABLE t RENAME COLUMN b TO bee, MODIFY c BIGINT",
     ["INSERT INTO t (id, c, bee) VALUES (6, 9000000000, 'six')", "UPDATE u SET v = 31 WHERE id = 3"]),
    ("TRUNCATE TABLE u",
     ["INSERT INTO u VALUES (1, 100), (3, 300)", "UPDATE t SET bee = 'SIX' WHERE id = 6"]),
    ("RENAME TABLE u TO u2", ["INSERT INTO u2 VALUES (4, 400)", "UPDATE t SET c = 1 WHERE id = 1"]),
    ("ALTER TABLE t ADD e DATE DEFAULT '2024-02-29' AFTER z",
     ["INSERT INTO t (id, bee) VALUES (7, 'seven')", "UPDATE t SET e = '2025-01-01' WHERE id = 2"]),
    ("CREATE TABLE n LIKE u2", ["INSERT INTO n VALUES (1, 1)", "INSERT INTO u2 VALUES (5, 500)"]),
    ("ALTER TABLE u2 ADD w VARCHAR(3) DEFAULT 'w'",
     ["UPDATE u2 SET w = 'x' WHERE id = 1", "INSERT INTO u2 (id, v) VALUES (6, 600)"]),
    ("ALTER TABLE t CHANGE bee b2 VARCHAR(20)",
     ["UPDATE t SET b2 = 'longer than ten' WHERE id = 7", "DELETE FROM t WHERE id = 5"]),
    ("ALTER TABLE t ADD f INT", ["UPDATE t SET f = 1 WHERE id = 1", "INSERT INTO n VALUES (2, 2)"]),
    ("ALTER TABLE u2 MODIFY v BIGINT",
     ["UPDATE u2 SET v = 5000000000 WHERE id = 5", "INSERT INTO t (id, f) VALUES (8, 8)"]),
]


def _workload_sql() -> str:
    return "SET SESSION binlog_row_image = MINIMAL;" + "".join(
        (f"{ddl};" if ddl else "") + "".join(f"{dml};" for dml in dml_after) for ddl, dml_after in WORKLOAD)


def _txn_commits(table_dir: Path) -> list[tuple[str, int]]:
    """(txnAppId, txnVersion) of every commit of a Delta table that carries one."""
    return [(a["txn"]["appId"], int(a["txn"]["version"]))
            for actions in commit_actions(table_dir) for a in actions if "txn" in a]


def test_sigkill_around_ddl_leaves_data_and_schema_equal_to_the_server(mariadb, kafka_broker, topic, tmp_path,
                                                                      request):
    seed = drawn_seed("CDC_SIGKILL_DDL_SEED")
    kills = drawn_kills(random.Random(seed))
    print(f"\nsigkill-ddl: seed {seed} (CDC_SIGKILL_DDL_SEED={seed} repeats the draw): kills at {kills}")
    mariadb.sql(f"DROP DATABASE IF EXISTS {DB}; CREATE DATABASE {DB}")
    mariadb.sql(SETUP, database=DB)
    batches, drain = tmp_path / "batches.yaml", tmp_path / "drain.yaml"
    batches.write_text(BATCH_CONF)
    drain.write_text(DRAIN_CONF)
    with row_metadata(mariadb, "NO_LOG"):
        ship_snapshot(mariadb, kafka_broker, topic, DB)
        start_file = mariadb.flush_binlogs()  # the workload's row changes only, for the oracle
        mariadb.sql(_workload_sql(), database=DB)
        end_file = mariadb.flush_binlogs()
        ship_snapshot(mariadb, kafka_broker, topic, DB)  # resumes: the binlog to its end
    names = [row[0] for row in mariadb.query("SHOW BINARY LOGS")]
    files = names[names.index(start_file):names.index(end_file)]

    delta = tmp_path / "delta"
    job = Replicator(tmp_path, ["--bootstrap", kafka_broker.bootstrap, "--topic", topic,
                                "--delta-root", str(delta), "--checkpoint", str(tmp_path / "ckpt")],
                     checkpoint=tmp_path / "ckpt", delta_root=delta)
    try:
        for kill, (stage, also) in enumerate(kills):
            started = time.monotonic()
            job.start(batches)
            job.wait_started()
            _planned, committed = job.batches()
            batch = job.wait_stage(after=committed, stage=stage, also=also, timeout=300)
            planned, committed = job.batches()
            job.kill()
            in_flight = planned if planned > committed else None
            print(f"sigkill-ddl: kill {kill + 1}/{len(kills)} at batch {batch} '{stage}'"
                  + (" of a schema rewrite" if also else "")
                  + f", {time.monotonic() - started:.1f}s after start; last committed batch {committed}, "
                  + ("none in flight" if in_flight is None else
                     f"in flight {in_flight}, "
                     f"its commits by this run [{', '.join(job.written_by_this_run(in_flight))}]"))
    finally:
        if job.proc is not None and job.proc.poll() is None:
            job.kill()
    job.start(drain, "--available-now")
    assert job.proc.wait(600) == 0, job.log_tail()

    spark = request.getfixturevalue("spark")  # only now: no idle JVM beside the killed ones
    # 1. columns and rows of every table equal the server's
    for table in ("t", "u2", "n"):
        assert delta_table(spark, f"{delta}/{DB}__{table}") == server_table(mariadb, f"{DB}.{table}"), table
    # the workload ran as written
    assert server_table(mariadb, f"{DB}.t")[0] == ["z", "e", "id", "c", "b2", "f"]
    # u's Delta table keeps the rows u had when the server renamed it (TRUNCATE, then two inserts).
    assert delta_table(spark, f"{delta}/{DB}__u") == (["id", "v"], [(1, 100), (3, 300)])

    # 2. the change log: each change once, as many as the server's binlog holds
    log = [r.asDict() for r in spark.read.format("delta").load(f"{delta}/_cdc_change_log").select(
        "lineage.source", "lineage.trx_id", "lineage.change_seq", "lineage.gtid", "database", "table",
        "op").collect()]
    identities = collections.Counter((r["source"], r["trx_id"], r["change_seq"]) for r in log)
    assert [i for i, n in identities.items() if n > 1] == []
    got = collections.Counter((r["gtid"], r["database"], r["table"], r["op"]) for r in log
                              if r["op"] in ("insert", "update", "delete"))
    binlog = binlog_row_changes([mariadb.binlog_path(f) for f in files])
    oracle = collections.Counter((c.gtid, c.database, c.table, c.op) for c in binlog)
    assert got == oracle, (f"change log minus binlog {list((got - oracle).items())[:5]}, "
                           f"binlog minus change log {list((oracle - got).items())[:5]}")

    # 3. no Delta transaction twice: each (app id, batch) of a schema rewrite or a row write once
    for table_dir in sorted(p for p in delta.iterdir() if (p / "_delta_log").is_dir()):
        txns = collections.Counter(_txn_commits(table_dir))
        assert [t for t, n in txns.items() if n > 1] == [], table_dir.name
    rewrites = sum(is_schema_rewrite(actions) for d in delta.iterdir() if (d / "_delta_log").is_dir()
                   for actions in commit_actions(d))
    assert rewrites >= len(kills)  # the kills had schema rewrites to land around

    # 4. progress at the server's last GTID; nothing quarantined
    progress = (spark.read.format("delta").load(f"{delta}/_cdc_progress")
                .select("source", "gtid", "batch_id").collect())
    latest = max(progress, key=lambda r: r["batch_id"])
    assert (latest["source"], latest["gtid"]) == (DB, mariadb.query("SELECT @@gtid_binlog_pos")[0][0])
    quarantine = delta / QUARANTINE
    if quarantine.is_dir():
        assert spark.read.format("delta").load(str(quarantine)).count() == 0
    print(f"sigkill-ddl: {len(binlog)} row changes and {sum(1 for d, _ in WORKLOAD if d)} DDL applied once "
          f"through {len(kills)} kills; {rewrites} schema rewrites")

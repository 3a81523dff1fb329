"""Onboarding as a user meets it: a MariaDB that already holds rows (PK, composite PK,
unique-only, keyless with duplicate rows, BLOB/TEXT) and a workload writing MINIMAL row images
while `cdc-ship --snapshot` reads it; then `cdc-replicate` with no target DDL at all (targets
from the source's SHOW CREATE TABLE). Every Delta table must equal the server's own SELECT.
The acceptance round does the same with more rows, and kills the shipper (SIGKILL) in the
middle of its snapshot and the job in the middle of applying it: the same equality, nothing
duplicated. In the suite it snapshots 100,000 rows (~1,000 chunk records, batches of 300, the
kills, the resumed snapshot); issue #16's million is the same test with CDC_ONBOARDING_ROWS=1000000
(bench/README.md "The onboarding acceptance round at a million rows"), a run of its own."""
from __future__ import annotations

import os
import random
import time
import uuid

import pytest
from confluent_kafka import Consumer, TopicPartition

from libs.config.job import JobConfig
from libs.tables.system_tables import QUARANTINE
from pipelines.replicate import build_query, make_applier
from pipelines.ship import main as ship_main
from libs.local.demo_database import TABLES, sizes
from tests.drawn import drawn_seed
from tests.integration.exactly_once.oracle import delta_rows, server_rows
from tests.integration.exactly_once.replicator import Replicator

from ..shipper.helpers import password_file, start_shipper
from .helpers import Workload, create_schema, start_workload, topic_records

pytestmark = pytest.mark.integration

SIZES = dict(n_pk=8000, n_cpk=5000, n_uk=3000, n_nokey=2000, n_blob=2000)  # 20,000 rows


def _ship_args(db, kafka_broker, topic, source, name):
    return ["--server", f"{db.host}:{db.port}", "--user", db.user, "--password-file", password_file(db),
            "--bootstrap", kafka_broker.bootstrap, "--topic", topic, "--source", source, "--snapshot",
            "--include", rf"{name}\..*", "--non-block", "--snapshot-chunk-rows", "1000", "--progress", "1"]


def _replicate_and_compare(db, spark, kafka_broker, topic, tmp_path, name):
    cfg = JobConfig(bootstrap=kafka_broker.bootstrap, topic=topic, delta_root=str(tmp_path / "delta"),
                    checkpoint=str(tmp_path / "ckpt"), available_now=True,
                    tables={"include": [rf"{name}\..*"]})
    query = build_query(spark, cfg, make_applier(cfg))  # no target DDL: targets from the source
    query.awaitTermination()
    assert query.exception() is None
    compared = 0
    for table in TABLES:
        columns, expected = server_rows(db, name, table)
        assert sum(expected.values()) > 100, f"{table}: too few rows to compare"
        assert delta_rows(spark, f"{cfg.delta_root}/{name}__{table}", columns) == expected, table
        compared += sum(expected.values())
    assert spark.read.format("delta").load(f"{cfg.delta_root}/{QUARANTINE}").count() == 0
    return compared


def test_snapshot_of_a_living_database_replicates_to_the_servers_tables(mariadb, kafka_broker, topic, spark,
                                                                        tmp_path):
    name = "onb_live"
    create_schema(mariadb, name, SIZES, ref=f"{name}_ref")
    recorder, stop, errors, thread = start_workload(mariadb, name, TABLES, seed=7)
    try:
        before = len(recorder.done)
        assert ship_main(_ship_args(mariadb, kafka_broker, topic, "onb1", name)) == 0
        during = len(recorder.done) - before
    finally:
        stop.set()
        thread.join(30)
    assert not errors, errors
    assert during > 0, "no transaction committed while the snapshot ran"
    assert ship_main(_ship_args(mariadb, kafka_broker, topic, "onb1", name)) == 0  # the binlog to its end
    compared = _replicate_and_compare(mariadb, spark, kafka_broker, topic, tmp_path, name)
    assert compared >= 20_000


ROWS = int(os.environ.get("CDC_ONBOARDING_ROWS", 100_000))
JOB_CONF = "trigger_seconds: 0.5\nmax_offsets_per_trigger: {records}\ntables:\n  include: ['{name}\\..*']\n"
KILLED_RUN_RECORDS = 300  # batches of 30,000 snapshot rows (300,000 at a million): the kill
# lands while the snapshot is being applied
DRAIN_RECORDS = 20000  # the batch in flight at the kill is replayed as planned, the rest drained


def _topic_size(bootstrap: str, topic: str) -> int:
    """Records in the topic (the high watermarks): cheap enough to poll while a snapshot runs."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"size-{uuid.uuid4().hex}"})
    try:
        partitions = consumer.list_topics(topic, timeout=10).topics[topic].partitions
        return sum(consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1]
                   for p in partitions)
    finally:
        consumer.close()


def test_a_big_snapshot_with_the_shipper_and_the_job_killed(mariadb, kafka_broker, topic, spark, tmp_path):
    """Issue #16's acceptance: ROWS rows over the five tables (a million for the issue), a
    workload session (>= 200 trx/s) writing MINIMAL images during the snapshot; the shipper
    SIGKILLed after a drawn number of records of its snapshot and restarted (a second run
    re-reads the unfinished tables), the job (a cdc-replicate process, small micro-batches)
    SIGKILLed at a drawn moment while it applies the snapshot and restarted from its
    checkpoint. Delta equals the server's SELECT."""
    seed = drawn_seed("CDC_ONBOARDING_SEED")
    rng = random.Random(seed)
    kill_after_records, job_kill_s = rng.randint(20, 600), rng.uniform(0.0, 20.0)
    print(f"CDC_ONBOARDING_SEED={seed}: shipper killed after {kill_after_records} records, "
          f"job {job_kill_s:.1f} s after its first snapshot batch committed")
    name, source = "onb_big", "onbbig"
    create_schema(mariadb, name, sizes(ROWS), ref=f"{name}_ref")
    load = Workload(mariadb, name, TABLES, seed=seed, sessions=1, pause_s=0.0)
    job = Replicator(tmp_path, ["--bootstrap", kafka_broker.bootstrap, "--topic", topic,
                                "--delta-root", str(tmp_path / "delta"),
                                "--checkpoint", str(tmp_path / "ckpt")],
                     checkpoint=tmp_path / "ckpt", delta_root=tmp_path / "delta")
    conf = tmp_path / "job.yaml"
    conf.write_text(JOB_CONF.format(name=name, records=KILLED_RUN_RECORDS))
    try:
        args = _ship_args(mariadb, kafka_broker, topic, source, name)
        # chunks of ROWS / 1,000 rows: ~1,000 records at any size, the shipper's kill lands among them
        args[args.index("--snapshot-chunk-rows") + 1] = str(max(ROWS // 1000, 1))
        base, started = _topic_size(kafka_broker.bootstrap, topic), time.monotonic()
        committed_before = load.committed()
        proc = start_shipper(*args)
        while _topic_size(kafka_broker.bootstrap, topic) - base < kill_after_records:
            assert proc.poll() is None, f"the shipper exited {proc.returncode} before the kill"
            time.sleep(0.01)
        proc.kill()
        proc.wait(10)
        assert ship_main(args) == 0  # resumes: a second run, then the binlog to its end
        load.stop()  # then stopped (the acceptance): the job has a known end to reach
        rate = (load.committed() - committed_before) / (time.monotonic() - started)
        print(f"workload during the snapshot: {load.committed() - committed_before:,} transactions, "
              f"{rate:,.0f}/s")
        job.start(conf)
        job.wait_started()
        first = job.wait_stage(-1, "target")
        job.watch(job_kill_s)
        job.kill()
        print(f"job killed in batch {job.batches()} (first target write in batch {first})")
    finally:
        load.stop()
        if job.proc is not None and job.proc.poll() is None:
            job.kill()
    assert not load.errors, load.errors
    assert ship_main(args) == 0  # the workload's last transactions
    _, snaps = topic_records(kafka_broker.bootstrap, topic, source)
    assert len({s.snapshot_id for _, s in snaps}) == 2, "the killed run and the one that resumed it"
    conf.write_text(JOB_CONF.format(name=name, records=DRAIN_RECORDS))
    job.start(conf, "--available-now")
    assert job.proc.wait(900) == 0, job.log_tail()
    compared = 0
    for table in TABLES:
        columns, expected = server_rows(mariadb, name, table)
        assert delta_rows(spark, f"{tmp_path}/delta/{name}__{table}", columns) == expected, table
        compared += sum(expected.values())
    assert compared >= ROWS
    assert spark.read.format("delta").load(f"{tmp_path}/delta/{QUARANTINE}").count() == 0

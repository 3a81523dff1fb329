"""Onboarding as a user meets it: a MariaDB that already holds rows (PK, composite PK,
unique-only, keyless with duplicate rows, BLOB/TEXT) and a workload writing MINIMAL row images
while `cdc-ship --snapshot` reads it; then `cdc-replicate` with no target DDL at all (targets
from the source's SHOW CREATE TABLE). Every Delta table must equal the server's own SELECT.
A second round kills the shipper (SIGKILL) in the middle of its snapshot, restarts it, and
requires the same equality with nothing duplicated."""
from __future__ import annotations

import time

import pytest

from libs.config import JobConfig
from libs.system_tables import QUARANTINE
from pipelines.replicate import build_query, make_applier
from pipelines.ship import main as ship_main
from tests.integration.exactly_once.oracle import delta_rows, server_rows

from ..shipper.helpers import password_file, start_shipper
from .helpers import create_schema, start_workload, topic_records

pytestmark = pytest.mark.integration

TABLES = ("t_blob", "t_cpk", "t_nokey", "t_pk", "t_uk")
SIZES = dict(n_pk=8000, n_cpk=5000, n_uk=3000, n_nokey=2000, n_blob=2000)  # 20,000 rows


def _ship_args(db, kafka_broker, topic, source, name):
    return ["--server", f"{db.host}:{db.port}", "--user", db.user, "--password-file", password_file(db),
            "--bootstrap", kafka_broker.bootstrap, "--topic", topic, "--source", source, "--snapshot",
            "--include", rf"{name}\..*", "--non-block", "--snapshot-chunk-rows", "1000", "--progress", "1"]


def _replicate_and_compare(db, spark, kafka_broker, topic, tmp_path, name):
    cfg = JobConfig(bootstrap=kafka_broker.bootstrap, topic=topic, delta_root=str(tmp_path / "delta"),
                    checkpoint=str(tmp_path / "ckpt"), available_now=True, tables={"include": [rf"{name}\..*"]})
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


def test_a_shipper_killed_mid_snapshot_resumes_and_nothing_is_duplicated(mariadb, kafka_broker, topic, spark,
                                                                         tmp_path):
    name = "onb_kill"
    create_schema(mariadb, name, SIZES, ref=f"{name}_ref")
    recorder, stop, errors, thread = start_workload(mariadb, name, TABLES, seed=7)
    try:
        args = _ship_args(mariadb, kafka_broker, topic, "onb2", name)
        args[args.index("--snapshot-chunk-rows") + 1] = "200"
        proc = start_shipper(*args)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:  # kill once a few chunks are in the topic
            _, snaps = topic_records(kafka_broker.bootstrap, topic, "onb2")
            if sum(s.kind == "rows" for _, s in snaps) >= 12:
                break
            time.sleep(0.05)
        proc.kill()
        proc.wait(10)
        _, snaps = topic_records(kafka_broker.bootstrap, topic, "onb2")
        assert not any(s.kind == "end" for _, s in snaps), "the run finished before the kill"
        assert ship_main(_ship_args(mariadb, kafka_broker, topic, "onb2", name)) == 0  # resumes
    finally:
        stop.set()
        thread.join(30)
    assert not errors, errors
    assert ship_main(_ship_args(mariadb, kafka_broker, topic, "onb2", name)) == 0
    _, snaps = topic_records(kafka_broker.bootstrap, topic, "onb2")
    assert len({s.snapshot_id for _, s in snaps}) == 2  # the killed run and the one that resumed it
    _replicate_and_compare(mariadb, spark, kafka_broker, topic, tmp_path, name)

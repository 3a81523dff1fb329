"""Failover, end to end: two real MariaDB servers in GTID replication (the replica with
log_slave_updates), a workload on the primary, cdc-ship following it into the real broker and
SIGKILLed mid-workload; the primary stopped, the replica promoted and written to; cdc-ship with
the same source id and --follow-gtid pointed at it; then the job into Delta. Every Delta table
must equal the new primary's (the server is the truth) and every transaction must be applied
exactly once (the change log, per GTID)."""
import collections
import threading
import time

import pytest

from libs.local.mariadb_server import MariaDBServer
from libs.shipper.kafka_sink import last_record
from libs.tables.system_tables import CHANGE_LOG, QUARANTINE

from ..schema_history.helpers import delta_table, job_config, replicate, server_table, ship_snapshot
from .helpers import start_shipper, stop_shipper, wait_shipped
from .test_ship_server import server_args

pytestmark = pytest.mark.integration

DB = "fo"


class Workload:
    """Transactions of two row changes in two tables (an INSERT into t, an UPDATE of u), each
    recorded with its GTID (@@last_gtid after COMMIT)."""

    def __init__(self):
        self.gtids: list[str] = []
        self.errors: list[Exception] = []
        self.next_id = 1000

    def run(self, db, count: int, stop: threading.Event | None = None) -> None:
        try:
            conn = db.connect()
            with conn.cursor() as cur:
                for _ in range(count):
                    if stop is not None and stop.is_set():
                        break
                    self.next_id += 1
                    cur.execute("BEGIN")
                    cur.execute(f"INSERT INTO {DB}.t (id, note) VALUES (%s, REPEAT('x', 200))",
                                (self.next_id,))
                    cur.execute(f"UPDATE {DB}.u SET total = total + %s WHERE k = %s",
                                (self.next_id, self.next_id % 3))
                    cur.execute("COMMIT")
                    cur.execute("SELECT @@last_gtid")
                    self.gtids.append(cur.fetchone()[0])
                    time.sleep(0.005)
            conn.close()
        except Exception as exc:  # noqa: BLE001 - surfaced by the test
            self.errors.append(exc)


@pytest.fixture
def primary_and_replica(tmp_path):
    primary = MariaDBServer.start(tmp_path / "primary", server_id=1)
    replica = MariaDBServer.start(tmp_path / "replica", server_id=2)
    try:
        replica.replicate_from(primary)
        yield primary, replica
    finally:
        replica.stop()
        primary.stop()


def test_a_promoted_replica_is_followed_by_gtid_and_every_transaction_lands_once(
        primary_and_replica, kafka_broker, topic, spark, tmp_path):
    primary, replica = primary_and_replica
    primary.sql(f"CREATE DATABASE {DB}; CREATE TABLE {DB}.t (id INT PRIMARY KEY, note TEXT);"
                f"CREATE TABLE {DB}.u (k INT PRIMARY KEY, total BIGINT);"
                f"INSERT INTO {DB}.t VALUES (1, 'one'); INSERT INTO {DB}.u VALUES (0, 0), (1, 0), (2, 0)")
    # the primary's files numbered past the replica's: without the epoch, the replica's
    # positions would sort before what the topic already holds
    for _ in range(3):
        primary.flush_binlogs()
    ship_snapshot(primary, kafka_broker, topic, DB)
    work = Workload()
    shipper = start_shipper(*server_args(primary, kafka_broker, topic, DB))
    writer = threading.Thread(target=work.run, args=(primary, 400))
    writer.start()
    try:
        while len(work.gtids) < 150 and writer.is_alive():
            time.sleep(0.05)
        shipper.kill()  # SIGKILL mid-workload: the topic may end inside a transaction
        shipper.wait(10)
    finally:
        writer.join(120)
    assert not work.errors, work.errors
    cut = last_record(kafka_broker.bootstrap, topic, DB)
    assert cut.origin.identity == "mariadb server_id=1 gtid_domain_id=0"
    replica.wait_caught_up(primary)
    primary.stop()  # the primary is gone: everything it wrote is on the replica
    replica.promote()
    follower = start_shipper(*server_args(replica, kafka_broker, topic, DB, "--follow-gtid"))
    try:
        work.run(replica, 150)
        assert not work.errors, work.errors
        wait_shipped(kafka_broker.bootstrap, topic, DB, *replica.master_status(), proc=follower,
                     epoch=1)
    finally:
        rc, output = stop_shipper(follower)
    assert rc == 0, output
    assert f"following mariadb server_id=2 gtid_domain_id=0 by GTID after {cut.origin.gtid_state}" in output
    moved = last_record(kafka_broker.bootstrap, topic, DB)
    assert moved.epoch == 1 and moved.origin.identity == "mariadb server_id=2 gtid_domain_id=0"

    cfg = job_config(kafka_broker, topic, tmp_path, DB)
    replicate(spark, cfg)
    root = cfg.delta_root
    for table in ("t", "u"):
        assert delta_table(spark, f"{root}/{DB}__{table}") == server_table(replica, f"{DB}.{table}")
    log = (spark.read.format("delta").load(f"{root}/{CHANGE_LOG}")
           .where("op IN ('insert', 'update', 'delete')"))
    per_gtid = collections.Counter(r["gtid"] for r in log.select("lineage.gtid").collect())
    assert len(work.gtids) == 550
    assert per_gtid == {gtid: 2 for gtid in work.gtids}  # each transaction once, both changes
    # the only thing quarantined, if anything: the transaction the SIGKILL cut, sent again whole
    reasons = [r["reason"] for r in spark.read.format("delta").load(f"{root}/{QUARANTINE}").collect()]
    assert all("moved to another server" in reason for reason in reasons), reasons

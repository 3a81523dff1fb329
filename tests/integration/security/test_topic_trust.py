"""Who may write the topic (issue #56 items 3-4; README "Who may write the topic"), with real parts:
a private MariaDB, the project's broker, `cdc-ship` and the job in this process.

The shipper ships the server with the topic secret; then two forged records are produced to the
topic by someone without it (the source's key, the genuine last record's headers, a plausible
binlog_pos further on in the same file: one without a tag, one tagged with another secret). The
shipper, run again, names each in one line and resumes after the genuine last record: the topic's
binlog events (the forged two left out) are the server's binlog bytes, no gap, no duplicate. The
job, with the secret in its configuration, quarantines both (kind kafka_record, their partition
and offset) and its table equals the server's SELECT."""
from __future__ import annotations

import secrets

import pytest
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition

from libs.config.job import JobConfig
from libs.contracts.topic import KafkaRecord
from libs.contracts.topic_tag import TopicKeys
from libs.local.mariadb_server import MariaDBServer
from libs.shipper.rebuild import rebuild
from libs.tables.system_tables import QUARANTINE
from pipelines.replicate import build_query, make_applier
from pipelines.ship import main as ship_main
from tests.integration.schema_history.helpers import delta_table, server_table
from tests.integration.shipper.helpers import password_file

pytestmark = pytest.mark.integration

DB = "trust"


def _secret_file(path, text: str):
    path.write_text(text + "\n")
    path.chmod(0o600)
    return str(path)


def _ship(db, bootstrap: str, topic: str, secret_file: str) -> int:
    return ship_main(["--server", f"{db.host}:{db.port}", "--user", db.user, "--password-file",
                      password_file(db), "--bootstrap", bootstrap, "--topic", topic, "--source", DB,
                      "--snapshot", "--include", rf"{DB}\..*", "--non-block",
                      "--topic-secret-file", secret_file])


def _messages(bootstrap: str, topic: str) -> list:
    """Every record of the topic's one partition: (offset, key, value, headers)."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "trust-test",
                         "enable.auto.commit": False, "enable.partition.eof": True})
    consumer.assign([TopicPartition(topic, 0, 0)])
    out = []
    try:
        while True:
            msg = consumer.poll(10)
            assert msg is not None, "timed out reading the topic"
            if msg.error():
                assert msg.error().code() == KafkaError._PARTITION_EOF, msg.error()
                return out
            out.append((msg.offset(), msg.key(), msg.value(), msg.headers()))
    finally:
        consumer.close()


def _forge(bootstrap: str, topic: str, genuine: tuple, pos: int) -> None:
    """Two records of someone who can produce to the topic but has no secret: the genuine last
    binlog event's key, value and headers, binlog_pos moved on to `pos`; no tag, then another
    secret's tag."""
    _, key, value, headers = genuine
    moved = [(n, str(pos).encode() if n == "binlog_pos" else v) for n, v in headers if n != "cdc_tag"]
    producer = Producer({"bootstrap.servers": bootstrap})
    producer.produce(topic, key=key, value=value, headers=moved, partition=0)
    other = TopicKeys((secrets.token_hex(32).encode(),))
    producer.produce(topic, key=key, value=value, headers=other.tagged(key, value, moved), partition=0)
    assert producer.flush(30) == 0


def _binlog_is_the_servers(db, messages, forged: set[int]) -> None:
    """The topic's binlog events (forged ones left out) rebuild the server's binlog from where
    shipping began to its end: rebuild() raises on a gap or a duplicate."""
    records = [KafkaRecord.from_kafka(k, v, h) for o, k, v, h in messages if o not in forged]
    files = rebuild(records)
    assert files, "no binlog event shipped"
    for name, shipped in files.items():
        on_disk = db.binlog_path(name).read_bytes()
        assert shipped.end_pos == len(on_disk), name  # shipped to the file's end
        assert b"".join(shipped.chunks) == on_disk[shipped.start_pos:], name


def test_a_forged_record_moves_no_resume_point_and_the_job_quarantines_it(kafka_broker, topic, spark,
                                                                          tmp_path, capsys):
    secret = _secret_file(tmp_path / "topic-secret", secrets.token_hex(32))
    bootstrap = kafka_broker.bootstrap
    with MariaDBServer.start(tmp_path / "db") as db:
        db.sql(f"CREATE DATABASE {DB}; CREATE TABLE {DB}.t (id INT PRIMARY KEY, v VARCHAR(40));"
               + "".join(f"INSERT INTO {DB}.t VALUES ({i}, 'row {i}');" for i in range(20)))
        assert _ship(db, bootstrap, topic, secret) == 0  # the snapshot
        db.sql(f"INSERT INTO {DB}.t VALUES (20, 'after the snapshot'); UPDATE {DB}.t SET v = 'x' "
               f"WHERE id = 1")
        assert _ship(db, bootstrap, topic, secret) == 0  # binlog events after it
        first = _messages(bootstrap, topic)
        genuine = next(m for m in reversed(first) if "record_kind" not in dict(m[3]))  # the last binlog event
        assert all(h[-1][0] == "cdc_tag" for *_, h in first)  # every record tagged, side records too
        last = KafkaRecord.from_kafka(*first[-1][1:])
        db.sql(";".join([f"UPDATE {DB}.t SET v = 'changed {i}' WHERE id = {i}" for i in range(0, 20, 3)]
                        + [f"DELETE FROM {DB}.t WHERE id > 16", f"INSERT INTO {DB}.t VALUES (50, 'new')"]))
        file, size = db.master_status()
        assert file == last.binlog_file and size > last.end_pos + 200
        _forge(bootstrap, topic, genuine, size - 100)  # a plausible position: the server has it
        capsys.readouterr()

        assert _ship(db, bootstrap, topic, secret) == 0
        said = capsys.readouterr().err.splitlines()
        forged = {len(first), len(first) + 1}
        named = [line for line in said if line.startswith("cdc-ship: ignoring record")]
        assert len(named) == 2, said  # newest first: another secret's tag, then no tag
        assert named[0].startswith(f"cdc-ship: ignoring record at partition 0 offset {len(first) + 1} of "
                                   f"source {DB}: its tag does not verify: cdc_tag 'v1:")
        assert "names key id" in named[0]
        assert named[1] == (f"cdc-ship: ignoring record at partition 0 offset {len(first)} of source {DB}: "
                            f"its tag does not verify (written by someone without the topic secret?)")
        assert f"cdc-ship {DB}: resuming at {last.binlog_file}:{last.end_pos} (topic {topic})" in said, said
        after = _messages(bootstrap, topic)
        assert len(after) > len(first) + 2  # the changes made meanwhile were shipped
        _binlog_is_the_servers(db, after, forged)

        cfg = JobConfig(bootstrap=bootstrap, topic=topic, delta_root=str(tmp_path / "delta"),
                        checkpoint=str(tmp_path / "ckpt"), available_now=True,
                        tables={"include": [rf"{DB}\..*"]}, topic_secret_file=secret)
        query = build_query(spark, cfg, make_applier(cfg))
        query.awaitTermination()
        assert query.exception() is None
        columns, rows = server_table(db, f"{DB}.t")
    assert delta_table(spark, f"{cfg.delta_root}/{DB}__t") == (columns, rows)
    quarantined = spark.read.format("delta").load(f"{cfg.delta_root}/{QUARANTINE}").collect()
    where = sorted((q["kind"], q["kafka_topic"], q["kafka_partition"], q["kafka_offset"])
                   for q in quarantined)
    assert where == [("kafka_record", topic, 0, o) for o in sorted(forged)]
    reasons = {q["kafka_offset"]: q["reason"] for q in quarantined}
    assert reasons[len(first)] == (f"topic {topic} partition 0 offset {len(first)}: no cdc_tag header as its "
                                   f"last header")
    assert "names key id" in reasons[len(first) + 1]
    assert all(bytes(q["raw"]) == genuine[2] for q in quarantined)  # the value's bytes kept

"""A poisoned frame in the topic (a Transaction_payload nested 1,000 deep, built with the codec's
encoders: decoded without a depth limit it raises RecursionError at every restart) -> the real
job (Kafka broker, decode pandas_udf, applyInPandasWithState assembler, rows stage, Delta): the
frame and its transaction land in the quarantine table with their positions, the transactions
after it are applied, and a restart from the same checkpoint neither loops on it nor repeats.
In fail mode the job stops on it with one line, every restart stops there again, and naming its
position in accept_bad_input_through lets the job go on to the same end as quarantine mode."""
import dataclasses
import subprocess
import sys

import pytest
from confluent_kafka import Producer
from pyspark.errors import StreamingQueryException

from libs.config.job import JobConfig
from libs.runtime.paths import REPO_ROOT
from libs.shipper.kafka_sink import ensure_topic
from libs.contracts.topic import KafkaRecord
from pipelines.replicate import build_query, make_sink
from libs.tables.system_tables import CHANGES, QUARANTINE
from pipelines.stages.sink import BadInputStopped
from tests.integration.short_jobs import short_job_env

pytestmark = pytest.mark.integration


def produce(bootstrap: str, topic: str, frames, source: str = "poisoned") -> None:
    ensure_topic(bootstrap, topic)
    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "acks": "all"})
    for f in frames:
        record = KafkaRecord(source, f.file, f.pos, f.raw)
        producer.produce(topic, value=record.value, key=record.key(), partition=0, headers=record.headers())
    assert producer.flush(30) == 0


def run_once(spark, cfg: JobConfig) -> tuple[list, list]:
    query = build_query(spark, cfg)
    query.awaitTermination()
    assert query.exception() is None
    return read_back(spark, cfg)


def read_back(spark, cfg: JobConfig) -> tuple[list, list]:
    changes = spark.read.format("delta").load(f"{cfg.delta_root}/{CHANGES}")
    quarantine = spark.read.format("delta").load(f"{cfg.delta_root}/{QUARANTINE}")
    return (sorted(r["trx_end_pos"] for r in changes.select("trx_end_pos").distinct().collect()),
            sorted((r["binlog_pos"], r["kind"], r["reason"]) for r in quarantine.collect()))


def test_poisoned_frame_is_quarantined_later_transactions_applied_restart_does_not_loop(
        spark, kafka_broker, topic, tmp_path, poisoned_stream):
    frames, poisoned_at = poisoned_stream
    produce(kafka_broker.bootstrap, topic, frames)
    cfg = JobConfig(bootstrap=kafka_broker.bootstrap, topic=topic, delta_root=str(tmp_path / "delta"),
                    checkpoint=str(tmp_path / "ckpt"), available_now=True, max_offsets_per_trigger=5)
    ends, quarantined = run_once(spark, cfg)  # several micro-batches: the poison is mid-stream

    gtid_at = poisoned_at - len(frames[7].raw)
    assert [(pos, kind) for pos, kind, _ in quarantined] == [(gtid_at, "bad_transaction"),
                                                             (poisoned_at, "limit")]
    reason = quarantined[1][2]
    assert "nested" in reason and f"pos {poisoned_at}" in reason and "source poisoned" in reason
    assert len(ends) == 5 and ends[0] < poisoned_at < ends[1]  # the transactions after it applied

    assert run_once(spark, cfg) == (ends, quarantined)  # restarted: no loop, nothing twice


def run_until_stopped(spark, cfg: JobConfig) -> BadInputStopped:
    sink = make_sink(cfg)
    query = build_query(spark, cfg, sink=sink)
    with pytest.raises(StreamingQueryException):
        query.awaitTermination()
    assert isinstance(sink.stopped, BadInputStopped)
    return sink.stopped


def test_fail_mode_stops_on_the_poisoned_frame_until_its_position_is_accepted(
        spark, kafka_broker, topic, tmp_path, poisoned_stream):
    frames, poisoned_at = poisoned_stream
    produce(kafka_broker.bootstrap, topic, frames)
    cfg = JobConfig(bootstrap=kafka_broker.bootstrap, topic=topic, delta_root=str(tmp_path / "delta"),
                    checkpoint=str(tmp_path / "ckpt"), available_now=True, max_offsets_per_trigger=7,
                    bad_input_policy="fail")  # batch 0: the first transaction; batch 1: the poison
    file = frames[0].file

    stop = run_until_stopped(spark, cfg)
    line = str(stop)
    assert "\n" not in line and f"source poisoned, {file}:{poisoned_at}, limit:" in line
    assert f"accept_bad_input_through: {{poisoned: '{file}:{poisoned_at}'}}" in line
    ends, quarantined = read_back(spark, cfg)
    assert [(pos, kind) for pos, kind, _ in quarantined] == [
        (poisoned_at - len(frames[7].raw), "bad_transaction"), (poisoned_at, "limit")]  # kept before stopping
    assert len(ends) == 1 and ends[0] < poisoned_at  # batch 0 applied, nothing of the stopped one

    assert str(run_until_stopped(spark, cfg)) == line  # a restart stops at the same place
    assert read_back(spark, cfg) == (ends, quarantined)  # ... and writes nothing twice

    accepted = dataclasses.replace(cfg, accept_bad_input_through={"poisoned": f"{file}:{poisoned_at}"})
    ends, again = run_once(spark, accepted)
    assert again == quarantined and len(ends) == 5 and ends[0] < poisoned_at < ends[1]


def test_the_command_line_reports_a_stop_as_one_line_without_a_trace(
        kafka_broker, topic, tmp_path, poisoned_stream):
    frames, poisoned_at = poisoned_stream
    produce(kafka_broker.bootstrap, topic, frames)
    conf = tmp_path / "job.yaml"
    conf.write_text("bad_input_policy: fail\nmax_offsets_per_trigger: 7\ntables: {from_source: false}\n")
    run = subprocess.run(
        [sys.executable, "-m", "pipelines.replicate", "--conf", str(conf),
         "--bootstrap", kafka_broker.bootstrap,
         "--topic", topic, "--delta-root", str(tmp_path / "delta"), "--checkpoint", str(tmp_path / "ckpt"),
         "--available-now"], cwd=REPO_ROOT, capture_output=True, text=True, timeout=300, env=short_job_env())
    assert run.returncode == 1, run.stderr[-3000:]
    lines = run.stderr.strip().splitlines()
    assert lines[-1].startswith("cdc-replicate: stopped on bad input (bad_input_policy: fail): "
                                "source poisoned, ")
    assert f":{poisoned_at}, limit:" in lines[-1]
    assert not [line for line in lines if "Traceback" in line or line.startswith("\tat ")], run.stderr[-3000:]

"""A poisoned frame in the topic (a Transaction_payload nested 1,000 deep, built with the codec's
encoders: decoded without a depth limit it raises RecursionError at every restart) -> the real
job (Kafka broker, decode pandas_udf, applyInPandasWithState assembler, rows stage, Delta): the
frame and its transaction land in the quarantine table with their positions, the transactions
after it are applied, and a restart from the same checkpoint neither loops on it nor repeats."""
import pytest
from confluent_kafka import Producer

from libs.config import JobConfig
from libs.shipper.kafka_sink import ensure_topic
from libs.shipper.record import KafkaRecord
from pipelines.replicate import build_query
from pipelines.replicate_batch import CHANGES_TABLE, QUARANTINE_TABLE
from tests.unit.stream.test_hostile_frames import poisoned_stream  # noqa: F401 (fixture)

pytestmark = pytest.mark.integration


def produce(bootstrap: str, topic: str, frames) -> None:
    ensure_topic(bootstrap, topic)
    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "acks": "all"})
    for f in frames:
        record = KafkaRecord("poisoned", f.file, f.pos, f.raw)
        producer.produce(topic, value=record.value, key=record.key(), partition=0, headers=record.headers())
    assert producer.flush(30) == 0


def run_once(spark, cfg: JobConfig) -> tuple[list, list]:
    query = build_query(spark, cfg)
    query.awaitTermination()
    assert query.exception() is None
    changes = spark.read.format("delta").load(f"{cfg.delta_root}/{CHANGES_TABLE}")
    quarantine = spark.read.format("delta").load(f"{cfg.delta_root}/{QUARANTINE_TABLE}")
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
    assert [(pos, kind) for pos, kind, _ in quarantined] == [(gtid_at, "bad_transaction"), (poisoned_at, "limit")]
    reason = quarantined[1][2]
    assert "nested" in reason and f"pos {poisoned_at}" in reason and "source poisoned" in reason
    assert len(ends) == 5 and ends[0] < poisoned_at < ends[1]  # the transactions after it applied

    assert run_once(spark, cfg) == (ends, quarantined)  # restarted: no loop, nothing twice

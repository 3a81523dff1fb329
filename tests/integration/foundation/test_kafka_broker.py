"""The project's own broker: real produce/consume, idempotent start, clear port error, clean stop."""
import socket

import pytest
from confluent_kafka import Consumer, Producer

from libs.local.kafka_broker import BrokerConfig, BrokerError, start, status, stop
from libs.runtime.paths import KAFKA_JARS_DIR

pytestmark = pytest.mark.integration


def test_produce_then_consume_round_trip(kafka_broker, topic):
    producer = Producer({"bootstrap.servers": kafka_broker.bootstrap, "enable.idempotence": True})
    sent = [(b"src", bytes([i]) * (i + 1)) for i in range(20)]
    for key, value in sent:
        producer.produce(topic, key=key, value=value, headers=[("binlog_pos", str(len(value)).encode())])
    assert producer.flush(30) == 0
    consumer = Consumer({"bootstrap.servers": kafka_broker.bootstrap, "group.id": topic,
                         "auto.offset.reset": "earliest"})
    consumer.subscribe([topic])
    got = []
    while len(got) < len(sent):
        msg = consumer.poll(10)
        assert msg is not None, f"only {len(got)} of {len(sent)} records came back"
        assert msg.error() is None
        got.append((msg.key(), msg.value()))
        assert dict(msg.headers())["binlog_pos"] == str(len(msg.value())).encode()
    consumer.close()
    assert got == sent


def test_start_is_idempotent_and_status_reports_live_broker(kafka_broker):
    again = start(kafka_broker)
    assert again["already_running"] is True
    assert status(kafka_broker)["running"] is True


def test_port_taken_gives_clear_error(tmp_path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        cfg = BrokerConfig(jars_dir=KAFKA_JARS_DIR, data_dir=tmp_path, port=port)
        with pytest.raises(BrokerError, match=f"port {port}"):
            start(cfg)


def test_stop_leaves_no_process(tmp_path):
    from libs.local.kafka_broker import free_port_pair
    import os

    cfg = BrokerConfig(jars_dir=KAFKA_JARS_DIR, data_dir=tmp_path, port=free_port_pair())
    pid = start(cfg)["pid"]
    assert stop(cfg) is True
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    assert status(cfg)["running"] is False

"""A quiet source's shipper outlives the broker's idle-connection reaper (libs/shipper/kafka_sink.py
KafkaSink._on_error).

Kafka closes a client connection idle for connections.max.idle.ms (10 min by default); librdkafka
then reports _ALL_BROKERS_DOWN ("1/1 brokers are down") to the error callback and reconnects by
itself for the next request. cdc-ship used to take that report as fatal, so a source quiet for
10 minutes stopped its shipper. Here a broker of our own reaps after 2 s.
"""
import time

import pytest
from confluent_kafka import KafkaError

from libs.kafka_broker import BrokerConfig, free_port_pair, start, stop
from libs.paths import KAFKA_JARS_DIR
from libs.shipper.kafka_sink import KafkaSink
from libs.shipper.rebuild import read_records
from libs.shipper.record import KafkaRecord

pytestmark = pytest.mark.integration

IDLE_REAP_MS = 2000
SOURCE = "quiet"


class RecordingSink(KafkaSink):
    """A KafkaSink that also keeps every error librdkafka reported (error_cb)."""

    def __init__(self, *args, **kwargs):
        self.reported: list[KafkaError] = []
        super().__init__(*args, **kwargs)

    def _on_error(self, err) -> None:
        self.reported.append(err)
        super()._on_error(err)


@pytest.fixture
def reaping_broker(tmp_path):
    cfg = BrokerConfig(jars_dir=KAFKA_JARS_DIR, data_dir=tmp_path / "kafka", port=free_port_pair(),
                       heap="256m", properties=(("connections.max.idle.ms", str(IDLE_REAP_MS)),))
    start(cfg)
    yield cfg
    stop(cfg)


def _record(pos: int) -> KafkaRecord:
    return KafkaRecord(SOURCE, "mdb-bin.000001", pos, bytes(19) + b"event at %d" % pos)


def test_an_idle_sink_survives_the_reaped_connection_and_delivers_later(reaping_broker, topic):
    sink = RecordingSink(reaping_broker.bootstrap, topic, SOURCE)
    sink.send(_record(4))
    sink.flush()
    deadline = time.monotonic() + 20 * IDLE_REAP_MS / 1000
    while time.monotonic() < deadline and not any(
            e.code() == KafkaError._ALL_BROKERS_DOWN for e in sink.reported):
        time.sleep(0.2)
        sink.poll()  # serves error_cb; raised ShipError here before the fix
    # the situation under test did happen: the broker reaped the idle connection
    assert any(e.code() == KafkaError._ALL_BROKERS_DOWN for e in sink.reported), sink.reported
    sink.poll()
    sink.send(_record(100))
    sink.flush()
    assert sink.delivered == 2
    assert [(r.binlog_pos, r.value) for r in read_records(reaping_broker.bootstrap, topic, SOURCE)] == [
        (4, _record(4).value), (100, _record(100).value)]

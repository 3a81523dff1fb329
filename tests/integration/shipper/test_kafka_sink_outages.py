"""The shipper's Kafka sink (libs/shipper/kafka_sink.py) through broker outages, on brokers of
its own:
  * a quiet source's sink outlives the broker's idle-connection reaper. Kafka closes a client
    connection idle for connections.max.idle.ms (10 min by default; 2 s here); librdkafka then
    reports _ALL_BROKERS_DOWN ("1/1 brokers are down") and reconnects by itself for the next
    request. cdc-ship used to take that report as fatal: a source quiet for 10 minutes stopped it.
  * a broker down for good fails the sink after its delivery timeout, naming the record's
    position (it said "file ? pos ?": a failed delivery report carries no headers).
"""
import time

import pytest
from confluent_kafka import KafkaError

from libs.local.kafka_broker import BrokerConfig, free_port_pair, start, stop
from libs.runtime.paths import KAFKA_JARS_DIR
from libs.source.errors import ShipError
from libs.shipper.kafka_sink import KafkaSink
from libs.shipper.rebuild import read_records
from libs.contracts.topic import KafkaRecord

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


def _broker(tmp_path, *properties: tuple[str, str]) -> BrokerConfig:
    return BrokerConfig(jars_dir=KAFKA_JARS_DIR, data_dir=tmp_path / "kafka", port=free_port_pair(),
                        heap="256m", properties=properties)


@pytest.fixture
def reaping_broker(tmp_path):
    cfg = _broker(tmp_path, ("connections.max.idle.ms", str(IDLE_REAP_MS)))
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


def test_a_broker_down_for_good_fails_the_sink_naming_the_position(tmp_path, topic):
    broker = _broker(tmp_path)
    start(broker)
    try:
        sink = KafkaSink(broker.bootstrap, topic, SOURCE, delivery_timeout_s=3.0)
        sink.send(_record(4))
        sink.flush()
    finally:
        stop(broker)
    sink.send(_record(100))  # queued: no broker will take it
    deadline = time.monotonic() + 30
    with pytest.raises(ShipError, match=r"delivery failed for source quiet file mdb-bin\.000001 pos 100: .*"
                                        r"timed out"):
        while time.monotonic() < deadline:
            time.sleep(0.2)
            sink.poll()
    assert sink.delivered == 1

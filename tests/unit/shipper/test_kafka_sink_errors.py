"""KafkaSink's error policy (libs/shipper/kafka_sink.py): librdkafka's fatal errors stop the
shipper; its reports of states it recovers from by itself do not (the real reaped-connection case:
tests/integration/shipper/test_kafka_sink_outages.py)."""
import pytest
from confluent_kafka import KafkaError

from libs.shipper.errors import ShipError
from libs.shipper.kafka_sink import KafkaSink


@pytest.fixture
def sink():
    # partitions given: no broker is asked for the topic; nothing is produced
    return KafkaSink("127.0.0.1:1", "t", "src", partitions=1)


@pytest.mark.parametrize("code", [KafkaError._ALL_BROKERS_DOWN, KafkaError._TRANSPORT, KafkaError._RESOLVE])
def test_recoverable_reports_do_not_stop_the_shipper(sink, code):
    sink._on_error(KafkaError(code, "reported by librdkafka"))
    sink.check()  # does not raise


def test_a_fatal_error_stops_the_shipper_naming_the_topic(sink):
    sink._on_error(KafkaError(KafkaError._FENCED, "producer fenced", fatal=True))
    with pytest.raises(ShipError, match=r"producer fenced.*topic t"):
        sink.check()

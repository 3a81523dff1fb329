"""KafkaSink's error policy (libs/shipper/kafka_sink.py): librdkafka's fatal errors stop the
shipper; its reports of states it recovers from by itself do not (the real reaped-connection case:
tests/integration/shipper/test_kafka_sink_outages.py). The resume read asks a partition whose
leader is still being elected again (watermarks)."""
import pytest
from confluent_kafka import KafkaError, KafkaException, TopicPartition

from libs.source.errors import ShipError
from libs.shipper.kafka_sink import LEADER_PENDING, KafkaSink, watermarks


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


class _Watermarks:
    """A consumer whose watermark query fails with `errors` first (a leader being elected)."""

    def __init__(self, *errors):
        self.errors, self.asked = list(errors), 0

    def get_watermark_offsets(self, partition, timeout):
        self.asked += 1
        if self.errors:
            raise KafkaException(KafkaError(self.errors.pop(0)))
        return 0, 7


@pytest.mark.parametrize("code", sorted(LEADER_PENDING))
def test_a_partition_whose_leader_is_pending_is_asked_again(code):
    consumer = _Watermarks(code, code)
    assert watermarks(consumer, TopicPartition("t", 0), timeout=5) == (0, 7)
    assert consumer.asked == 3


def test_other_errors_and_a_leader_still_pending_at_the_deadline_raise():
    with pytest.raises(KafkaException, match="TIMED_OUT"):
        watermarks(_Watermarks(KafkaError._TIMED_OUT), TopicPartition("t", 0), timeout=5)
    pending = _Watermarks(*[KafkaError.NOT_LEADER_FOR_PARTITION] * 100)
    with pytest.raises(KafkaException, match="NOT_LEADER"):
        watermarks(pending, TopicPartition("t", 0), timeout=0.5)
    assert 1 < pending.asked < 100

"""cdc-ship's first contact with Kafka (libs/shipper/kafka_sink.py ensure_topic): a refused login
or TLS handshake, which librdkafka retries forever, is one line at once; a broker that cannot be
reached (or closes every connection: another security protocol) is one line at the timeout. The
real broker's cases: tests/integration/security/test_kafka_sasl_ssl.py."""
import time

import pytest
from confluent_kafka import KafkaError, KafkaException

from libs.settings.kafka_security import PLAINTEXT_AUTH
from libs.shipper.kafka_sink import _ConnectErrors, _first_metadata
from libs.source.errors import ShipError

AUTH = "sasl_ssl://h:1/bootstrap: SASL authentication error: Authentication failed (after 3ms)"
ALERT = ("sasl_ssl://h:1/bootstrap: Receive failed: error:0A000412:SSL routines::sslv3 alert bad "
         "certificate: SSL alert number 42")
REFUSED = "Connect to ipv4#127.0.0.1:1 failed: Connection refused"
DOWN = KafkaError(KafkaError._ALL_BROKERS_DOWN, "1/1 brokers are down")


class _Admin:
    """list_topics fails as a broker that refuses us does; poll(0) reports `reports` to error_cb."""

    def __init__(self, errors: _ConnectErrors, *reports: KafkaError):
        self.errors, self.reports, self.asked = errors, list(reports), 0

    def list_topics(self, topic, timeout):
        self.asked += 1
        raise KafkaException(KafkaError(KafkaError._TRANSPORT, "Failed to get metadata"))

    def poll(self, timeout):
        while self.reports:
            self.errors(self.reports.pop(0))


@pytest.mark.parametrize("report", [KafkaError(KafkaError._AUTHENTICATION, AUTH),
                                    KafkaError(KafkaError._SSL, "SSL handshake failed: verify failed"),
                                    KafkaError(KafkaError._TRANSPORT, ALERT)])
def test_a_refused_login_or_handshake_stops_at_once_with_librdkafkas_reason(report):
    errors = _ConnectErrors()
    admin = _Admin(errors, DOWN, report)
    started = time.monotonic()
    with pytest.raises(ShipError) as err:
        _first_metadata(admin, errors, "h:1", "t", 30.0, PLAINTEXT_AUTH)
    assert time.monotonic() - started < 5 and admin.asked == 1
    assert str(err.value) == f"cannot connect to Kafka at h:1 (PLAINTEXT): {report.str()}"


def test_a_broker_not_answering_is_one_line_at_the_timeout():
    errors = _ConnectErrors()
    admin = _Admin(errors, DOWN, KafkaError(KafkaError._TRANSPORT, REFUSED))
    with pytest.raises(ShipError) as err:
        _first_metadata(admin, errors, "h:1", "t", 0.3, PLAINTEXT_AUTH)
    assert str(err.value).startswith(f"cannot reach Kafka at h:1 (PLAINTEXT) in 0s: {REFUSED} (the broker "
                                      f"is down, or the listener speaks another security protocol")
    assert "\n" not in str(err.value) and admin.asked > 1

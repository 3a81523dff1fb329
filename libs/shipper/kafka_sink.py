"""Kafka side of the shipper: an idempotent producer writing one source to one partition, and
"what is the last record of this source" for resume (read from Kafka, never a local file).

Partition: chosen explicitly as crc32(source) % partitions (librdkafka's `consistent`
partitioner), so the producer and the resume reader agree without trusting a default, and one
source's events stay in one ordered partition. Idempotence + acks=all: no duplicate or
reordered record inside one producer session, even when librdkafka retries.

Every client here connects as `auth` says (libs/settings/kafka_security.py: TLS, SASL; README
"Security"); the first contact, ensure_topic, turns a refused login or TLS handshake into one
plain line at once, and a broker it cannot reach into one line at its timeout.
"""
from __future__ import annotations

import time
import zlib

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from libs.source.errors import ShipError
from libs.contracts.topic import KafkaRecord
from libs.contracts.topic_tag import TopicKeys
from libs.settings.kafka_security import PLAINTEXT_AUTH, KafkaAuth

# The largest record sent by default: the project's broker accepts 64 MB (libs/local/kafka_broker.py
# message.max.bytes); cdc-ship --max-event-bytes raises it with the broker's (README "Rows too large
# for the topic").
MAX_EVENT_BYTES = 64 * 1024 * 1024


def partition_for(source: str, partitions: int) -> int:
    return zlib.crc32(source.encode("utf-8")) % partitions


def client_conf(bootstrap: str, auth: KafkaAuth = PLAINTEXT_AUTH) -> dict:
    """A client's connection: the bootstrap servers and its security settings (librdkafka's names)."""
    return {"bootstrap.servers": bootstrap, **auth.librdkafka()}


# librdkafka's reports of a connection that cannot succeed as configured, retried by it forever:
# a refused SASL login, a failed TLS handshake (the broker's certificate not trusted, a bad key).
_FINAL_CONNECT_ERRORS = frozenset({KafkaError._AUTHENTICATION, KafkaError._SSL})


class _ConnectErrors:
    """error_cb of the first contact: the first final error, and the last other one."""

    def __init__(self) -> None:
        self.final: str | None = None
        self.last: str | None = None

    def __call__(self, err) -> None:
        # a TLS alert from the broker (our certificate refused or missing) comes as a transport error
        if err.code() in _FINAL_CONNECT_ERRORS or "SSL alert number" in err.str():
            self.final = self.final or err.str()
        elif err.code() != KafkaError._ALL_BROKERS_DOWN:
            self.last = err.str()


def _first_metadata(admin, errors: _ConnectErrors, bootstrap: str, topic: str, timeout: float,
                    auth: KafkaAuth):
    """The topic's metadata, asked until `timeout`; a final connection error is one ShipError at once."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return admin.list_topics(topic=topic, timeout=min(1.0, max(0.1, deadline - time.monotonic())))
        except KafkaException as exc:
            admin.poll(0)  # serves error_cb
            if errors.final is not None:
                raise ShipError(f"cannot connect to Kafka at {bootstrap} ({auth.describe()}): "
                                f"{errors.final}") from None
            if time.monotonic() >= deadline:
                raise ShipError(f"cannot reach Kafka at {bootstrap} ({auth.describe()}) in {timeout:.0f}s: "
                                f"{errors.last or exc.args[0].str()} (the broker is down, or the listener "
                                f"speaks another security protocol: it closes every connection)") from None


def ensure_topic(bootstrap: str, topic: str, *, timeout: float = 30.0,
                 max_event_bytes: int | None = None, auth: KafkaAuth = PLAINTEXT_AUTH) -> int:
    """Create `topic` with 1 partition when missing (max.message.bytes = max_event_bytes, default
    MAX_EVENT_BYTES); returns its partition count."""
    errors = _ConnectErrors()
    # its errors are reported through error_cb (one line of ours), not printed by librdkafka
    admin = AdminClient({**client_conf(bootstrap, auth), "error_cb": errors, **SILENT_CLIENT})
    md = _first_metadata(admin, errors, bootstrap, topic, timeout, auth)
    t = md.topics.get(topic)
    if t is not None and t.error is None and t.partitions:
        return len(t.partitions)
    futures = admin.create_topics([NewTopic(
        topic, num_partitions=1, replication_factor=1,
        config={"max.message.bytes": str(max_event_bytes or MAX_EVENT_BYTES)})])
    try:
        futures[topic].result(timeout)
    except KafkaException as exc:
        if exc.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:
            raise ShipError(f"cannot create topic {topic} on {bootstrap}: {exc}") from exc
    # metadata can lag the creation for a moment: wait until the partitions are visible
    deadline = time.monotonic() + timeout
    while True:
        t = admin.list_topics(topic=topic, timeout=timeout).topics.get(topic)
        if t is not None and t.error is None and t.partitions:
            return len(t.partitions)
        if time.monotonic() > deadline:
            raise ShipError(f"topic {topic} on {bootstrap} has no partitions after {timeout:.0f}s"
                            + (f": {t.error}" if t is not None and t.error else ""))
        time.sleep(0.1)


# How long a record may wait for a reachable broker (retried by librdkafka meanwhile) before its
# delivery fails and the shipper stops, naming its position: librdkafka's default, made explicit.
DELIVERY_TIMEOUT_S = 300.0


# librdkafka prints its WARNING lines to stderr as raw `%4|...|` text, e.g. "Failed to acquire
# idempotence PID ... Coordinator load in progress: retrying" on a broker just started: states it
# recovers from by itself. Errors still print, and what stops the shipper reaches it through
# error_cb / the delivery reports as one plain line (issue #20 item 6: quiet output).
QUIET_CLIENT = {"log_level": 3}  # syslog levels: 3 = errors only
# A reader whose every failure comes back to it as an error (an exception, a message's error()) and
# is reported as one line: librdkafka prints nothing. A resume reader's close could print "SASL
# authentication error: ... (in state DOWN)" of its group coordinator's connection, cut mid-login.
SILENT_CLIENT = {"log_level": 0}


class KafkaSink:
    """Produces KafkaRecords in order; the first delivery error is fatal (raised by check())."""

    keys: TopicKeys | None = None  # the topic secrets (__init__'s note); none: records sent untagged

    def __init__(self, bootstrap: str, topic: str, source: str, *, partitions: int | None = None,
                 delivery_timeout_s: float = DELIVERY_TIMEOUT_S, max_event_bytes: int | None = None,
                 auth: KafkaAuth = PLAINTEXT_AUTH):
        self.bootstrap, self.topic, self.source, self.auth = bootstrap, topic, source, auth
        # The topic secrets (libs/contracts/topic_tag.py), set by the shipper when it has one: every
        # record sent gets its cdc_tag, and its resume reads trust only records whose tag verifies.
        self.keys = None
        # Offsets of records its resume reads named as not trusted: each is named once per run
        # (libs/shipper/resume_reader.py).
        self.named_untrusted: set[int] = set()
        self.max_event_bytes = max_event_bytes or MAX_EVENT_BYTES  # read now: a test lowers the constant
        parts = partitions or ensure_topic(bootstrap, topic, max_event_bytes=self.max_event_bytes, auth=auth)
        self.partition = partition_for(source, parts)
        self.key = source.encode("utf-8")
        self._error: str | None = None
        self.delivered = 0
        self._producer = Producer({
            **client_conf(bootstrap, auth),
            "enable.idempotence": True,
            "acks": "all",
            "linger.ms": 10,
            "message.max.bytes": self.max_event_bytes + 1024 * 1024,  # value + headers and framing
            "queue.buffering.max.kbytes": 512 * 1024,
            "message.timeout.ms": int(delivery_timeout_s * 1000),
            "error_cb": self._on_error,
            **QUIET_CLIENT,
        })

    def _on_error(self, err) -> None:
        """Only a fatal error stops the shipper. Others, _ALL_BROKERS_DOWN included, are
        librdkafka's news of a state it recovers from by itself: the broker reaps a connection
        idle for connections.max.idle.ms (10 min by default), so a quiet source's producer
        sees "1/1 brokers are down" and its next record is delivered all the same. A broker down
        for good fails the queued records after delivery_timeout_s (_on_delivery: the error
        names the first one's position). tests/integration/shipper/test_kafka_sink_outages.py."""
        if err.fatal():
            self._error = self._error or f"Kafka producer error: {err}"

    def _on_delivery(self, record: KafkaRecord, err) -> None:
        if err is not None:
            if self._error is None:
                # from the record itself: a failed delivery's message has no headers left
                self._error = (f"Kafka delivery failed for source {self.source} file "
                               f"{record.binlog_file} pos {record.binlog_pos}: {err}")
        else:
            self.delivered += 1

    def check(self) -> None:
        if self._error is not None:
            raise ShipError(f"{self._error} (topic {self.topic}); stopping, nothing after it is "
                            f"shipped")

    def send(self, record: KafkaRecord) -> None:
        if len(record.value) > self.max_event_bytes:
            raise ShipError(f"event of {len(record.value)} bytes exceeds {self.max_event_bytes} (cdc-ship "
                            f"--max-event-bytes, with the broker's message.max.bytes)",
                            source=self.source, file=record.binlog_file, pos=record.binlog_pos)
        headers = record.headers()
        if self.keys is not None:
            headers = self.keys.tagged(self.key, record.value, headers)
        while True:
            try:
                self._producer.produce(self.topic, value=record.value, key=self.key,
                                       partition=self.partition, headers=headers,
                                       on_delivery=lambda err, _msg: self._on_delivery(record, err))
                break
            except BufferError:  # local queue full: serve callbacks, then retry
                self._producer.poll(0.1)
                self.check()
        self._producer.poll(0)
        self.check()

    def poll(self) -> None:
        self._producer.poll(0)
        self.check()

    def flush(self, timeout: float = 60.0) -> None:
        left = self._producer.flush(timeout)
        self.check()
        if left:
            raise ShipError(f"{left} record(s) still undelivered after {timeout:.0f}s "
                            f"(topic {self.topic})", source=self.source)


def last_record(bootstrap: str, topic: str, source: str, *, timeout: float = 30.0,
                auth: KafkaAuth = PLAINTEXT_AUTH) -> KafkaRecord | None:
    """The newest record of `source` in `topic` (None when it has none): read backwards from
    the end of its partition in growing windows, so other sources sharing it are skipped. Trusts
    it, whoever wrote it: cdc-ship resumes from libs/shipper/resume_reader.py's trusted one."""
    partitions = ensure_topic(bootstrap, topic, timeout=timeout, auth=auth)
    partition = partition_for(source, partitions)
    key = source.encode("utf-8")
    consumer = Consumer({**client_conf(bootstrap, auth), "group.id": f"cdc-ship-resume-{source}",
                         "enable.auto.commit": False, "enable.partition.eof": True,
                         "auto.offset.reset": "earliest", **SILENT_CLIENT})
    try:
        low, high = watermarks(consumer, TopicPartition(topic, partition), timeout)
        window = 16
        end = high
        while end > low:
            start = max(low, end - window)
            found = _last_with_key(consumer, topic, partition, start, end, key, timeout)
            if found is not None:
                return KafkaRecord.from_kafka(*found)
            end, window = start, window * 4
        return None
    except KafkaException as exc:
        raise ShipError(f"cannot read the last record of topic {topic}: {exc}",
                        source=source) from exc
    finally:
        consumer.close()


# Errors of a partition whose leader is being elected: a topic created a moment ago (by this
# shipper's ensure_topic, or another process's), a broker just started. Seen from a benchmark's
# wait right after cdc-ship created its topic: "Broker: Not leader for partition" (session 34).
LEADER_PENDING = frozenset({KafkaError.NOT_LEADER_FOR_PARTITION, KafkaError.LEADER_NOT_AVAILABLE,
                            KafkaError.UNKNOWN_TOPIC_OR_PART})


def watermarks(consumer, partition: TopicPartition, timeout: float) -> tuple[int, int]:
    """The partition's (low, high) offsets, asked again while its leader is pending (LEADER_PENDING),
    up to `timeout` seconds in all; any other error, or one still there at the deadline, raises."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return consumer.get_watermark_offsets(partition, timeout=max(0.1, deadline - time.monotonic()))
        except KafkaException as exc:
            if exc.args[0].code() not in LEADER_PENDING or time.monotonic() >= deadline:
                raise
        time.sleep(0.2)


def _last_with_key(consumer, topic, partition, start, end, key, timeout):
    consumer.assign([TopicPartition(topic, partition, start)])
    found = None
    while True:
        msg = consumer.poll(timeout)
        if msg is None:
            raise ShipError(f"timed out reading topic {topic} partition {partition} at {start}")
        if msg.error():
            if msg.error().code() == KafkaError._PARTITION_EOF:
                return found
            raise ShipError(f"reading topic {topic}: {msg.error()}")
        if msg.offset() >= end:
            return found
        if msg.key() == key:
            found = (msg.key(), msg.value(), msg.headers())
        if msg.offset() == end - 1:
            return found

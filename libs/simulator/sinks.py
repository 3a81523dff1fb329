"""Where the simulated frames go: a binlog file, or a Kafka topic (one record per event), after
the optional dummy-event substitution for a consumer of low capability.

Kafka record (DESIGN.md "Kafka record"): key = source id, value = the event's exact bytes,
headers binlog_file, binlog_pos (the event's start offset in the file, decimal ASCII),
server_id, source, event_type: built by libs/contracts/topic.py KafkaRecord, so the simulator
and the shipper cannot drift apart; the topic is created the shipper's way (one partition).
"""
from __future__ import annotations

from pathlib import Path

from libs.binlog.constants import BINLOG_MAGIC, EventType
from libs.binlog.constants import BINLOG_SEND_ANNOTATE_ROWS_EVENT
from libs.binlog.dummy import CAP_ANNOTATE, substitute_for_replica

from libs.simulator.stream import Frame

from libs.contracts.topic import KafkaRecord  # the one declaration of the record headers

class Substitution:
    """MariaDB task (seed 003): what a master sends a replica announcing
    @mariadb_slave_capability = `capability` (libs.binlog.dummy.substitute_for_replica): the
    event, a same-size dummy / BEGIN, or nothing (capability >= TOLERATE_HOLES). A replica that
    understands Annotate_rows asks for them (BINLOG_SEND_ANNOTATE_ROWS_EVENT)."""

    def __init__(self, capability: int | None, checksum: bool):
        self.capability = capability
        self.checksum = checksum
        self.replaced = 0
        self.omitted = 0

    def __call__(self, frame: Frame) -> Frame | None:
        if self.capability is None or frame.type_code == EventType.FORMAT_DESCRIPTION:
            return frame
        flags = BINLOG_SEND_ANNOTATE_ROWS_EVENT if self.capability >= CAP_ANNOTATE else 0
        out = substitute_for_replica(frame.data, self.capability, dump_flags=flags,
                                     checksum=self.checksum)
        if out is None:
            self.omitted += 1
            return None
        if out != frame.data:
            self.replaced += 1
            return Frame(frame.pos, out, out[4])
        return frame


class FileSink:
    """Collects frames; `bytes()` is the binlog file (magic + events)."""

    def __init__(self, substitution: Substitution | None = None):
        self.frames: list[Frame] = []
        self.substitution = substitution

    def __call__(self, frame: Frame) -> None:
        if self.substitution is not None:
            frame = self.substitution(frame)
        if frame is not None:
            self.frames.append(frame)

    def bytes(self) -> bytes:
        return BINLOG_MAGIC + b"".join(f.data for f in self.frames)

    def write(self, path) -> Path:
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(self.bytes())
        return path


class KafkaSink:
    """Produces each frame as one record, in order, to one partition (key = source)."""

    def __init__(self, bootstrap: str, topic: str, source: str, file_name: str, server_id: int,
                 substitution: Substitution | None = None, producer=None,
                 timeout: float = 30.0, auth=None):
        from confluent_kafka import Producer  # noqa: PLC0415 (only the Kafka mode needs it)

        from libs.shipper.kafka_sink import QUIET_CLIENT, client_conf, ensure_topic, partition_for  # noqa: PLC0415
        from libs.settings.kafka_security import PLAINTEXT_AUTH  # noqa: PLC0415

        auth = auth or PLAINTEXT_AUTH  # how the producer connects (libs/settings/kafka_security.py)
        self.partition = partition_for(source, ensure_topic(bootstrap, topic, timeout=timeout, auth=auth))
        self.producer = producer or Producer({**client_conf(bootstrap, auth),
                                              "enable.idempotence": True, "linger.ms": 5,
                                              **QUIET_CLIENT})
        self.topic, self.source, self.file_name = topic, source, file_name
        self.server_id = server_id
        self.substitution = substitution
        self.sent = 0
        self.errors: list[str] = []

    def _delivered(self, err, msg) -> None:
        if err is not None:
            self.errors.append(str(err))

    def __call__(self, frame: Frame) -> None:
        if self.substitution is not None:
            frame = self.substitution(frame)
        if frame is None:
            return
        record = KafkaRecord(self.source, self.file_name, frame.pos, frame.data)
        while True:
            try:
                self.producer.produce(self.topic, key=record.key(), value=record.value,
                                      partition=self.partition, headers=record.headers(),
                                      on_delivery=self._delivered)
                break
            except BufferError:  # local queue full: let deliveries drain
                self.producer.poll(0.1)
        self.producer.poll(0)
        self.sent += 1

    def flush(self, timeout: float = 30.0) -> None:
        left = self.producer.flush(timeout)
        if left or self.errors:
            raise RuntimeError(f"Kafka delivery failed: {left} records undelivered, "
                               f"errors: {self.errors[:3]}")

"""The shipper's resume read (issue #56 item 3; README "Who may write the topic"): the newest
record of its source in the topic that it can trust, never one it cannot.

It walks back from the end of the source's partition in growing windows (as kafka_sink.last_record
does), reading each window forwards:

    with a topic secret   a record of the source whose cdc_tag does not verify (no tag, another
                          secret's, a changed byte: libs/contracts/topic_tag.py) is named in one
                          line and walked past; the newest one that verifies is the resume point
    without one           the newest record of the source, as before: whoever can produce to the
                          topic can name the source, and the server check at the dump's start
                          (resume.unknown_position) is the only guard

At most MAX_UNTRUSTED records of the source are walked past. With none trusted before that bound
or the partition's start, ResumeRead.untrusted_only: the callers refuse to guess where to start
(starting as on an empty topic would ship everything again) unless the user names the start
(--start-file / --gtid, or --resnapshot). A record that verifies but does not parse as the
contract's (or any unparsable newest record without a secret) is one ShipError naming its offset.
"""
from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Callable

from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition

from libs.contracts.topic import KafkaRecord
from libs.contracts.topic_tag import OTHER_KEY
from libs.shipper.kafka_sink import (SILENT_CLIENT, KafkaSink, client_conf, ensure_topic, partition_for,
                                     watermarks)
from libs.source.errors import ShipError

MAX_UNTRUSTED = 1000  # records of the source walked past, at most, before the walk gives up
MAX_NAMED = 10        # of them named one line each per read; the others in one line
WAY_ON = "README \"Who may write the topic\""


@dataclass(frozen=True)
class ResumeRead:
    """What the walk found: the newest trusted record of the source (None: none) and its offset,
    how many records of the source it walked past untrusted, and the oldest offset it read."""

    record: KafkaRecord | None
    partition: int
    offset: int | None = None
    skipped: int = 0
    reached: int = 0
    claimed: str | None = None  # where the newest untrusted record says the source ends: FILE:POS


    @property
    def untrusted_only(self) -> bool:
        """The topic has records of the source, none of them trusted within the bound."""
        return self.record is None and self.skipped > 0

    def refusal(self, source: str, topic: str, way: str) -> str:
        """The line of a refusal to guess where to start (`way`: what the user can give)."""
        claim = f" (the newest claims to end at {self.claimed})" if self.claimed else ""
        return (f"no record of source {source} in topic {topic} can be trusted: {self.skipped} record(s) "
                f"back to offset {self.reached} of partition {self.partition} carry no tag that verifies"
                f"{claim}; cdc-ship does not guess where to start: {way} ({WAY_ON})")


def _log(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def resume_read(sink: KafkaSink, *, timeout: float = 30.0, say: Callable[[str], None] = _log) -> ResumeRead:
    """The newest record of sink.source the shipper trusts (module doc); the records walked past
    are named through `say`, each once per sink (sink.named_untrusted)."""
    partition = partition_for(sink.source, ensure_topic(sink.bootstrap, sink.topic, timeout=timeout,
                                                        auth=sink.auth))
    consumer = Consumer({**client_conf(sink.bootstrap, sink.auth),
                         "group.id": f"cdc-ship-resume-{sink.source}", "enable.auto.commit": False,
                         "enable.partition.eof": True, "auto.offset.reset": "earliest", **SILENT_CLIENT})
    try:
        found, failed, reached = _walk(consumer, sink, partition, timeout)
    except KafkaException as exc:
        raise ShipError(f"cannot read the last record of topic {sink.topic}: {exc}",
                        source=sink.source) from exc
    finally:
        consumer.close()
    _name(sink, partition, failed, say)
    if found is None:
        claimed = failed[0][2] if failed else None
        return ResumeRead(None, partition, skipped=len(failed), reached=reached, claimed=claimed)
    offset, key, value, headers = found
    try:
        record = KafkaRecord.from_kafka(key, value, headers)
    except (ValueError, UnicodeDecodeError) as exc:
        raise ShipError(f"the newest record of source {sink.source} in topic {sink.topic} (partition "
                        f"{partition} offset {offset}) is not one cdc-ship wrote: {exc}; cdc-ship does not "
                        f"guess where to resume ({WAY_ON})", source=sink.source) from None
    return ResumeRead(record, partition, offset, len(failed), reached)


def _walk(consumer, sink: KafkaSink, partition: int, timeout: float):
    """(newest trusted (offset, key, value, headers) or None, the untrusted newer ones as (offset,
    problem, claimed position) newest first, the oldest offset read)."""
    low, high = watermarks(consumer, TopicPartition(sink.topic, partition), timeout)
    end, window, failed = high, 16, []
    while end > low and len(failed) < MAX_UNTRUSTED:
        start = max(low, end - window)
        found, newer = _scan(consumer, sink, partition, (start, end), timeout)
        failed.extend(reversed(newer))
        if found is not None:
            return found, failed, start
        end, window = start, window * 4
    return None, failed[:MAX_UNTRUSTED], end


def _scan(consumer, sink: KafkaSink, partition: int, span: tuple[int, int], timeout: float):
    """One window [start, end) read forwards: its newest trusted record of the source and the
    untrusted ones after it (oldest first)."""
    start, end = span
    consumer.assign([TopicPartition(sink.topic, partition, start)])
    found, failed = None, []
    while True:
        msg = consumer.poll(timeout)
        if msg is None:
            raise ShipError(f"timed out reading topic {sink.topic} partition {partition} at {start}")
        if msg.error():
            if msg.error().code() == KafkaError._PARTITION_EOF:
                return found, failed
            raise ShipError(f"reading topic {sink.topic}: {msg.error()}")
        if msg.offset() >= end:
            return found, failed
        if msg.key() == sink.key:
            headers = msg.headers()
            problem = None if sink.keys is None else sink.keys.problem(msg.key(), msg.value(), headers)
            if problem is None:
                found, failed = (msg.offset(), msg.key(), msg.value(), headers), []
            else:
                failed.append((msg.offset(), problem, _claimed(msg.key(), msg.value(), headers)))
        if msg.offset() == end - 1:
            return found, failed


def _claimed(key, value, headers) -> str | None:
    """Where an untrusted record says its source ends (FILE:POS), as it says it; None if unreadable."""
    try:
        record = KafkaRecord.from_kafka(key, value, headers)
    except (ValueError, UnicodeDecodeError):
        return None
    return f"{record.binlog_file}:{record.end_pos}"


def _name(sink: KafkaSink, partition: int, failed: list[tuple], say: Callable[[str], None]) -> None:
    """One line per untrusted record not named before (MAX_NAMED of them; one line for the rest)."""
    new = [(offset, problem) for offset, problem, _ in failed if offset not in sink.named_untrusted]
    for offset, problem in new[:MAX_NAMED]:
        why = (f"its tag does not verify: {problem}" if OTHER_KEY in problem
               else "its tag does not verify (written by someone without the topic secret?)")
        say(f"cdc-ship: ignoring record at partition {partition} offset {offset} of source {sink.source}: "
            f"{why}")
    rest = new[MAX_NAMED:]
    if rest:
        say(f"cdc-ship: ignoring {len(rest)} more record(s) of source {sink.source} at partition {partition} "
            f"offsets {rest[-1][0]}..{rest[0][0]}: their tags do not verify")
    sink.named_untrusted.update(offset for offset, _ in new)

"""What the job takes from the topic as a record of this pipeline, and what becomes of a record
that is not one (DESIGN.md "Kafka record", "Bad input"; libs/contracts/topic.py is the contract).

Anyone who can write to the topic can put anything there: a record without key or headers (a
third-party producer's), a key naming another source than its `source` header, a `binlog_pos`
that is not a number, a `record_kind` nobody defined, a tombstone. The decode stage
(pipelines/stages/decode.py) checks each record against the contract with Spark expressions
(no Python pass over good records) and names its problems; the assemble stage quarantines such
a record as kind `kafka_record` instead of feeding it to the source's assembler, so the frames
around it are applied as if it were not there. Nothing of it is trusted but its Kafka position:
the quarantine row keeps its topic, partition and offset, the bytes of its value, and the binlog
position its headers claim only when that is readable.

    check (first failing ones, all named)      the record's problem text
    no key, or an empty one                    no key (the source id)
    `source` header differs from the key       key 'K' names another source than its source header 'S'
    no value (a tombstone)                     no value
    no `binlog_file` header                    no binlog_file header
    `binlog_pos` missing or not decimal        no binlog_pos header | binlog_pos header 'abc' is not a number
    `binlog_epoch` present and not decimal     binlog_epoch header 'x' is not a number
    `record_kind` present and unknown          record_kind header 'x' is not one of binlog, snapshot, ...
    a binlog or format record's value is not   value of N bytes is shorter than a binlog event header (19)
      one event: shorter than a common header  | value of N bytes is not one binlog event (its header's
      or of another size than its event_size     event_size is M)
    with a topic secret (topic_secret_file):   no cdc_tag header as its last header | cdc_tag '...' does not
      the record's cdc_tag does not verify       verify (written by someone without the topic secret?) |
      (libs/contracts/topic_tag.py)              cdc_tag '...' names key id K, none of the topic secrets here

The tag is checked in the assemble stage's Python pass, one HMAC per record (the decode stage
hands it the record's tag and tag_head, computed by Spark: TopicKeys.head_problem); without a
secret nothing of it runs.

A record without a key is kept under its `source` header, or when it has none under the
pseudo-source `kafka:TOPIC:PARTITION` (unattributed_source): the same name the operator gives
accept_bad_input_through to go past it (libs/config/bad_input.py).
"""
from __future__ import annotations

from libs.contracts.assembled import RecordKind

KAFKA_RECORD = "kafka_record"  # the quarantine kind of a record that is not one of the pipeline's
# Quarantine kinds of a whole Kafka record the job could not read: its binlog position is only
# what its headers claim, its Kafka offset names it (libs/config/bad_input.py Incident.named_by_offset).
# The snapshot and heartbeat ones: libs/snapshot/changes.py, libs/stages/assembly.py.
RECORD_KINDS = frozenset({KAFKA_RECORD, "bad_snapshot_record", "bad_heartbeat_record"})

# A decimal header that fits a signed 64-bit long (Spark's binlog_pos column). Checked before the
# cast, so no ANSI cast error can stop the job (issue #38 item 7).
DECIMAL_PATTERN = r"^[0-9]{1,18}$"
UNATTRIBUTED_PREFIX = "kafka:"


def unattributed_source(topic: str, partition: int) -> str:
    """The source a record with neither key nor `source` header is quarantined under."""
    return f"{UNATTRIBUTED_PREFIX}{topic}:{partition}"


def rejected_record(source: str, problem: str, raw: bytes | None, file: str | None, pos: int | None,
                    topic: str, partition: int, offset: int) -> dict:
    """The assemble stage's quarantine record (schemas/assembled_record.avsc) of a record that is
    not one of the pipeline's: its reason names its Kafka position (one incident per record)."""
    return {"kind": RecordKind.QUARANTINE.value, "source": source, "binlog_file": file, "binlog_pos": pos,
            "type_code": None, "q_kind": KAFKA_RECORD,
            "reason": f"topic {topic} partition {partition} offset {offset}: {problem}",
            "raw": b"" if raw is None else bytes(raw), "kafka_topic": topic, "kafka_partition": partition,
            "kafka_offset": offset}

"""The two record-kind vocabularies of the stream, each declared once and pinned to its contract:
RecordKind (libs/contracts/assembled.py) is the `kind` enum of schemas/assembled_record.avsc,
symbol for symbol in its order; TopicKind (libs/contracts/topic.py) is the record_kind header the
shipper writes (the topic module's doc), a binlog event being the one kind without the header."""
import re

import pytest

from libs.contracts import topic
from libs.contracts.assembled import RecordKind, Segment, SegmentFrame
from libs.contracts.avro_schemas import avro_schema
from libs.contracts.heartbeat import HeartbeatRecord
from libs.contracts.topic import HEADER_RECORD_KIND, KafkaRecord, TopicKind
from libs.snapshot.changes import assembled_record
from libs.stages.assembly import InputFrame, assemble_group, heartbeat_record
from libs.stream.assembler import InMemorySpillStore
from libs.stages.counters import SourceCounters
from libs.stages.kafka_input import rejected_record
from tests.unit.shipper.frames import ROW_FULL, frames_of

SIDE = (TopicKind.SNAPSHOT, TopicKind.FORMAT, TopicKind.HEARTBEAT)


def test_the_assembled_kinds_are_the_schemas_symbols_in_its_order():
    (kind,) = [f for f in avro_schema("assembled_record")["fields"] if f["name"] == "kind"]
    assert kind["type"]["name"] == "AssembledKind"
    assert [k.value for k in RecordKind] == kind["type"]["symbols"]


def test_each_assembled_kind_is_described_as_the_schema_describes_it():
    doc = avro_schema("assembled_record")["doc"]
    assert [k for k in RecordKind if f"kind={k.value}:" in doc] == list(RecordKind)
    assert all(k.name in RecordKind.__doc__ for k in RecordKind)


def test_assembled_records_carry_their_kind_as_plain_text():
    """Records built as dicts carry the wire's text (a str, not the member): Spark's
    createDataFrame fails on a str subclass."""
    beat = InputFrame(HeartbeatRecord("s", 5).encode(), "mdb-bin.000001", 4)
    built = {
        RecordKind.QUARANTINE: rejected_record("s", "no key", b"x", "mdb-bin.000001", 4, "t", 0, 1),
        RecordKind.HEARTBEAT: heartbeat_record("s", beat),
        RecordKind.COUNTERS: SourceCounters("s", 0, 0, 0, 0, None).record(),
    }
    for kind, record in built.items():
        assert record["kind"] == kind and type(record["kind"]) is str
    snapshot = assembled_record("s", b"not a snapshot record", "mdb-bin.000001", 4, 0, 1)
    assert snapshot["kind"] == RecordKind.QUARANTINE and type(snapshot["kind"]) is str


def test_the_topic_kinds_are_the_record_kind_headers_the_module_doc_declares():
    assert {k.value for k in TopicKind} == {"binlog", "snapshot", "format", "heartbeat"}
    documented = set(re.findall(r'record_kind\s*=\s*"(\w+)"', topic.__doc__))
    assert documented == {k.value for k in SIDE} == {k.value for k in TopicKind} - {TopicKind.BINLOG}


@pytest.mark.parametrize("kind", SIDE)
def test_a_side_record_writes_its_kind_in_the_header_and_reads_back_as_it(kind):
    rec = KafkaRecord("s", "mdb-bin.000002", 1234, b"value", kind)
    assert dict(rec.headers())[HEADER_RECORD_KIND] == kind.value.encode()
    back = KafkaRecord.from_kafka(rec.key(), rec.value, rec.headers())
    assert back.kind is kind and back.is_side and back.is_snapshot == (kind == TopicKind.SNAPSHOT)


def test_a_record_without_the_header_is_a_binlog_event():
    pos, frame = frames_of(ROW_FULL)[1]
    rec = KafkaRecord("s", "mdb-bin.000001", pos, frame)
    assert rec.kind is TopicKind.BINLOG and HEADER_RECORD_KIND not in dict(rec.headers())
    back = KafkaRecord.from_kafka(rec.key(), rec.value, rec.headers())
    assert back.kind is TopicKind.BINLOG and not back.is_side


def test_a_segment_is_the_schemas_record():
    fields = {f["name"]: f for f in avro_schema("assembled_record")["fields"]}
    assert set(Segment.__annotations__) <= set(fields)
    frame = fields["frames"]["type"][1]["items"]
    assert frame["name"] == SegmentFrame.__name__
    assert list(SegmentFrame.__annotations__) == [f["name"] for f in frame["fields"]]
    frames = [InputFrame(raw, ROW_FULL.name, pos, 0, i) for i, (pos, raw) in enumerate(frames_of(ROW_FULL))]
    records, _ = assemble_group("src", None, frames, InMemorySpillStore(), now=0)
    segments = [r for r in records if r["kind"] == RecordKind.SEGMENT]
    assert segments and all(list(segment) == list(Segment.__annotations__) for segment in segments)
    assert all(list(f) == list(SegmentFrame.__annotations__) for s in segments for f in s["frames"])

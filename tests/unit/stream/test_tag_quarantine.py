"""The job's tag check in the assemble stage's pandas pass (pipelines/stages/assemble.py; issue #56
item 3): a record whose tag does not verify leaves as a kafka_record quarantine row naming its
topic, partition, offset and the failed tag, its value's bytes kept; the good records go on to the
assembler untouched; without a secret nothing is checked."""
from __future__ import annotations

import pandas as pd

from libs.contracts.topic import KafkaRecord
from libs.contracts.topic_tag import TopicKeys, tag_head
from libs.stages.kafka_input import KAFKA_RECORD
from pipelines.stages.assemble import _rejected, _tag_checked
from tests.unit.shipper.frames import ROW_FULL, frames_of

KEYS = TopicKeys((b"t" * 48,))


def _row(offset: int, record: KafkaRecord, headers, problem=None) -> dict:
    last = headers[-1] if headers else None
    tag = last[1].decode() if last is not None and last[0] == "cdc_tag" else None
    return {"source": "src", "binlog_file": record.binlog_file, "binlog_pos": record.binlog_pos,
            "record_kind": "binlog", "kafka_topic": "binlog", "kafka_partition": 0, "kafka_offset": offset,
            "kafka_ms": 0, "record_problem": problem, "raw": record.value, "tag": tag,
            "tag_head": tag_head(b"src", headers[:-1] if tag is not None else headers)}


def test_a_record_whose_tag_does_not_verify_is_quarantined_and_the_others_go_on():
    (p1, f1), (p2, f2) = frames_of(ROW_FULL)[1:3]
    good = KafkaRecord("src", "mdb-bin.000001", p1, f1)
    forged = KafkaRecord("src", "mdb-bin.000001", 99_999, f2)
    rows = [_row(0, good, KEYS.tagged(b"src", f1, good.headers())),
            _row(1, forged, forged.headers()),  # no tag
            _row(2, forged, TopicKeys((b"x" * 48,)).tagged(b"src", f2, forged.headers())),
            _row(3, forged, forged.headers(), problem="no key (the source id)")]
    pdf = _tag_checked(pd.DataFrame(rows), KEYS)
    rejected, kept = _rejected("src", pdf)
    assert kept["kafka_offset"].tolist() == [0] and kept["raw"].tolist() == [f1]
    assert [r["kafka_offset"] for r in rejected] == [1, 2, 3]
    assert {r["q_kind"] for r in rejected} == {KAFKA_RECORD}
    assert rejected[0]["reason"] == ("topic binlog partition 0 offset 1: no cdc_tag header as its last "
                                     "header")
    assert rejected[1]["reason"].startswith("topic binlog partition 0 offset 2: cdc_tag 'v1:")
    assert "names key id" in rejected[1]["reason"]
    assert rejected[2]["reason"] == ("topic binlog partition 0 offset 3: no key (the source id); no cdc_tag "
                                     "header as its last header")
    assert rejected[0]["raw"] == f2 and rejected[0]["binlog_pos"] == 99_999


def test_a_batch_that_verifies_is_left_as_it_was():
    (p1, f1), (p2, f2) = frames_of(ROW_FULL)[1:3]
    records = [KafkaRecord("src", "mdb-bin.000001", p, f) for p, f in ((p1, f1), (p2, f2))]
    pdf = pd.DataFrame([_row(i, r, KEYS.tagged(b"src", r.value, r.headers())) for i, r in enumerate(records)])
    assert _tag_checked(pdf, KEYS) is pdf
    assert _rejected("src", pdf)[0] == []

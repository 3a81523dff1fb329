"""The shipper resumes only from records it can trust (libs/shipper/resume_reader.py, resume.py
unknown_position, server_dump's start; issue #56 items 3-4): a scripted partition stands in for
Kafka, so each rule is seen alone."""
from __future__ import annotations

from types import SimpleNamespace

import pytest
from confluent_kafka import KafkaError

from libs.contracts.topic import KafkaRecord, Origin, TopicKind
from libs.contracts.topic_tag import TopicKeys
from libs.shipper import resume_reader, server_dump
from libs.shipper.resume import StartPoint, unknown_position
from libs.shipper.resume_reader import ResumeRead, resume_read
from libs.source.errors import ShipError
from libs.source.server_identity import ServerIdentity

from .frames import ROW_FULL, frames_of

SECRET = b"k" * 40
KEYS = TopicKeys((SECRET,))
ORIGIN = Origin("mariadb server_id=1 gtid_domain_id=0", "0-1-7")
FRAMES = frames_of(ROW_FULL)


class _Msg:
    def __init__(self, offset, key=None, value=None, headers=None, eof=False):
        self._offset, self._key, self._value, self._headers, self._eof = offset, key, value, headers, eof

    def offset(self):
        return self._offset

    def key(self):
        return self._key

    def value(self):
        return self._value

    def headers(self):
        return self._headers

    def error(self):
        return SimpleNamespace(code=lambda: KafkaError._PARTITION_EOF) if self._eof else None


class _Partition:
    """A Consumer over one scripted partition (offsets from 0)."""

    def __init__(self, records):
        self.records, self.at = records, 0

    def __call__(self, _conf):
        return self

    def assign(self, parts):
        self.at = parts[0].offset

    def poll(self, _timeout):
        if self.at >= len(self.records):
            return _Msg(self.at, eof=True)
        key, value, headers = self.records[self.at]
        self.at += 1
        return _Msg(self.at - 1, key, value, headers)

    def close(self):
        pass


def _genuine(i: int, keys=KEYS, source="src"):
    pos, frame = FRAMES[1 + i % (len(FRAMES) - 1)]
    record = KafkaRecord(source, "mdb-bin.000001", pos, frame, origin=ORIGIN)
    headers = record.headers() if keys is None else keys.tagged(source.encode(), frame, record.headers())
    return source.encode(), frame, headers, record


_FORGED_END = 99_999_999 + len(FRAMES[1][1])


def _forged(pos: int = 99_999_999, tag: bytes | None = None):
    _, frame = FRAMES[1]
    headers = KafkaRecord("src", "mdb-bin.000001", pos, frame, origin=ORIGIN).headers()
    return b"src", frame, headers + ([("cdc_tag", tag)] if tag is not None else [])


@pytest.fixture
def topic(monkeypatch):
    """resume_read over a scripted partition: `topic(records, keys)` -> (ResumeRead, lines)."""
    monkeypatch.setattr(resume_reader, "ensure_topic", lambda *a, **k: 1)
    monkeypatch.setattr(resume_reader, "watermarks", lambda consumer, tp, timeout: (0, len(consumer.records)))
    sink = SimpleNamespace(bootstrap="b:1", topic="t", source="src", key=b"src", auth=None,
                           keys=KEYS, named_untrusted=set())

    def read(records, keys=KEYS):
        monkeypatch.setattr(resume_reader, "Consumer", _Partition(records))
        monkeypatch.setattr(resume_reader, "client_conf", lambda *a: {})
        sink.keys, lines = keys, []
        return resume_read(sink, say=lines.append), lines
    return read


def test_a_forged_newest_record_is_named_in_one_line_and_the_genuine_one_before_it_resumes(topic):
    genuine = [_genuine(i) for i in range(5)]
    records = [g[:3] for g in genuine] + [_forged(), _genuine(9, source="other")[:3]]
    read, lines = topic(records)
    assert read.record == genuine[4][3] and read.offset == 4 and read.skipped == 1
    assert lines == ["cdc-ship: ignoring record at partition 0 offset 5 of source src: its tag does not "
                     "verify (written by someone without the topic secret?)"]


def test_a_wrong_tag_or_another_secrets_tag_is_walked_past_too(topic):
    other = TopicKeys((b"o" * 40,))
    records = [_genuine(0)[:3], _forged(tag=b"v1:00000000:" + b"0" * 64), _genuine(1, keys=other)[:3]]
    read, lines = topic(records)
    assert read.offset == 0 and read.skipped == 2 and len(lines) == 2
    assert "names key id" in lines[0] and "offset 2" in lines[0] and "offset 1" in lines[1]


def test_each_untrusted_record_is_named_once_per_run(topic):
    records = [_genuine(0)[:3], _forged()]
    assert len(topic(records)[1]) == 1
    assert topic(records)[1] == []  # a reconnect's read: already named


def test_nothing_trusted_is_refused_not_taken_for_an_empty_topic(topic):
    read, lines = topic([_forged(), _forged()])
    assert read.record is None and read.untrusted_only and len(lines) == 2
    assert read.refusal("src", "t", "give --start-file") == (
        "no record of source src in topic t can be trusted: 2 record(s) back to offset 0 of partition 0 "
        f"carry no tag that verifies (the newest claims to end at mdb-bin.000001:{_FORGED_END}); "
        "cdc-ship does not guess where to start: give --start-file (README \"Who may write the topic\")")
    empty, _ = topic([_genuine(0, source="other")[:3]])
    assert empty.record is None and not empty.untrusted_only  # no record of the source: an empty topic


def test_the_walk_back_is_bounded(topic, monkeypatch):
    monkeypatch.setattr(resume_reader, "MAX_UNTRUSTED", 20)
    read, lines = topic([_genuine(0)[:3]] + [_forged()] * 100)
    assert read.untrusted_only and read.skipped == 20 and read.reached > 1
    assert len(lines) == 11 and lines[-1].startswith("cdc-ship: ignoring 10 more record(s) of source src")


def test_without_a_secret_the_newest_record_is_trusted_as_before(topic):
    untagged = [_genuine(i, keys=None) for i in range(3)]
    read, lines = topic([u[:3] for u in untagged], keys=None)
    assert read.record == untagged[2][3] and lines == []
    read, _ = topic([u[:3] for u in untagged] + [_forged()], keys=None)
    assert read.record.binlog_pos == 99_999_999  # the server check is the only guard then


def test_an_unparsable_newest_record_is_one_line_naming_its_offset(topic):
    with pytest.raises(ShipError, match=r"\(partition 0 offset 1\) is not one cdc-ship wrote: record "):
        topic([_genuine(0, keys=None)[:3], (b"src", b"x", [("source", b"src")])], keys=None)


@pytest.mark.parametrize("file, pos, problem", [
    ("mdb-bin.000002", 300, None),
    ("mdb-bin.000002", 500, None),            # the file's end: the dump moves on to the next file
    ("mdb-bin.000003", 4, None),
    ("mdb-bin.000002", 501, "its mdb-bin.000002 is 500 bytes long"),
    ("mdb-bin.000003", 99_999, "its mdb-bin.000003 is 120 bytes long"),
    ("mdb-bin.000009", 4, "it has no binlog file mdb-bin.000009 (its binlog: mdb-bin.000002 .. "
                          "mdb-bin.000003)"),
    ("other-bin.000001", 4, "it has no binlog file other-bin.000001 (its binlog: mdb-bin.000002 .. "
                            "mdb-bin.000003)"),
    ("mdb-bin.000001", 4, None),              # purged: purge.py's error, with its way on
])
def test_a_position_the_server_does_not_have(file, pos, problem):
    assert unknown_position([("mdb-bin.000002", 500), ("mdb-bin.000003", 120)], file, pos) == problem


def _start(monkeypatch, read: ResumeRead, requested: StartPoint, logs):
    monkeypatch.setattr(server_dump, "resume_read", lambda sink: read)
    monkeypatch.setattr(server_dump.replica_source, "gtid_state_at", lambda conn, f, p: None)
    sink = SimpleNamespace(source="src", topic="t")
    opts = SimpleNamespace(host="db", port=3306)
    return server_dump._start_point(sink, opts, None, SimpleNamespace(resumed_from=None),
                                    ServerIdentity("mariadb", 1, gtid_domain_id=0), logs, requested, False)


def test_the_dump_refuses_a_made_up_position_and_an_untrusted_topic_without_a_named_start(monkeypatch):
    logs = [("mdb-bin.000001", 800)]
    forged = KafkaRecord("src", "mdb-bin.000001", 99_999, FRAMES[1][1], origin=ORIGIN)
    with pytest.raises(ShipError) as refused:
        _start(monkeypatch, ResumeRead(forged, 0, 7), StartPoint(None, 4, None, 0, None), logs)
    assert str(refused.value).startswith(
        f"the topic's last record of source src (partition 0 offset 7) resumes at mdb-bin.000001:"
        f"{forged.end_pos}, a position server db:3306 does not have: its mdb-bin.000001 is 800 bytes long; "
        f"cdc-ship does not guess where to start")
    nothing = ResumeRead(None, 0, skipped=3, reached=0)
    with pytest.raises(ShipError, match="can be trusted: 3 record.*give --start-file F"):
        _start(monkeypatch, nothing, StartPoint(None, 4, None, 0, None), logs)
    named = _start(monkeypatch, nothing, StartPoint("mdb-bin.000001", 256, None, 0, None), logs)
    assert (named.file, named.pos) == ("mdb-bin.000001", 256)
    side = KafkaRecord("src", "mdb-bin.000001", 800, b"{}", TopicKind.HEARTBEAT, origin=ORIGIN)
    assert _start(monkeypatch, ResumeRead(side, 0, 9), StartPoint(None, 4, None, 0, None), logs).pos == 800

"""The Kafka record contract: header names, values, parsing back."""
import pytest

from libs.contracts import topic as record
from libs.contracts.topic import KafkaRecord

from .frames import ROW_FULL, frames_of


def test_header_names_are_the_documented_contract():
    assert record.HEADER_NAMES == ("binlog_file", "binlog_pos", "server_id", "source", "event_type",
                                   "record_kind", "server_identity", "gtid_state", "gtid",
                                   "binlog_epoch")


def test_origin_headers_round_trip_and_leave_the_value_byte_exact():
    pos, frame = frames_of(ROW_FULL)[1]
    origin = record.Origin("mariadb server_id=2 gtid_domain_id=0", "0-1-7", "0-1-8", 3)
    sent = KafkaRecord("s", "mdb-bin.000002", pos, frame, origin=origin)
    back = KafkaRecord.from_kafka(b"s", frame, sent.headers())
    assert back == sent and back.value == frame and back.epoch == 3


def test_epoch_zero_and_missing_origin_write_no_header():
    pos, frame = frames_of(ROW_FULL)[1]
    plain = dict(KafkaRecord("s", "f", pos, frame).headers())
    stamped = dict(KafkaRecord("s", "f", pos, frame, origin=record.Origin("x", "")).headers())
    assert "binlog_epoch" not in plain and "server_identity" not in plain
    assert "binlog_epoch" not in stamped and stamped["gtid_state"] == b"" and "gtid" not in stamped
    assert KafkaRecord.from_kafka(b"s", frame, list(plain.items())).origin is None


def test_a_binlog_event_has_no_record_kind_header():
    pos, frame = frames_of(ROW_FULL)[1]
    assert "record_kind" not in dict(KafkaRecord("s", "f", pos, frame).headers())


def test_snapshot_record_round_trips_and_takes_no_room_in_the_binlog():
    from libs.snapshot.record import BEGIN, SnapshotRecord
    value = SnapshotRecord(BEGIN, "run-1", "mdb-bin.000002", 1234, 1, 0, tables=("d.t",)).encode()
    rec = KafkaRecord("s", "mdb-bin.000002", 1234, value, record.TopicKind.SNAPSHOT)
    assert dict(rec.headers())["record_kind"] == b"snapshot"
    back = KafkaRecord.from_kafka(rec.key(), rec.value, rec.headers())
    assert back == rec and back.is_snapshot
    assert back.end_pos == 1234  # the next binlog event starts at the snapshot's position


@pytest.mark.parametrize("value", [None, b"", b"short"])
def test_the_event_size_check_is_for_binlog_events_only(value):
    """A side record shorter than an event header is read as it is (a snapshot record that does
    not decode is quarantined by the job with its bytes); a binlog event that short is refused."""
    side = [("binlog_file", b"f"), ("binlog_pos", b"4"), ("source", b"s"), ("record_kind", b"snapshot")]
    assert KafkaRecord.from_kafka(b"s", value, side).value == (value or b"")
    with pytest.raises(ValueError, match="is not a binlog event"):
        KafkaRecord.from_kafka(b"s", value, side[:3])


def test_unknown_record_kind_is_refused():
    with pytest.raises(ValueError, match="unknown kind 'other'"):
        KafkaRecord.from_kafka(b"s", b"x" * 19, [("binlog_file", b"f"), ("binlog_pos", b"4"),
                                                 ("source", b"s"), ("record_kind", b"other")])


def test_headers_carry_start_position_server_id_and_source():
    pos, frame = frames_of(ROW_FULL)[5]
    rec = KafkaRecord("src-1", "mdb-bin.000001", pos, frame)
    h = dict(rec.headers())
    assert h == {"binlog_file": b"mdb-bin.000001", "binlog_pos": str(pos).encode(),
                 "server_id": b"1", "source": b"src-1", "event_type": str(frame[4]).encode()}
    assert rec.key() == b"src-1"
    assert rec.end_pos == pos + len(frame)


def test_start_position_is_not_taken_from_header_log_pos():
    """The record says where the event STARTS; the header's log_pos is its end (or 0)."""
    pos, frame = frames_of(ROW_FULL)[3]
    rec = KafkaRecord("s", "f", pos, frame)
    assert int(dict(rec.headers())["binlog_pos"]) == pos != int.from_bytes(frame[13:17], "little")


def test_round_trip_from_kafka():
    pos, frame = frames_of(ROW_FULL)[1]
    rec = KafkaRecord("s", "mdb-bin.000001", pos, frame)
    assert KafkaRecord.from_kafka(rec.key(), rec.value, rec.headers()) == rec


@pytest.mark.parametrize("headers, match", [
    ([("binlog_file", b"f"), ("source", b"s")], "binlog_pos"),
    ([], "binlog_file, binlog_pos, source"),
])
def test_missing_headers_are_named(headers, match):
    with pytest.raises(ValueError, match=match):
        KafkaRecord.from_kafka(b"s", b"x" * 19, headers)


def test_key_must_match_source_header():
    pos, frame = frames_of(ROW_FULL)[1]
    rec = KafkaRecord("s", "f", pos, frame)
    with pytest.raises(ValueError, match="differs from source"):
        KafkaRecord.from_kafka(b"other", rec.value, rec.headers())

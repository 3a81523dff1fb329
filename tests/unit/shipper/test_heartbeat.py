"""Heartbeat records (libs/shipper/heartbeat.py): published only when the server's heartbeat
names the shipper's own position, a record of their own kind beside the binlog bytes, skipped
by a rebuild."""
import pytest

from libs.shipper.heartbeat import HeartbeatRecord, is_caught_up, server_position
from libs.shipper.record import HEARTBEAT, KafkaRecord

from .frames import ROW_FULL, heartbeat
from .test_rebuild import rebuild, records


def test_a_heartbeat_record_round_trips():
    beat = HeartbeatRecord("s1", 1_764_000_000_123_456, heartbeat("mdb-bin.000001", 1131))
    assert HeartbeatRecord.decode(beat.encode()) == beat


@pytest.mark.parametrize("raw", [b"", b"\x01", b"\xff" * 3])
def test_bytes_that_are_no_heartbeat_record_are_refused(raw):
    with pytest.raises(ValueError, match="not a heartbeat record"):
        HeartbeatRecord.decode(raw)


def test_the_server_heartbeat_names_its_file_without_the_crc32_and_its_log_pos():
    assert server_position(heartbeat("mdb-bin.000007", 1332)) == ("mdb-bin.000007", 1332)


@pytest.mark.parametrize("file, pos, caught_up", [
    ("mdb-bin.000001", 1131, True),    # the master waits where the shipper is
    ("mdb-bin.000001", 1000, False),   # the shipper is behind in the same file
    ("mdb-bin.000002", 1131, False),   # another file
    (None, None, False),               # before the stream told its file
])
def test_only_a_heartbeat_at_the_shippers_own_position_says_caught_up(file, pos, caught_up):
    assert is_caught_up(heartbeat("mdb-bin.000001", 1131), file, pos) is caught_up


def test_a_heartbeat_record_takes_no_room_and_is_parsed_back_from_kafka():
    rec = KafkaRecord("s1", "mdb-bin.000001", 1131, HeartbeatRecord("s1", 5).encode(), HEARTBEAT)
    assert rec.is_side and rec.end_pos == 1131
    back = KafkaRecord.from_kafka(rec.key(), rec.value, rec.headers())
    assert back == rec


def test_heartbeat_records_between_events_are_skipped_by_the_rebuild():
    recs = records(ROW_FULL)
    at = recs[5].binlog_pos
    beat = KafkaRecord("s", ROW_FULL.name, at, HeartbeatRecord("s", 5).encode(), HEARTBEAT)
    files = rebuild(recs[:5] + [beat] + recs[5:] + [beat])
    assert files[ROW_FULL.name].content() == ROW_FULL.read_bytes()

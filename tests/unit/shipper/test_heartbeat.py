"""Heartbeat records (libs/contracts/heartbeat.py): published only when the server's heartbeat
names the shipper's own position, a record of their own kind beside the binlog bytes, skipped
by a rebuild."""
import time

import pytest

from libs.shipper.file_source import Inputs, iter_file_events
from libs.contracts.heartbeat import FollowBeat, HeartbeatRecord, is_caught_up, server_position
from libs.contracts.topic import KafkaRecord, TopicKind

from .frames import ROW_FULL, frames_of, heartbeat
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
    rec = KafkaRecord("s1", "mdb-bin.000001", 1131, HeartbeatRecord("s1", 5).encode(), TopicKind.HEARTBEAT)
    assert rec.is_side and rec.end_pos == 1131
    back = KafkaRecord.from_kafka(rec.key(), rec.value, rec.headers())
    assert back == rec


def test_heartbeat_records_between_events_are_skipped_by_the_rebuild():
    recs = records(ROW_FULL)
    at = recs[5].binlog_pos
    beat = KafkaRecord("s", ROW_FULL.name, at, HeartbeatRecord("s", 5).encode(), TopicKind.HEARTBEAT)
    files = rebuild(recs[:5] + [beat] + recs[5:] + [beat])
    assert files[ROW_FULL.name].content() == ROW_FULL.read_bytes()


S = 1_000_000_000  # ns


def test_a_file_follower_beats_once_per_period_of_silence():
    beat = FollowBeat(1.0)
    events = 100
    # the first idle read starts the silence; one period later a beat, then one per period
    assert [beat.due(t, events) for t in (0, S // 2, S, S + S // 2, 2 * S - 1, 2 * S)] == [
        False, False, True, False, False, True]


def test_an_event_shipped_restarts_the_silence():
    beat = FollowBeat(1.0)
    assert not beat.due(0, 5) and beat.due(S, 5)
    assert not beat.due(S + S // 2, 6)        # an event went out: silence from here
    assert not beat.due(2 * S, 6)              # half a period of it
    assert beat.due(S + S // 2 + S, 6)


@pytest.mark.parametrize("period", [0, -1])
def test_a_follow_beat_needs_a_positive_period(period):
    with pytest.raises(ValueError, match="positive"):
        FollowBeat(period)


def test_the_follower_reports_idle_reads_at_the_file_end_only_when_nothing_is_pending(tmp_path):
    """on_idle: every read of the newest file's end that finds no new event and no partial one,
    with the file's next position and a time taken before that read."""
    data, frames = ROW_FULL.read_bytes(), frames_of(ROW_FULL)
    live = tmp_path / ROW_FULL.name
    cut = frames[20][0]
    live.write_bytes(data[:cut + 7])  # the server is writing event 20
    (tmp_path / "mdb-bin.index").write_text(f"./{ROW_FULL.name}\n")
    shipped, idle, waits = [], [], []

    def on_idle(name, pos, at_ns):
        idle.append((name, pos, len(shipped), at_ns))

    def server() -> bool:
        if len(shipped) == 20:
            waits.append(1)
            if len(waits) == 10:  # the shipper has waited on the partial event a while
                with open(live, "ab") as fh:
                    fh.write(data[cut + 7:])
        return len(idle) >= 3

    before = time.time_ns()
    for name, pos, _ in iter_file_events(Inputs.from_paths([tmp_path]), "s", follow=True, poll_s=0.01,
                                         should_stop=server, on_idle=on_idle):
        shipped.append(pos)
    assert shipped == [p for p, _ in frames]
    # while event 20 was partial: no idle report; once all was shipped: reports at the end
    end = len(data)
    assert idle and all((name, pos, n) == (ROW_FULL.name, end, len(frames)) for name, pos, n, _ in idle)
    assert before <= idle[0][3] <= idle[-1][3] <= time.time_ns()

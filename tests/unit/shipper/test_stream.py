"""StreamTracker on synthetic and captured replica streams built from real MariaDB frames."""
import pytest

from libs.binlog import iter_frames
from libs.source.errors import FrameError, ShipError, UnsafePathError
from libs.shipper.rebuild import RebuiltFile, write_files
from libs.shipper.stream import (ARTIFICIAL_FDE, FAKE_ROTATE, HEARTBEAT, PUBLISH, StreamTracker,
                                 parse_rotate)

from .frames import (CAPTURES, MISC, ROW_FULL, artificial_fde, fake_rotate, frames_of, heartbeat)


def feed_all(tracker, stream):
    return [(tracker.feed(frame), frame) for frame in stream]


def published(steps):
    return [(s.file, s.pos, f) for s, f in steps if s.kind == PUBLISH]


def test_captured_cap4_stream_publishes_exact_file_events_at_their_positions():
    """row_full.cap4.annotate.bin: what MariaDB 10.11 really sent (fake Rotate first)."""
    capture = CAPTURES.joinpath("row_full.cap4.annotate.bin").read_bytes()
    steps = feed_all(StreamTracker("s"), [f for _, f in iter_frames(capture, 4)])
    assert steps[0][0].kind == FAKE_ROTATE and steps[0][0].file == "mdb-bin.000001"
    original = [("mdb-bin.000001", pos, frame) for pos, frame in frames_of(ROW_FULL)]
    assert published(steps) == original


def test_hole_left_by_capability_2_is_detected_and_positions_resynchronised():
    """cap 2 omits standalone GTIDs, Annotate_rows, checkpoints: positions must still be the
    original ones (from log_pos cross-check) and the holes counted."""
    capture = CAPTURES.joinpath("row_full.cap2.bin").read_bytes()
    tracker = StreamTracker("s")
    got = published(feed_all(tracker, [f for _, f in iter_frames(capture, 4)]))
    original = dict(frames_of(ROW_FULL))
    assert tracker.holes > 0
    assert len(got) < len(original)
    for _file, pos, frame in got:
        assert len(original[pos]) == len(frame)
        if frame[4] != 2:  # BEGIN replacing a GTID differs; everything else is byte-identical
            assert original[pos] == frame


def test_start_mid_file_skips_artificial_fde_and_starts_at_requested_position():
    frames = frames_of(ROW_FULL)
    fde = frames[0][1]
    start_pos = frames[10][0]
    stream = [fake_rotate("mdb-bin.000001", start_pos), artificial_fde(fde)]
    stream += [f for _, f in frames[10:]]
    steps = feed_all(StreamTracker("s"), stream)
    assert [s.kind for s, _ in steps[:2]] == [FAKE_ROTATE, ARTIFICIAL_FDE]
    assert published(steps) == [("mdb-bin.000001", p, f) for p, f in frames[10:]]


def test_rotate_to_next_file_and_heartbeats():
    """Real Rotate ends file 1; master sends fake Rotate + real FDE of file 2 at position 4;
    heartbeats while idle are never published."""
    first, second = frames_of(ROW_FULL), frames_of(MISC)
    stream = [fake_rotate("mdb-bin.000001", 4)] + [f for _, f in first]
    stream += [heartbeat("mdb-bin.000001", first[-1][0] + len(first[-1][1]))]
    stream += [fake_rotate("mdb-bin.000012", 4)] + [f for _, f in second]
    stream += [heartbeat("mdb-bin.000012", 16709)]
    steps = feed_all(StreamTracker("s"), stream)
    assert sum(1 for s, _ in steps if s.kind == HEARTBEAT) == 2
    want = [("mdb-bin.000001", p, f) for p, f in first] + [("mdb-bin.000012", p, f) for p, f in second]
    assert published(steps) == want
    # the first event of each file is its real Format_description at position 4
    assert [(f, p, fr[4]) for f, p, fr in published(steps) if p == 4] == [
        ("mdb-bin.000001", 4, 15), ("mdb-bin.000012", 4, 15)]


def test_fake_rotate_without_checksum_is_parsed():
    """@master_binlog_checksum='NONE': the fake Rotate comes without a CRC (corpus README §3)."""
    assert parse_rotate(fake_rotate("mdb-bin.000007", 1234, checksum=False), None) == (
        1234, "mdb-bin.000007")
    assert parse_rotate(fake_rotate("mdb-bin.000007", 1234), None) == (1234, "mdb-bin.000007")


def test_event_before_fake_rotate_is_an_error_naming_the_source():
    fde = frames_of(ROW_FULL)[0][1]
    with pytest.raises(ShipError, match="source s9"):
        StreamTracker("s9").feed(fde)


def test_size_mismatch_is_an_error_with_position():
    tracker = StreamTracker("s")
    tracker.feed(fake_rotate("mdb-bin.000001", 4))
    fde = frames_of(ROW_FULL)[0][1]
    with pytest.raises(ShipError, match=r"event_size .*file mdb-bin.000001, pos 4"):
        tracker.feed(fde[:-1])


@pytest.mark.parametrize("name", ["../../etc/cron.d/x", "..", ""])
def test_a_server_rotate_naming_a_path_is_refused(name):
    with pytest.raises(FrameError, match="bad fake Rotate"):
        StreamTracker("s").feed(fake_rotate(name, 4))


def test_rebuild_never_writes_outside_its_directory(tmp_path):
    with pytest.raises(UnsafePathError):
        write_files({"x": RebuiltFile("../escaped.000001", 4)}, tmp_path / "out")
    assert not (tmp_path / "escaped.000001").exists()


def test_a_frame_whose_crc32_does_not_match_is_refused_naming_its_position():
    """The file's FDE says CRC32: a frame damaged on the way is refused, never published."""
    frames = frames_of(ROW_FULL)
    tracker = StreamTracker("s")
    tracker.feed(fake_rotate("mdb-bin.000001", 4))
    for _, frame in frames[:5]:
        tracker.feed(frame)
    pos, frame = frames[5]
    damaged = frame[:30] + bytes([frame[30] ^ 0x01]) + frame[31:]
    with pytest.raises(FrameError, match=rf"CRC32 mismatch .*file mdb-bin.000001, pos {pos}"):
        tracker.feed(damaged)
    assert tracker.feed(frame).pos == pos  # the undamaged frame is taken at the same position

"""cdc-ship --from-file on hostile files: a corrupt frame, a truncated file or garbage tail, a bad
Rotate and names that would leave the binlog directory are typed errors naming file and
position; nothing after them is shipped, nothing outside the directory is opened."""
import os
import time

import pytest

from libs.source.errors import FrameError, IncompleteFileError, ShipError, UnsafePathError
from libs.shipper.file_source import Inputs, iter_file_events

from .frames import MISC, ROW_FULL, frames_of
from .hostile import flip_body_byte, rotate_body, with_raw_rotate, with_rotate_to


def shipped_until_error(inputs, **kw):
    got = []
    with pytest.raises(ShipError) as err:
        for name, pos, frame in iter_file_events(inputs, "s", **kw):
            got.append((name, pos))
    return got, err.value


def stop_after(seconds: float):
    """A follow's way out when the test expects an error before it: a hang guard, long enough
    that a starved process (the unit tier runs at idle priority, scripts/dev) still meets its error."""
    deadline = time.monotonic() + seconds
    return lambda: time.monotonic() > deadline


HANG_GUARD_S = 60


def test_a_frame_with_a_bad_crc32_is_refused_and_nothing_after_it_is_shipped(tmp_path):
    frames = frames_of(ROW_FULL)
    bad_pos = frames[20][0]
    path = tmp_path / ROW_FULL.name
    path.write_bytes(flip_body_byte(ROW_FULL.read_bytes(), bad_pos))
    got, err = shipped_until_error(Inputs([path]))
    assert got == [(ROW_FULL.name, p) for p, _ in frames[:20]]
    assert isinstance(err, FrameError) and "CRC32 mismatch" in str(err)
    assert f"file {ROW_FULL.name}, pos {bad_pos}" in str(err)


def test_a_bad_crc32_after_a_resume_mid_file_is_refused_too(tmp_path):
    frames = frames_of(ROW_FULL)
    path = tmp_path / ROW_FULL.name
    path.write_bytes(flip_body_byte(ROW_FULL.read_bytes(), frames[30][0]))
    resume = (ROW_FULL.name, frames[25][0])  # the FDE is read to learn the checksum setting
    got, err = shipped_until_error(Inputs([path]), resume=resume)
    assert [p for _, p in got] == [p for p, _ in frames[25:30]]
    assert f"pos {frames[30][0]}" in str(err)


def test_a_truncated_file_is_an_error_naming_file_and_position(tmp_path):
    frames = frames_of(ROW_FULL)
    path = tmp_path / ROW_FULL.name
    path.write_bytes(ROW_FULL.read_bytes()[:frames[20][0] + 7])  # 7 bytes into event 20
    got, err = shipped_until_error(Inputs([path]))
    assert [p for _, p in got] == [p for p, _ in frames[:20]]
    assert isinstance(err, IncompleteFileError)
    assert f"file {ROW_FULL.name}, pos {frames[20][0]}" in str(err)


@pytest.mark.parametrize("tail", [b"garbage", b"\x00" * 19 + b"more garbage than a header"])
def test_a_garbage_tail_is_an_error(tmp_path, tail):
    path = tmp_path / ROW_FULL.name
    path.write_bytes(ROW_FULL.read_bytes() + tail)
    got, err = shipped_until_error(Inputs([path]))
    assert len(got) == len(frames_of(ROW_FULL))
    assert f"pos {ROW_FULL.stat().st_size}" in str(err)


def test_a_garbage_frame_with_a_plausible_size_fails_its_crc32(tmp_path):
    data = ROW_FULL.read_bytes()
    # a Query event's header (timestamp, type 2, server id, size 40) and garbage after it
    fake = data[4:8] + b"\x02" + data[9:13] + (40).to_bytes(4, "little") + b"\x00" * 27
    path = tmp_path / ROW_FULL.name
    path.write_bytes(data + fake)
    _, err = shipped_until_error(Inputs([path]))
    assert isinstance(err, FrameError) and f"pos {len(data)}" in str(err)


@pytest.mark.parametrize("body, match", [
    (rotate_body(4, b"mdb-bin.\xff\xfe0002"), "not UTF-8"),
    (b"\x04\x00\x00", "too short"),
    (rotate_body(4, b"../other/secret-bin.000007"), "not a plain file name"),
])
def test_a_bad_rotate_is_a_typed_error(tmp_path, body, match):
    path = tmp_path / ROW_FULL.name
    path.write_bytes(with_raw_rotate(body))
    got, err = shipped_until_error(Inputs([path]))
    assert isinstance(err, FrameError) and "bad Rotate" in str(err) and match in str(err)
    assert f"pos {frames_of(ROW_FULL)[-1][0]}" in str(err)
    assert len(got) == len(frames_of(ROW_FULL)) - 1


def test_follow_never_opens_the_file_a_rotate_names_outside_the_directory(tmp_path):
    (tmp_path / "bin").mkdir()
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "secret-bin.000007").write_bytes(MISC.read_bytes())
    live = tmp_path / "bin" / ROW_FULL.name
    live.write_bytes(with_rotate_to("../other/secret-bin.000007"))
    got, err = shipped_until_error(Inputs.from_paths([live], follow=True), follow=True,
                                   poll_s=0.01, should_stop=stop_after(HANG_GUARD_S))
    assert {name for name, _ in got} == {ROW_FULL.name}
    assert isinstance(err, FrameError) and "bad Rotate" in str(err)


def test_follow_of_explicit_files_continues_only_with_files_the_index_lists(tmp_path):
    live = tmp_path / ROW_FULL.name
    live.write_bytes(with_rotate_to("mdb-bin.000012"))  # a plain name, but no index names it
    (tmp_path / MISC.name).write_bytes(MISC.read_bytes())
    got, err = shipped_until_error(Inputs.from_paths([live], follow=True), follow=True,
                                   poll_s=0.01, should_stop=stop_after(HANG_GUARD_S))
    assert {name for name, _ in got} == {ROW_FULL.name}
    assert "no index file lists the files after it" in str(err) and f"file {ROW_FULL.name}" in str(err)
    (tmp_path / "mdb-bin.index").write_text(f"./{ROW_FULL.name}\n./{MISC.name}\n")
    names, guard, expected = [], stop_after(HANG_GUARD_S), len(frames_of(MISC))
    all_in_at = None

    def done() -> bool:  # MISC's frames all in, then a second more for any that would come twice
        nonlocal all_in_at
        if names.count(MISC.name) < expected:
            return guard()
        all_in_at = all_in_at or time.monotonic()
        return time.monotonic() - all_in_at > 1.0

    for name, _, _ in iter_file_events(Inputs.from_paths([live], follow=True), "s", follow=True, poll_s=0.01,
                                       should_stop=done):
        names.append(name)
    assert names.count(MISC.name) == len(frames_of(MISC))


@pytest.mark.parametrize("line", ["../other/secret-bin.000007", "sub/mdb-bin.000002", ".."])
def test_an_index_line_outside_its_directory_is_refused(tmp_path, line):
    (tmp_path / "mdb-bin.index").write_text(f"./mdb-bin.000001\n{line}\n")
    with pytest.raises(UnsafePathError, match="mdb-bin.index line 2"):
        Inputs.from_paths([tmp_path])


def test_an_indexed_symlink_that_leaves_the_directory_is_not_opened(tmp_path):
    (tmp_path / "bin").mkdir()
    (tmp_path / "other").mkdir()
    secret = tmp_path / "other" / "secret-bin.000007"
    secret.write_bytes(MISC.read_bytes())
    (tmp_path / "bin" / ROW_FULL.name).write_bytes(ROW_FULL.read_bytes())
    os.symlink(secret, tmp_path / "bin" / "mdb-bin.000002")
    (tmp_path / "bin" / "mdb-bin.index").write_text(f"./{ROW_FULL.name}\n./mdb-bin.000002\n")
    got, err = shipped_until_error(Inputs.from_paths([tmp_path / "bin"]))
    assert {name for name, _ in got} == {ROW_FULL.name}
    assert isinstance(err, UnsafePathError) and "outside the binlog directory" in str(err)


def test_follow_waits_for_the_rest_of_a_partial_last_event(tmp_path):
    data = ROW_FULL.read_bytes()
    frames = frames_of(ROW_FULL)
    live = tmp_path / ROW_FULL.name
    live.write_bytes(data[:frames[20][0] + 7])
    (tmp_path / "mdb-bin.index").write_text(f"./{ROW_FULL.name}\n")
    got, polls = [], []

    def server_writes_the_rest() -> bool:
        polls.append(1)
        if len(polls) == 20:  # the shipper has been waiting on the partial event a while
            with open(live, "ab") as fh:
                fh.write(data[frames[20][0] + 7:])
        return len(got) == len(frames)

    for name, pos, frame in iter_file_events(Inputs.from_paths([tmp_path]), "s", follow=True,
                                             poll_s=0.01, should_stop=server_writes_the_rest):
        got.append((pos, frame))
    assert got == frames


def test_follow_refuses_a_finished_file_that_ends_inside_an_event(tmp_path):
    frames = frames_of(MISC)
    (tmp_path / MISC.name).write_bytes(MISC.read_bytes()[:frames[10][0] + 30])
    (tmp_path / "mdb-bin.000013").write_bytes(ROW_FULL.read_bytes())
    (tmp_path / "mdb-bin.index").write_text(f"./{MISC.name}\n./mdb-bin.000013\n")
    got, err = shipped_until_error(Inputs.from_paths([tmp_path]), follow=True, poll_s=0.01,
                                   should_stop=stop_after(HANG_GUARD_S))
    assert [p for _, p in got] == [p for p, _ in frames[:10]]
    assert isinstance(err, IncompleteFileError) and "mdb-bin.000013 after it" in str(err)
    assert f"file {MISC.name}, pos {frames[10][0]}" in str(err)


def test_follow_of_a_file_its_directory_index_does_not_list_stops_at_the_rotate(tmp_path):
    live = tmp_path / ROW_FULL.name
    live.write_bytes(ROW_FULL.read_bytes())
    (tmp_path / "mdb-bin.index").write_text("./mdb-bin.000005\n")
    got, err = shipped_until_error(Inputs.from_paths([live], follow=True), follow=True,
                                   poll_s=0.01, should_stop=stop_after(HANG_GUARD_S))
    assert len(got) == len(frames_of(ROW_FULL)) and "cannot follow it" in str(err)


def test_a_directory_without_index_does_not_follow_symlinks_out_of_it(tmp_path):
    (tmp_path / "bin").mkdir()
    secret = tmp_path / "secret-bin.000007"
    secret.write_bytes(MISC.read_bytes())
    os.symlink(secret, tmp_path / "bin" / "mdb-bin.000007")
    with pytest.raises(UnsafePathError, match="outside the binlog directory"):
        list(iter_file_events(Inputs.from_paths([tmp_path / "bin"]), "s"))

import struct

from libs.smoke_frames import FIRST_POS, decode_header_columns, smoke_frames


def test_frames_are_consecutive_events_of_one_file():
    frames = smoke_frames(50)
    pos = FIRST_POS
    for start, frame in frames:
        size, log_pos = struct.unpack_from("<II", frame, 9)
        assert start == pos and size == len(frame) and log_pos == pos + size
        pos += size


def test_vectorised_header_matches_struct_unpack_per_frame():
    frames = [f for _, f in smoke_frames(64)]
    df = decode_header_columns(frames)
    for i, frame in enumerate(frames):
        expect = struct.unpack_from("<IBIIIH", frame, 0)
        got = tuple(int(df.iloc[i][c]) for c in
                    ("timestamp", "type_code", "server_id", "event_size", "log_pos", "flags"))
        assert got == expect


def test_short_frame_gives_null_header_not_an_exception():
    frames = [smoke_frames(1)[0][1], b"\x01\x02"]
    df = decode_header_columns(frames)
    assert df["type_code"].isna().tolist() == [False, True]

"""Heartbeats through the assemble stage's pure core (libs/stages/assembly.py): a heartbeat
counts only where no transaction is open, the batch's last good one wins, a malformed one is
quarantined, and none changes what is applied."""
from libs.stream.assembler import InMemorySpillStore
from libs.contracts.heartbeat import HeartbeatRecord
from libs.contracts.topic import TopicKind
from libs.stages.assembly import InputFrame, assemble_group

from .test_stream_assembly import CORPUS, changes_of, frames_of

FILE = f"{CORPUS}/row_full/mdb-bin.000001"


def beat(at: int, micros: int, raw: bytes | None = None) -> InputFrame:
    """A heartbeat record placed before the batch's frame number `at` (offsets are the frames')."""
    return InputFrame(raw if raw is not None else HeartbeatRecord("src", micros).encode(),
                      "mdb-bin.000001", 0, 0, at, TopicKind.HEARTBEAT)


def assembled(frames):
    records, _ = assemble_group("src", None, frames, InMemorySpillStore(), now=0)
    return records


def of_kind(records, kind):
    return [r for r in records if r["kind"] == kind]


def test_a_heartbeat_after_whole_transactions_is_vouched_for_and_changes_nothing_applied():
    frames = frames_of(FILE)
    plain = assembled(frames)
    records = assembled(frames + [beat(len(frames), 42)])
    (hb,) = of_kind(records, "heartbeat")
    assert (hb["source"], hb["commit_ts"], hb["binlog_file"]) == ("src", 42, "mdb-bin.000001")
    assert changes_of(records) == changes_of(plain)


def test_the_last_of_several_heartbeats_wins():
    frames = frames_of(FILE)
    records = assembled(frames + [beat(len(frames), 1), beat(len(frames) + 1, 2)])
    assert [r["commit_ts"] for r in of_kind(records, "heartbeat")] == [2]


def test_a_heartbeat_inside_an_open_transaction_is_not_vouched_for():
    frames = frames_of(FILE)
    segments = of_kind(assembled(frames), "segment")
    last_trx = segments[-1]
    inside = last_trx["frames"][1]["pos"]  # a frame inside the file's last transaction
    cut = next(i for i, f in enumerate(frames) if f.pos == inside)
    records = assembled(frames[:cut] + [beat(cut, 7)] + frames[cut:])
    assert of_kind(records, "heartbeat") == []
    assert changes_of(records) == changes_of(assembled(frames))


def test_a_heartbeat_before_later_transactions_of_the_batch_still_counts():
    frames = frames_of(FILE)
    first_end = of_kind(assembled(frames), "segment")[0]["trx_end_pos"]
    cut = next(i for i, f in enumerate(frames) if f.pos == first_end)  # right after the first transaction
    records = assembled(frames[:cut] + [beat(cut, 9)] + frames[cut:])
    assert [r["commit_ts"] for r in of_kind(records, "heartbeat")] == [9]
    assert changes_of(records) == changes_of(assembled(frames))


def test_a_malformed_heartbeat_is_quarantined_with_its_position_and_bytes():
    frames = frames_of(FILE)
    records = assembled(frames + [beat(len(frames), 0, raw=b"\xff\xff")])
    (q,) = of_kind(records, "quarantine")
    assert (q["raw"] == b"\xff\xff" and q["q_kind"] == "bad_heartbeat_record"
            and "heartbeat record" in q["reason"])
    assert (q["binlog_file"], q["kafka_offset"]) == ("mdb-bin.000001", len(frames))
    assert of_kind(records, "heartbeat") == []

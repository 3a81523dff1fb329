"""A stream that starts inside a binlog file (after a snapshot, or --start-pos) has no
Format_description of its own: the dump's artificial one travels as a format record
(libs/contracts/topic.py) and the assemble stage decodes what follows with it."""
import struct
import zlib

from libs.stream.assembler import InMemorySpillStore
from libs.binlog.constants import EventType
from libs.contracts.topic import TopicKind
from libs.stages.assembly import InputFrame, assemble_group, decode_segment
from tests.unit.shipper.frames import ROW_FULL, frames_of


def _artificial(fde: bytes) -> bytes:
    """The FDE as a master sends it at a dump start inside a file: log_pos 0, CRC32 redone."""
    body = fde[:13] + struct.pack("<I", 0) + fde[17:-4]
    return body + struct.pack("<I", zlib.crc32(body))


def _from_second_transaction():
    frames = frames_of(ROW_FULL)
    gtids = [i for i, (_, f) in enumerate(frames) if f[4] == EventType.MARIA_GTID]
    assert len(gtids) >= 2
    start = gtids[1]
    fde = next(f for _, f in frames if f[4] == EventType.FORMAT_DESCRIPTION)
    tail = [InputFrame(f, ROW_FULL.name, p) for p, f in frames[start:]]
    return frames[start][0], fde, tail


def test_a_format_record_lets_a_mid_file_stream_decode():
    pos, fde, tail = _from_second_transaction()
    head = InputFrame(_artificial(fde), ROW_FULL.name, pos, kind=TopicKind.FORMAT)
    records, state = assemble_group("s", None, [head] + tail, InMemorySpillStore())
    kinds = [r["kind"] for r in records]
    assert "quarantine" not in kinds and kinds.count("segment") >= 1
    changes = [c for r in records if r["kind"] == "segment" for c in decode_segment(r)]
    assert changes and all(c["trx_end_pos"] > pos for c in changes)
    # the format record took no position: the first event at `pos` was not seen as a duplicate
    assert state["last_end_pos"] > pos


def test_without_it_every_event_is_quarantined():
    _, _, tail = _from_second_transaction()
    records, _ = assemble_group("s", None, tail, InMemorySpillStore())
    assert {r["kind"] for r in records} == {"quarantine"}
    assert {r["q_kind"] for r in records} == {"no_format_description"}


def test_a_format_record_that_is_no_format_description_is_kept_in_quarantine():
    pos, fde, tail = _from_second_transaction()
    heads = [InputFrame(_artificial(fde), ROW_FULL.name, pos, kind=TopicKind.FORMAT),
             InputFrame(tail[0].raw, ROW_FULL.name, pos, kind=TopicKind.FORMAT)]
    records, _ = assemble_group("s", None, heads + tail, InMemorySpillStore())
    (bad,) = [r for r in records if r["kind"] == "quarantine"]
    assert bad["q_kind"] == "bad_format_record" and bad["raw"] == tail[0].raw
    assert f"pos {pos}" in bad["reason"]

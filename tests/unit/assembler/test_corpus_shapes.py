"""Assembler fixes found by shipping the whole corpus (issue #4 integration proof), each checked
without Spark on real binlog bytes: relay logs (a fake Rotate inside the file), binlog v3
(Start_v3 defines the format), MySQL 8 compressed transactions (Transaction_payload), and a
transaction whose END frame is lost (every frame still lands in quarantine)."""
import os
import zlib

from libs.stream.assembler import InMemorySpillStore
from libs.binlog import (DecodeContext, Event, Header, TransactionPayload, decode_event,
                         encode_event, iter_frames)
from libs.binlog.constants import EventType
from libs.binlog.events_mysql_group import COMPRESSION_NONE
from libs.runtime.paths import CORPUS_DIR
from libs.stages.assembly import InputFrame, StageConfig, assemble_group, decode_segment

MYSQL = CORPUS_DIR / "mysql"


def frames_of(path) -> list[InputFrame]:
    name = os.path.basename(path)
    data = open(path, "rb").read()
    return [InputFrame(bytes(f), name, pos, 0, i) for i, (pos, f) in enumerate(iter_frames(data, file=name))]


def run(frames, batches: int = 1):
    state, records, store = None, [], InMemorySpillStore()
    step = max(1, -(-len(frames) // batches))
    for start in range(0, len(frames), step):
        out, state = assemble_group("src", state, frames[start:start + step], store, StageConfig(), now=0)
        records += out
    return records


def changes(records) -> list[dict]:
    return [c for r in records if r["kind"] == "segment" for c in decode_segment(r)]


def test_relay_log_fake_rotate_inside_the_file_is_no_gap():
    # A relay log holds the replica's FDE, the master's fake Rotate (log_pos 0) and the master's
    # FDE: the fake Rotate's bytes sit between them in the file.
    path = MYSQL / "mysql-8.0.43/std_data/binlog_savepoint.000001"
    frames = frames_of(path)
    assert frames[1].raw[4] == EventType.ROTATE and frames[1].raw[13:17] == b"\0\0\0\0"
    records = run(frames, batches=3)  # the fake Rotate ends a batch: position kept in the state
    assert not [r for r in records if r["kind"] == "quarantine"]
    got = changes(records)
    text = open(f"{path}.mariadb-binlog.vv.txt").read()
    # every INSERT statement the server logged between BEGIN and the Xid is one change
    assert [c["statement"] for c in got] == [line for line in text.splitlines() if line.startswith("INSERT")]
    assert {c["trx_end_pos"] for c in got} == {os.path.getsize(path)}


def test_binlog_v3_start_event_defines_the_format_for_segments():
    path = MYSQL / "mysql-5.7.22/suite/binlog/std_data/binlog_old_version_4_1.000001"
    got = changes(run(frames_of(path)))  # decode_segment re-decodes with the stored Start_v3
    text = open(f"{path}.mariadb-binlog.vv.txt").read()
    statements = [c["statement"] for c in got]
    assert statements and all(s in text for s in statements)


def _payload_frame(trx_frames: list[bytes], pos: int, ctx: DecodeContext) -> bytes:
    """The group's frames (minus GTID) as one uncompressed Transaction_payload, as MySQL 8.0.20+
    writes with binlog_transaction_compression (inner events carry no checksum)."""
    plain = b"".join(f[:9] + (len(f) - 4).to_bytes(4, "little") + f[13:-4] for f in trx_frames)
    body = TransactionPayload(COMPRESSION_NONE, len(plain), len(plain), (), plain)
    header = Header(int.from_bytes(trx_frames[0][:4], "little"), EventType.TRANSACTION_PAYLOAD, 1, 0, 0, 0)
    frame = encode_event(Event(header, pos, body), ctx)
    return frame[:13] + (pos + len(frame)).to_bytes(4, "little") + frame[17:-4] + \
        zlib.crc32(frame[:13] + (pos + len(frame)).to_bytes(4, "little") + frame[17:-4]).to_bytes(4, "little")


def test_transaction_payload_gives_the_same_changes_as_the_uncompressed_transaction():
    path = MYSQL / "mysql-8.0.43/std_data/replicated-bin.000001"
    frames = frames_of(path)
    gtid_at = [i for i, f in enumerate(frames) if f.raw[4] == EventType.GTID]
    first, second = gtid_at[0], gtid_at[1]  # GTID, BEGIN, Table_map, Write_rows, Xid
    ctx = DecodeContext()
    for f in frames[:first]:
        decode_event(f.raw, f.pos, ctx)
    gtid = frames[first]
    payload_pos = gtid.pos + len(gtid.raw)
    payload = _payload_frame([f.raw for f in frames[first + 1:second]], payload_pos, ctx)
    assert decode_event(payload, payload_pos, ctx).body.events  # a valid frame with inner events
    compressed = frames[:first + 1] + [InputFrame(payload, gtid.file, payload_pos, 0, first + 1)]
    plain, packed = changes(run(frames[:second])), changes(run(compressed))
    assert len(plain) == 1 and len(packed) == 1
    ignore = ("binlog_pos", "trx_end_pos", "change_seq", "xid")  # frame layout differs by construction
    assert {k: v for k, v in packed[0].items() if k not in ignore} == \
        {k: v for k, v in plain[0].items() if k not in ignore}
    assert packed[0]["binlog_pos"] == payload_pos and packed[0]["xid"] == plain[0]["xid"]


def test_lost_end_frame_still_puts_every_frame_of_its_transaction_in_quarantine():
    # MySQL's recovery test file: the second transaction's Xid was edited without re-checksumming.
    path = MYSQL / "mysql-8.0.43/std_data/binlog_recovery/duplicate_xid.000001"
    frames = frames_of(path)
    xid_at = [i for i, f in enumerate(frames) if f.raw[4] == EventType.XID]
    bad = xid_at[-1]
    assert zlib.crc32(frames[bad].raw[:-4]) != int.from_bytes(frames[bad].raw[-4:], "little")
    gtid_before = max(i for i in range(bad) if frames[i].raw[4] == EventType.GTID)
    records = run(frames, batches=4)
    quarantined = sorted(r["binlog_pos"] for r in records if r["kind"] == "quarantine")
    assert quarantined == [f.pos for f in frames[gtid_before:bad + 1]]
    assert [c["trx_end_pos"] for c in changes(records)] == [
        frames[xid_at[0]].pos + len(frames[xid_at[0]].raw)]

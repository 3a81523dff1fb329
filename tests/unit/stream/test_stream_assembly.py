"""The pure core of the assemble/rows stages on real binlogs (no Spark): whole transactions,
any micro-batch split, parallel-decodable segments, the oracle's row-change counts."""
import collections
import gzip
import re

import pytest

from libs.stream.assembler import InMemorySpillStore
from libs.binlog import iter_frames
from libs.stages.assembly import InputFrame, StageConfig, assemble_group, decode_segment
from libs.runtime.paths import CORPUS_DIR

CORPUS = str(CORPUS_DIR / "mariadb")
ROW_EVENT = re.compile(r"^### (INSERT INTO|UPDATE|DELETE FROM) `([^`]+)`\.`([^`]+)`")
OPS = {"INSERT INTO": "insert", "UPDATE": "update", "DELETE FROM": "delete"}


def frames_of(path: str) -> list[InputFrame]:
    data = open(path, "rb").read()
    name = path.rsplit("/", 1)[1]
    return [InputFrame(bytes(f), name, pos, 0, i) for i, (pos, f) in enumerate(iter_frames(data, file=name))]


def oracle_row_counts(vv_path: str) -> collections.Counter:
    opener = gzip.open if vv_path.endswith(".gz") else open
    counts = collections.Counter()
    with opener(vv_path, "rt", errors="replace") as f:
        for line in f:
            m = ROW_EVENT.match(line)
            if m:
                counts[(m.group(2), m.group(3), OPS[m.group(1)])] += 1
    return counts


def run(frames, batches: int, config=StageConfig(), store=None):
    store = store if store is not None else InMemorySpillStore()
    state, records = None, []
    step = max(1, -(-len(frames) // batches))
    for start in range(0, len(frames), step):
        out, state = assemble_group("src", state, frames[start:start + step], store, config, now=0)
        records += out
    return records, state, store


def changes_of(records) -> list[dict]:
    return [c for r in records if r["kind"] == "segment" for c in decode_segment(r)]


@pytest.mark.parametrize("scenario, file", [
    ("row_full", "mdb-bin.000001"), ("row_minimal", "mdb-bin.000002"), ("row_noblob", "mdb-bin.000003"),
    ("compressed", "mdb-bin.000011"),
])
def test_row_changes_per_table_and_operation_equal_the_oracle(scenario, file):
    records, _, _ = run(frames_of(f"{CORPUS}/{scenario}/{file}"), batches=4)
    assert not [r for r in records if r["kind"] == "quarantine"]
    got = collections.Counter((c["database"], c["table"], c["op"]) for c in changes_of(records)
                              if c["op"] in OPS.values())
    assert got == oracle_row_counts(f"{CORPUS}/{scenario}/{file}.vv.txt.gz")


def test_xa_rolled_back_rows_are_in_the_binlog_but_never_emitted():
    # misc/workload.sql: XA 'xa1' prepared then committed, 'xa2' prepared then XA ROLLBACK,
    # 'xa3' COMMIT ONE PHASE. The binlog holds all three inserts; a replica applies two.
    records, _, _ = run(frames_of(f"{CORPUS}/misc/mdb-bin.000012"), batches=4)
    changes = changes_of(records)
    got = collections.Counter((c["database"], c["table"], c["op"])
                              for c in changes if c["op"] in OPS.values())
    expected = oracle_row_counts(f"{CORPUS}/misc/mdb-bin.000012.vv.txt")
    expected[("misc_db", "t_x", "insert")] -= 1
    assert got == expected
    # no column-name/charset metadata in this file: strings travel as bytes
    texts = {(v["text"] or (v["binary"] or b"").decode()) for c in changes if c["table"] == "t_x"
             for v in (c["after"] or [])}
    assert {"xa committed", "xa one phase"} <= texts and "xa rolled back" not in texts


def test_every_row_change_carries_its_annotate_rows_statement():
    changes = changes_of(run(frames_of(f"{CORPUS}/row_minimal/mdb-bin.000002"), batches=3)[0])
    rows = [c for c in changes if c["op"] in OPS.values()]
    assert rows and all(c["statement"] for c in rows)
    assert any(c["statement"].startswith("INSERT INTO t_defaults") for c in rows)


def test_batch_split_and_segment_size_do_not_change_the_output():
    frames = frames_of(f"{CORPUS}/row_full/mdb-bin.000001")
    one = changes_of(run(frames, batches=1)[0])
    many = changes_of(run(frames, batches=17, config=StageConfig(segment_max_frames=3))[0])
    key = lambda c: (c["trx_end_pos"], c["change_seq"])  # noqa: E731
    assert sorted(one, key=key) == sorted(many, key=key)


def test_change_seq_is_strictly_increasing_inside_each_transaction():
    changes = changes_of(run(frames_of(f"{CORPUS}/row_noblob/mdb-bin.000003"), batches=5,
                             config=StageConfig(segment_max_frames=4))[0])
    by_trx = collections.defaultdict(list)
    for c in sorted(changes, key=lambda c: (c["binlog_file"], c["binlog_pos"])):
        by_trx[c["trx_id"]].append(c["change_seq"])
    assert all(seqs == sorted(set(seqs)) for seqs in by_trx.values())


def test_big_transaction_over_many_batches_keeps_state_small_and_comes_out_whole():
    frames = frames_of(f"{CORPUS}/big_trx/mdb-bin.000009")
    store = InMemorySpillStore()
    state, segments, max_state = None, [], 0
    step = len(frames) // 12 + 1
    for start in range(0, len(frames), step):
        out, state = assemble_group("src", state, frames[start:start + step], store,
                                    StageConfig(segment_max_frames=64), now=0)
        segments += [r for r in out if r["kind"] == "segment"]
        max_state = max(max_state, len(repr(state)))
        if start + step < len(frames):  # the big transaction is still open: its frames are spilled
            assert store.total_bytes() > 0
    assert max_state < 4000
    big = [s for s in segments if s["trx_id"] == max(segments, key=lambda s: s["segment_no"])["trx_id"]]
    assert len(big) > 10  # one transaction, many independently decodable segments
    rows = sum(1 for s in big for c in decode_segment(s) if c["op"] in OPS.values())
    assert rows == 200_000


def test_topic_starting_mid_file_without_its_format_description_applies_nothing():
    # e.g. retention removed the head of the topic: no Format_description, so nothing can be
    # decoded safely; every frame is kept in quarantine with its position, none is applied.
    frames = frames_of(f"{CORPUS}/row_full/mdb-bin.000001")
    first_tm = next(i for i, f in enumerate(frames) if f.raw[4] == 19)
    records, _, _ = run(frames[first_tm:first_tm + 40], batches=2)
    quarantined = [r for r in records if r["kind"] == "quarantine"]
    assert len(quarantined) == 40 and not [r for r in records if r["kind"] == "segment"]
    assert all(r["raw"] == f.raw and r["binlog_pos"] == f.pos
               for r, f in zip(quarantined, frames[first_tm:first_tm + 40]))


def test_gap_inside_a_file_stops_the_batch_naming_both_positions():
    from libs.stream.assembler import StreamGapError

    frames = frames_of(f"{CORPUS}/row_full/mdb-bin.000001")
    with pytest.raises(StreamGapError,
                       match=f"ended at {frames[3].pos}, next frame starts at {frames[4].pos}"):
        run(frames[:3] + frames[4:], batches=1)

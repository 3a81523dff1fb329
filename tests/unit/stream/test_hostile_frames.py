"""Hostile frames through the assemble and rows cores (no Spark): an event the codec keeps as
bytes and a frame beyond a decode limit each end in quarantine with their position, the
transactions after them are emitted, and a retried or resumed batch never loops on them."""
from __future__ import annotations

import pytest

from libs.stream.assembler import InMemorySpillStore, Transaction, iter_change_records
from libs.stream.assembler.model import Frame
from libs.binlog import DecodeContext, DecodeLimits, LimitError, UnsupportedError, decode_event
from libs.binlog.constants import EventType
from libs.stages.assembly import InputFrame, StageConfig, assemble_group, decode_segment
from tests.unit.stream.test_stream_assembly import CORPUS, frames_of
from tests.unit.codec_fuzz.hostile import (MYSQL8_FILE, PRE_GA_FILE, context_after_fde,
                                           corpus_frames, nested_payload, query)


def inputs(raws: list[bytes], file: str, start: int = 4) -> list[InputFrame]:
    out, pos = [], start
    for i, raw in enumerate(raws):
        out.append(InputFrame(raw, file, pos, 0, i))
        pos += len(raw)
    return out


def assemble(frames, config=StageConfig(), state=None, store=None):
    store = store if store is not None else InMemorySpillStore()
    records, state = assemble_group("src", state, frames, store, config, now=0)
    return records, state, store


def quarantined(records) -> dict[int, str]:
    return {r["binlog_pos"]: r["q_kind"] for r in records if r["kind"] == "quarantine"}


def changes(records, limits=DecodeLimits()) -> list[dict]:
    return [c for r in records if r["kind"] == "segment" for c in decode_segment(r, limits)]


# ---- MySQL 5.1 pre-GA rows events (types 20-22): known, kept as bytes ---------------------

@pytest.fixture
def pre_ga_transaction() -> list[InputFrame]:
    """MySQL's own ver_5_1-wl2325_r.001: its FDE, a BEGIN, its Table_map and pre-GA
    Write_rows (type 20) frames as the server wrote them, COMMIT, then its CREATE TABLE t3."""
    ctx, _ = context_after_fde(PRE_GA_FILE)
    by_pos = dict(corpus_frames(PRE_GA_FILE))
    raws = [by_pos[4], query(ctx, "BEGIN"), by_pos[428], by_pos[466], query(ctx, "COMMIT"), by_pos[330]]
    return inputs(raws, "pre-ga.000001")


def test_a_transaction_holding_a_pre_ga_rows_event_is_quarantined_not_applied(pre_ga_transaction):
    records, _, _ = assemble(pre_ga_transaction)
    rows_at = pre_ga_transaction[3].pos
    where = quarantined(records)
    assert where[rows_at] == "unsupported"
    reason = next(r["reason"] for r in records if r.get("binlog_pos") == rows_at)
    assert "pre-GA" in reason and f"pos {rows_at}" in reason and "pre-ga.000001" in reason
    # its whole transaction is in quarantine, never applied; the statement after it is
    assert set(where) == {f.pos for f in pre_ga_transaction[1:5]}
    assert [c["statement"] for c in changes(records)] == ["CREATE TABLE t3 (a int, b char(20))"]


def test_change_records_refuse_an_undecoded_rows_event_with_a_typed_error():
    ctx = DecodeContext(file=PRE_GA_FILE.name)
    frames = []
    for pos, raw in corpus_frames(PRE_GA_FILE)[:6]:  # FDE .. Table_map 428, Write_rows 466
        event = decode_event(raw, pos, ctx)
        frames.append(Frame(PRE_GA_FILE.name, pos, raw, None, None, event))
    trx = Transaction("src", "t", None, None, 0, 1, PRE_GA_FILE.name, 511, None, None, 2, frames[4:])
    with pytest.raises(UnsupportedError, match="pre-GA") as err:
        list(iter_change_records(trx))
    assert (err.value.pos, err.value.file, err.value.source) == (466, PRE_GA_FILE.name, "src")


# ---- a poisoned frame: a nested Transaction_payload ----------------------------------------

@pytest.fixture
def poisoned_stream() -> tuple[list[InputFrame], int]:
    """MySQL's replicated-bin.000001 with a GTID + nested Transaction_payload (built with the
    codec's encoders) between its first and second transactions; (frames, poisoned position)."""
    ctx, _ = context_after_fde(MYSQL8_FILE)
    raws = [raw for _, raw in corpus_frames(MYSQL8_FILE)]
    first_end = 7  # FDE, Previous_gtids, GTID, BEGIN, Table_map, Write_rows, Xid
    assert raws[first_end - 1][4] == EventType.XID and raws[first_end][4] == EventType.GTID
    poison = [raws[first_end], nested_payload(ctx, 1000)]  # unbounded: a RecursionError
    frames = inputs(raws[:first_end] + poison + raws[first_end:-1], MYSQL8_FILE.name)
    return frames, frames[first_end + 1].pos


def _trx_ends(records) -> list[int]:
    return sorted({c["trx_end_pos"] for c in changes(records)})


def test_a_poisoned_frame_is_quarantined_and_the_transactions_after_it_applied(poisoned_stream):
    frames, poisoned_at = poisoned_stream
    records, _, _ = assemble(frames)
    where = quarantined(records)
    assert where[poisoned_at] == "limit"
    assert set(where) == {poisoned_at - len(frames[7].raw), poisoned_at}  # its GTID and itself
    reason = next(r["reason"] for r in records if r.get("binlog_pos") == poisoned_at)
    assert "nested" in reason and f"pos {poisoned_at}" in reason
    ends = _trx_ends(records)
    assert len(ends) == 5 and ends[0] < poisoned_at < ends[1]  # every other transaction applied


def test_a_retried_or_resumed_batch_never_loops_on_the_poisoned_frame(poisoned_stream):
    frames, poisoned_at = poisoned_stream
    cut = 9  # the batch ends on the poisoned frame
    first, state, store = assemble(frames[:cut])
    assert quarantined(first) == {frames[7].pos: "bad_transaction", poisoned_at: "limit"}
    retried, state_again, _ = assemble(frames[:cut], store=store)  # Spark retries from no state
    assert quarantined(first) == quarantined(retried) and state_again == state
    resumed, _, _ = assemble(frames, state=state, store=store)  # Kafka redelivers from offset 0
    assert poisoned_at not in quarantined(resumed)  # already behind the stored position
    assert len(_trx_ends(first)) + len(_trx_ends(resumed)) == 5


def test_configured_limits_reach_the_assemble_and_rows_cores():
    frames = frames_of(f"{CORPUS}/row_minimal/mdb-bin.000002")  # no table of one column
    narrow = DecodeLimits(max_columns=1)
    assert "limit" in set(quarantined(assemble(frames, StageConfig(limits=narrow))[0]).values())
    records, _, _ = assemble(frames)
    assert not quarantined(records)
    segment = next(r for r in records if r["kind"] == "segment"
                   and any(f["raw"][4] == EventType.TABLE_MAP for f in r["frames"]))
    with pytest.raises(LimitError, match="max_columns"):
        decode_segment(segment, narrow)

"""A transaction spread over many micro-batches: bounded state, chunks in the SpillStore, restart
from a state round-tripped through to_row/from_row, retried batches, idle timeouts."""
import json

import pytest

from libs.stream.assembler import (
    STATE_FIELDS, Assembler, AssemblerConfig, AssemblerState, IdleAction, InMemorySpillStore,
    idle_action, release, to_change_records,
)
from tests.unit.assembler.stream import place, summary
from tests.unit.boundary import events as e

ROWS = 600
BIG_TRX = ([e.mysql_gtid(1), e.query("BEGIN"), e.rows_query("INSERT INTO orders SELECT ..."), e.table_map()]
           + [e.write_rows({0: i, 1: "n" * 50}, size=300, stmt_end=i == ROWS - 1) for i in range(ROWS)]
           + [e.xid(77)])
SMALL_TRX = [e.mysql_gtid(2), e.query("BEGIN"), e.table_map(), e.delete_rows({0: 5}), e.xid(78)]
INPUTS = place(BIG_TRX + SMALL_TRX)
CONFIG = AssemblerConfig(chunk_max_events=32)
STATE_BYTES_LIMIT = 1200  # the whole serialized state, however large the open transaction


def state_size(state: AssemblerState) -> int:
    return len(json.dumps({k: (v.hex() if isinstance(v, bytes) else v) for k, v in state.to_row().items()}))


def batches(inputs, size):
    return [inputs[i:i + size] for i in range(0, len(inputs), size)]


def test_transaction_over_many_micro_batches_keeps_the_state_small():
    store = InMemorySpillStore()
    assembler = Assembler("src1", store, CONFIG)
    emitted, chunk_counts = [], []
    for batch in batches(INPUTS, 50):
        out = assembler.feed(batch)
        emitted += out.transactions
        assert state_size(assembler.state) < STATE_BYTES_LIMIT
        if assembler.state.open is not None:
            chunk_counts.append(assembler.state.open.chunk_count)
            assert len(store.chunks) == assembler.state.open.chunk_count
    assert chunk_counts == sorted(chunk_counts) and chunk_counts[-1] > 10
    assert store.total_bytes() > ROWS * 300  # the open transaction lived in the store, not the state
    assert [t.xid for t in emitted] == [77, 78]
    records = to_change_records(emitted[0])
    assert [r["after"][0]["text"] for r in records] == [str(i) for i in range(ROWS)]
    assert [r["change_seq"] for r in records] == [(i + 2) * 2**20 for i in range(ROWS)]  # after rq, tm
    assert {r["statement"] for r in records} == {"INSERT INTO orders SELECT ..."}


def test_released_chunks_are_deleted_only_by_release():
    store = InMemorySpillStore()
    assembler = Assembler("src1", store, CONFIG)
    outs = [assembler.feed(batch) for batch in batches(INPUTS, 100)]
    assert store.chunks  # emitted transactions still read their chunks lazily
    for out in outs:
        release(store, "src1", out.released)
    assert store.chunks == {}


def test_restart_from_round_tripped_state_gives_identical_output():
    whole = Assembler("src1", InMemorySpillStore(), CONFIG).feed(INPUTS)
    store = InMemorySpillStore()
    row, transactions = None, []
    for batch in batches(INPUTS, 77):
        state = AssemblerState.from_row(row) if row is not None else None
        assembler = Assembler("src1", store, CONFIG, state)  # a new process per micro-batch
        transactions += assembler.feed(batch).transactions
        row = assembler.state.to_row()
        assert set(row) == set(STATE_FIELDS)
    assert [summary(t) for t in transactions] == [summary(t) for t in whole.transactions]
    assert [to_change_records(t) for t in transactions] == [to_change_records(t) for t in whole.transactions]


def test_retried_batch_from_the_previous_state_is_idempotent():
    store = InMemorySpillStore()
    first = Assembler("src1", store, CONFIG)
    first.feed(INPUTS[:300])
    saved = first.state.to_row()
    chunks_before = dict(store.chunks)
    attempt1 = Assembler("src1", store, CONFIG, AssemblerState.from_row(saved)).feed(INPUTS[300:])
    chunks_after_attempt1 = dict(store.chunks)
    attempt2 = Assembler("src1", store, CONFIG, AssemblerState.from_row(saved)).feed(INPUTS[300:])
    assert store.chunks == chunks_after_attempt1  # same keys, same bytes: idempotent writes
    assert all(store.chunks[k] == v for k, v in chunks_before.items())
    assert [summary(t) for t in attempt2.transactions] == [summary(t) for t in attempt1.transactions]


def test_state_round_trip_keeps_every_field():
    store = InMemorySpillStore()
    assembler = Assembler("src1", store, CONFIG)
    xa = "X'01',X'',1"
    assembler.feed(place([e.fde(), e.mysql_gtid(1), e.query(f"XA START {xa}"), e.table_map(),
                          e.write_rows({0: 1}), e.query(f"XA END {xa}"), e.xa_prepare(b"\x01"),
                          e.mysql_gtid(2), e.query("BEGIN"), e.ignorable()]), now=1000)
    state = assembler.state
    assert state.open is not None and state.xa_prepared and state.fde is not None
    assert AssemblerState.from_row(state.to_row()) == state


def test_from_row_reads_by_name_not_position():
    row = AssemblerState("src9").to_row()
    reordered = {k: row[k] for k in reversed(list(row))}
    assert AssemblerState.from_row(reordered) == AssemblerState("src9")


def test_state_of_another_source_is_refused():
    with pytest.raises(ValueError):
        Assembler("src1", InMemorySpillStore(), state=AssemblerState("src2"))


def test_idle_source_decisions():
    store = InMemorySpillStore()
    assembler = Assembler("src1", store, CONFIG)
    assembler.feed(place(SMALL_TRX), now=100)
    keep_forever = AssemblerConfig()
    with_timeout = AssemblerConfig(open_trx_timeout_seconds=60)
    assert idle_action(assembler.state, 10_000, with_timeout) is IdleAction.NOTHING
    assembler.feed(place(SMALL_TRX[:3], start=4 + 5 * 40), now=200)
    assert idle_action(assembler.state, 10_000, keep_forever) is IdleAction.WAIT
    assert idle_action(assembler.state, 259, with_timeout) is IdleAction.WAIT
    assert idle_action(assembler.state, 260, with_timeout) is IdleAction.QUARANTINE_OPEN
    out = assembler.expire_open("source idle for 60 s")
    assert [(q.kind, q.binlog_pos) for q in out.quarantined] == [("open_timeout", 204), ("open_timeout", 244),
                                                                 ("open_timeout", 284)]
    assert assembler.state.open is None and out.counters["open_expired"] == 1
    assert idle_action(assembler.state, 10_000, with_timeout) is IdleAction.NOTHING


def test_a_chunk_spilled_under_the_assemblers_old_module_name_reads_back():
    """Chunks pickled before the move to libs/stream/assembler/ name the old module; an upgraded
    job still reads them (protocol 2 spells module names as text, so the old name can be made)."""
    import pickle

    from libs.stream.assembler.model import Frame
    from libs.stream.assembler.spill import decode_chunk
    frames = (Frame("mdb-bin.000001", 4, b"\x00" * 19, 0, 7, None),)
    old = pickle.dumps(frames, protocol=2).replace(b"libs.stream.assembler.", b"libs.assembler.")
    assert b"libs.assembler.model" in old
    with pytest.raises(ModuleNotFoundError):
        pickle.loads(old)
    assert decode_chunk(old) == frames

"""libs/stages/counters.py: what the assemble stage tells the driver's metrics per source, counted
by the assembler itself (ignorable and dummy events skipped, bytes spilled) and the bytes its
state still holds in the spill store."""
from libs.stream.assembler import Assembler, AssemblerConfig, InMemorySpillStore
from libs.stream.assembler.file_spill import FileSpillStore
from libs.contracts.assembled import RecordKind
from libs.stages.counters import SourceCounters
from tests.unit.assembler.stream import place
from tests.unit.boundary import events as e

# one event per chunk: every frame of an open transaction is spilled as it comes
ONE_PER_CHUNK = AssemblerConfig(chunk_max_events=1)


class CountingStore(InMemorySpillStore):
    """Records the bytes of every put, for the counter to be compared with."""

    def __init__(self):
        super().__init__()
        self.put_bytes = 0

    def put(self, source, trx_key, chunk_no, data):
        self.put_bytes += len(data)
        super().put(source, trx_key, chunk_no, data)


def transaction(*inside):
    return [e.mysql_gtid(), e.query("BEGIN"), *inside, e.table_map(), e.write_rows({0: 1}), e.xid()]


def test_ignorable_and_dummy_events_are_counted_outside_and_inside_transactions():
    assembler = Assembler("src", InMemorySpillStore())
    assembler.feed(place([e.ignorable(), *transaction(e.ignorable(120), e.dummy_query()), e.dummy_query(),
                          e.ignorable(250)]))
    counts = SourceCounters.of(assembler.state, assembler.store, 1_700_000_000_000)
    assert (counts.ignorable_events, counts.dummy_events) == (3, 2)
    assert (counts.source, counts.oldest_kafka_ms) == ("src", 1_700_000_000_000)


def test_spilled_bytes_are_every_chunk_written_and_held_bytes_only_the_open_transaction():
    store = CountingStore()
    events = place(transaction(e.rows_query("INSERT INTO orders VALUES (1)")))
    assembler = Assembler("src", store, ONE_PER_CHUNK)
    assembler.feed(events[:4])  # GTID, BEGIN, Rows_query, Table_map: open
    open_now = SourceCounters.of(assembler.state, store, None)
    assert open_now.spilled_bytes_total == store.put_bytes == store.total_bytes() > 0
    assert open_now.spill_bytes == store.size("src", assembler.state.open.trx_key) == store.total_bytes()

    out = assembler.feed(events[4:])  # Write_rows, Xid: the transaction leaves whole
    assert len(out.transactions) == 1 and out.released
    closed = SourceCounters.of(assembler.state, store, None)
    assert closed.spill_bytes == 0  # its chunks wait for deletion in the store, held by nothing
    assert store.total_bytes() > 0
    assert closed.spilled_bytes_total == store.put_bytes > open_now.spilled_bytes_total


def test_a_retried_batch_reports_the_same_totals():
    """Totals come from the state: Spark's retry of a batch from the previous state counts the
    batch's events and spills once, not twice."""
    store = CountingStore()
    events = place([e.ignorable(), *transaction(e.dummy_query())])
    first = Assembler("src", store, ONE_PER_CHUNK)
    first.feed(events[:3])
    before = first.state.to_row()
    runs = []
    for _ in range(2):
        again = Assembler("src", store, ONE_PER_CHUNK, type(first.state).from_row(before))
        again.feed(events[3:])
        runs.append(SourceCounters.of(again.state, store, None))
    assert runs[0] == runs[1]
    assert (runs[0].ignorable_events, runs[0].dummy_events) == (1, 1)
    assert runs[0].spilled_bytes_total < store.put_bytes  # the store saw the retry's writes too


def test_the_record_round_trips_through_its_assembled_record_fields():
    counts = SourceCounters("s1", 4, 2, 1 << 33, 512, None)
    record = counts.record()
    assert record["kind"] == RecordKind.COUNTERS
    assert SourceCounters.from_record(record) == counts


def test_file_store_size_is_the_chunk_files_of_one_group(tmp_path):
    store = FileSpillStore(tmp_path)
    store.put("s", "f.000001:4", 0, b"abc")
    store.put("s", "f.000001:4", 1, b"de")
    store.put("s", "f.000001:900", 0, b"zzzz")
    assert store.size("s", "f.000001:4") == 5
    assert store.size("s", "f.000001:900") == 4
    assert store.size("s", "never") == 0
    store.delete("s", "f.000001:4", 2)
    assert store.size("s", "f.000001:4") == 0

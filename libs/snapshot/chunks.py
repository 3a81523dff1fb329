"""Pure parts of a snapshot run (no I/O): cutting a row stream into `rows` records, the per-table
progress line, and what the start decision needs of the source's last Kafka record.

Chunks are bounded twice, by rows (`max_rows`, cdc-ship --snapshot-chunk-rows) and by the bytes of
the raw values (`max_bytes`): a table of wide BLOB rows gives small chunks, a table of narrow rows
chunks of max_rows, and memory stays bounded whatever the table's size. A single row larger than
max_bytes goes alone in its chunk (it cannot be split; KafkaSink refuses it above 64 MB). Sizes
are counted per fetched batch with Arrow and numpy, not per value in Python (which was ~40% of
the shipper's time at 1M rows: bench/README.md).
"""
from __future__ import annotations

import sys
import time
from typing import Callable, Iterable, Iterator, TextIO

import numpy as np
import pyarrow as pa

from libs.contracts.topic import KafkaRecord
from libs.snapshot import DEFAULT_CHUNK_BYTES, DEFAULT_CHUNK_ROWS
from libs.snapshot.protocol import LastRecord
from libs.contracts.position import BinlogPosition
from libs.snapshot.record import SnapshotRecord

VALUE_OVERHEAD = 8  # bytes counted per value besides its length (Arrow: a 4-byte offset, validity)


def row_sizes(batch: pa.RecordBatch) -> np.ndarray:
    """The bytes each row of a fetched batch (chunk_values layout) counts for in a chunk's budget."""
    sizes = np.full(batch.num_rows, VALUE_OVERHEAD * batch.num_columns, dtype=np.int64)
    for column in batch.columns:
        sizes += _value_lengths(column)
    return sizes


def _value_lengths(column: pa.Array) -> np.ndarray:
    """Each value's length in bytes, 0 for NULL, read from the binary array's offsets and validity
    with numpy: pyarrow's fill_null(0) converts a Python scalar, which imports pandas (~0.8 s of
    the shipper's start, measured in the bench)."""
    n, start = len(column), column.offset
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    validity, offsets = column.buffers()[:2]
    lengths = np.diff(np.frombuffer(offsets, dtype=np.int32, count=start + n + 1)[start:]).astype(np.int64)
    if column.null_count:
        valid = np.unpackbits(np.frombuffer(validity, dtype=np.uint8), bitorder="little")[start:start + n]
        lengths[valid == 0] = 0
    return lengths


def cut_chunks(batches: Iterable[pa.RecordBatch], *, max_rows: int = DEFAULT_CHUNK_ROWS,
               max_bytes: int = DEFAULT_CHUNK_BYTES) -> Iterator[pa.Table]:
    """The rows of consecutive fetched batches, re-cut into chunks of at most max_rows rows and
    (unless a single row is larger) at most max_bytes by row_sizes. Lazy: holds one chunk and
    one fetched batch at a time. Slices, not copies: each chunk is encoded once, by the record."""
    if max_rows < 1 or max_bytes < 1:
        raise ValueError(f"chunk limits must be positive (rows {max_rows}, bytes {max_bytes})")
    pending: list[pa.RecordBatch] = []
    rows = size = 0
    for batch in batches:
        sizes, start = row_sizes(batch), 0
        while start < batch.num_rows:
            cumulative = np.cumsum(sizes[start:start + max_rows - rows])
            fit = int(np.searchsorted(cumulative, max_bytes - size, side="right"))
            if fit == 0 and rows == 0:
                fit = 1  # a row larger than max_bytes goes alone
            if fit:
                pending.append(batch.slice(start, fit))
                rows, size, start = rows + fit, size + int(cumulative[fit - 1]), start + fit
            if start < batch.num_rows or rows >= max_rows:  # the chunk is full
                yield pa.Table.from_batches(pending)
                pending, rows, size = [], 0, 0
    if pending:
        yield pa.Table.from_batches(pending)


def last_state(record: KafkaRecord | None) -> LastRecord | None:
    """protocol.LastRecord of the source's last record in the topic: a binlog event's end, or a
    snapshot record's header position C with its kind and remaining tables."""
    if record is None:
        return None
    position = BinlogPosition(record.binlog_file, record.end_pos)
    if not record.is_snapshot:  # a binlog event or a dump's Format_description
        return LastRecord(position)
    snap = SnapshotRecord.decode(record.value, head_only=True)  # its rows are not needed
    return LastRecord(position, snap.kind, tuple(snap.tables or ()))


class TableProgress:
    """One line on stderr every `interval_s` seconds while a table is read: rows so far, rows/s
    and an ETA against information_schema.TABLES.TABLE_ROWS, which InnoDB only estimates (it
    can be off by a large factor, so the ETA is a hint, never a limit)."""

    def __init__(self, source: str, table: str, estimated_rows: int | None, *,
                 interval_s: float = 5.0, out: TextIO | None = None,
                 clock: Callable[[], float] = time.monotonic):
        self.source, self.table, self.estimated = source, table, estimated_rows
        # sys.stderr as it is now, not as it was at import (a test's capture may have replaced it)
        self.interval_s, self.out, self.clock = interval_s, out or sys.stderr, clock
        self.rows = 0
        self.started = self._last = clock()

    def add(self, n: int) -> None:
        self.rows += n
        if self.clock() - self._last >= self.interval_s:
            self.report()

    def line(self) -> str:
        now = self.clock()
        rate = self.rows / max(now - self.started, 1e-9)
        if self.estimated is None:
            eta = "ETA ?"
        elif self.rows > self.estimated:
            eta = f"ETA ? (past the estimate of ~{self.estimated:,} rows)"
        else:
            left_s = (self.estimated - self.rows) / max(rate, 1e-9)
            eta = f"ETA {left_s:,.0f} s (of ~{self.estimated:,} rows, estimated)"
        return (f"cdc-ship {self.source}: snapshot {self.table}: {self.rows:,} rows, "
                f"{rate:,.0f} rows/s, {eta}")

    def report(self) -> None:
        print(self.line(), file=self.out, flush=True)
        self._last = self.clock()

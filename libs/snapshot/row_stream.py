"""A text-protocol result set's row packets -> record batches of chunk_values' layout, parsed by
the compiled libs/snapshot/_textrows.c with no Python object per cell.

Per value, a client library makes a Python bytes object, then `pa.array` reads them back into
Arrow buffers: measured on the bench's 1M rows (bench/README.md, issue #16), that was most of the
shipper's time. _textrows.parse writes each column's validity bitmap, int32 offsets and data
straight from the packets, and `pa.Array.from_buffers` wraps them without a copy.

The packets come from a `Packets` source (libs/snapshot/pymysql_wire.py on a live connection):
blocks are read into one buffer; a dry parse counts the whole rows read so far (cheap: lengths
only), and when a batch's worth is there, or the terminator, the batch is parsed and the bytes
after its last row (a partial packet) move to the buffer's front for the next one.
"""
from __future__ import annotations

from typing import Iterator, Protocol, Sequence

import pyarrow as pa

from libs.snapshot import chunk_values
from libs.snapshot.values import SourceColumn

try:
    from libs.snapshot._textrows import parse
    NATIVE = True
except ImportError:  # no compiler at install time: source.py reads rows with PyMySQL (and says so)
    parse = None
    NATIVE = False

READ_BYTES = 1 << 20  # room kept free for each socket read
END_NONE, END_EOF, END_ERR = 0, 1, 2


class Packets(Protocol):
    seq: int  # the sequence id of the first row packet

    def readinto1(self, view: memoryview) -> int: ...  # >= 1 bytes, or raises
    def finish(self, seq: int, terminator: bytes) -> None: ...  # raises on an ERR packet
    def abandon(self) -> None: ...


class RowStreamError(ValueError):
    """The row packets are malformed (sequence id, a value past its packet, ...)."""


def batches(packets: Packets, columns: Sequence[SourceColumn], *, max_rows: int,
            max_bytes: int) -> Iterator[pa.RecordBatch]:
    """The result's rows in batches of at most max_rows rows and, unless one row is larger,
    max_bytes of values. `packets` is finished at the terminator, abandoned when the caller stops
    early or the packets are malformed."""
    reader = _Reader(packets, len(columns), max_rows, max_bytes)
    schema = chunk_values.schema(columns)
    try:
        while (parsed := reader.next_batch()) is not None:
            rows, arrays = parsed
            if rows:
                yield pa.RecordBatch.from_arrays([_array(rows, *a) for a in arrays], schema=schema)
    except BaseException:
        if not reader.finished:
            packets.abandon()
        raise


def _array(rows: int, validity, offsets, data, nulls: int) -> pa.Array:
    bitmap = None if validity is None else pa.py_buffer(validity)
    return pa.Array.from_buffers(pa.binary(), rows, [bitmap, pa.py_buffer(offsets), pa.py_buffer(data)],
                                 null_count=nulls)


class _Reader:
    """buf[start:filled] holds the bytes read and not parsed yet, from a packet's start."""

    def __init__(self, packets: Packets, width: int, max_rows: int, max_bytes: int):
        if max_rows < 1 or max_bytes < 1:
            raise ValueError(f"batch limits must be positive (rows {max_rows}, bytes {max_bytes})")
        self.packets, self.width, self.max_rows, self.max_bytes = packets, width, max_rows, max_bytes
        self.buf = bytearray(max_bytes + READ_BYTES)
        self.start = self.filled = 0
        self.seq = packets.seq   # the sequence id of the packet at buf[start]
        self.finished = False

    def next_batch(self):
        """(rows, column buffers) of the next batch, None after the terminator."""
        if self.finished:
            return None
        self._read_batch()
        consumed, rows, seq, end, terminator, _need, arrays = self._parse(self.start, self.seq, self.max_rows)
        self.start, self.seq = self.start + consumed, seq
        if end != END_NONE:
            self.finished = True  # the connection is PyMySQL's again, whatever follows
            if self.filled > self.start:
                self.packets.abandon()
                raise RowStreamError(f"snapshot row packets: {self.filled - self.start} bytes after the "
                                     f"result set's end")
            self.packets.finish(seq, terminator)
        return rows, arrays

    def _parse(self, at: int, seq: int, max_rows: int, dry: bool = False):
        view = memoryview(self.buf)[at:self.filled]
        try:
            return parse(view, self.width, seq, max_rows, self.max_bytes, dry)
        except ValueError as exc:
            raise RowStreamError(f"snapshot row packets: {exc}") from None
        finally:
            view.release()

    def _read_batch(self) -> None:
        """Read until buf holds a batch's rows, or the terminator, as whole packets."""
        scanned, seq, rows = 0, self.seq, 0  # what dry parses have counted after buf[start]
        while True:
            consumed, more, seq, end, _t, need, _a = self._parse(
                self.start + scanned, seq, self.max_rows - rows, dry=True)
            scanned, rows = scanned + consumed, rows + more
            if end != END_NONE or rows >= self.max_rows or (more and not need) or scanned >= self.max_bytes:
                return
            self._read(max(need, 1))  # may move buf[start:] to the front

    def _read(self, need: int) -> None:
        """At least `need` more bytes into buf. The unparsed bytes move to its front only when
        the room after them is short (not after every batch), and buf grows when a packet is
        larger than it."""
        room = max(need, READ_BYTES)
        if len(self.buf) - self.filled < room:
            left = self.filled - self.start
            self.buf[:left] = self.buf[self.start:self.filled]
            self.start, self.filled = 0, left
            if len(self.buf) - left < room:
                self.buf.extend(bytes(room - (len(self.buf) - left)))
        goal = self.filled + need
        while self.filled < goal:
            view = memoryview(self.buf)[self.filled:]
            try:
                self.filled += self.packets.readinto1(view)
            finally:
                view.release()

"""A snapshot chunk's values, column by column: the server's bytes <-> Arrow IPC (no Spark).

The shipper does not convert a snapshot's values; it ships the bytes the server sent, as it ships
the binlog's bytes (DESIGN.md "Kafka record": the raw contract), and the rows stage converts them
on the executors with the binlog path's rules (libs/snapshot/values.py column_value). Per column,
not per cell: a chunk of 5,000 rows is one `pa.array` per column, built and serialised in
Arrow's C++ (measured with bench/snapshot_bench.py: ~1.5M rows/s fetched and encoded, where a
ColumnValue dict per cell plus its Avro encoding gave 36k rows/s).

Layout (schemas/snapshot_record.avsc `values`): an Arrow IPC stream of record batches, one
nullable binary column per source column, named c<ordinal>, null = SQL NULL.
"""
from __future__ import annotations

from typing import Sequence

import pyarrow as pa

from libs.snapshot.values import SourceColumn, column_value


def _field(column: SourceColumn) -> pa.Field:
    return pa.field(f"c{column.ordinal}", pa.binary())


def schema(columns: Sequence[SourceColumn]) -> pa.Schema:
    return pa.schema([_field(c) for c in columns])


def batch(columns: Sequence[SourceColumn], rows: Sequence[Sequence[bytes | None]]) -> pa.RecordBatch:
    """Rows as the driver gives them (one value per column, bytes or None) -> one column each."""
    if rows and len(rows[0]) != len(columns):
        raise ValueError(f"row of {len(rows[0])} values for {len(columns)} columns")
    arrays = ([pa.array(values, type=pa.binary()) for values in zip(*rows)] if rows
              else [pa.array([], type=pa.binary()) for _ in columns])
    return pa.RecordBatch.from_arrays(arrays, schema=schema(columns))


def encode(columns: Sequence[SourceColumn], rows) -> bytes:
    """The IPC bytes of `rows`: a pa.Table / RecordBatch of batch()'s layout, or row tuples."""
    data = rows if isinstance(rows, pa.Table | pa.RecordBatch) else batch(columns, rows)
    if data.schema != schema(columns):
        raise ValueError(f"chunk columns {data.schema.names} do not match {schema(columns).names}")
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, data.schema) as writer:
        writer.write(data)
    return sink.getvalue().to_pybytes()


def table(columns: Sequence[SourceColumn], raw: bytes) -> pa.Table:
    """The chunk as its Arrow table (column i = columns[i]'s bytes); ValueError when `raw` is not a
    chunk of these columns."""
    try:
        data = pa.ipc.open_stream(raw).read_all()
    except (pa.ArrowInvalid, OSError) as exc:
        raise ValueError(f"snapshot chunk values are not an Arrow IPC stream ({exc})") from None
    expected = [_field(c).name for c in columns]
    if data.column_names != expected or any(not pa.types.is_binary(t) for t in data.schema.types):
        raise ValueError(f"snapshot chunk columns {data.schema} do not match the record's columns {expected}")
    return data


def decode(columns: Sequence[SourceColumn], raw: bytes) -> list[list[bytes | None]]:
    """The server's bytes per column (list i = column i's values); ValueError as `table`."""
    data = table(columns, raw)
    return [data.column(i).to_pylist() for i in range(data.num_columns)]


def row_images(columns: Sequence[SourceColumn], raw: bytes) -> list[list[dict]]:
    """Each row's ColumnValues, every column in ordinal order: what the binlog path makes of the
    same row (an INSERT's FULL after image)."""
    per_column = decode(columns, raw)
    order = sorted(range(len(columns)), key=lambda i: columns[i].ordinal)
    converted = [[column_value(columns[i], value) for value in per_column[i]] for i in order]
    return [list(row) for row in zip(*converted)]

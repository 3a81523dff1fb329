"""A snapshot chunk's after images built column by column (libs/snapshot/chunk_images.py) equal
the cell-by-cell ColumnValues (chunk_values.row_images), for every row of the snapshot/binlog
parity table, and the rows stage's Arrow change records equal change_records' dicts."""
import pyarrow as pa
import pytest

from libs.snapshot import chunk_values
from libs.snapshot.changes import change_batch, change_records
from libs.snapshot.chunk_images import _by_kernel, after_images
from libs.snapshot.record import SnapshotRecord
from libs.snapshot.values import SourceColumn, type_code

from .test_snapshot_values import ROWS as PARITY

SYSBENCH = (SourceColumn(0, "id", "int", "int(11)", None),
            SourceColumn(1, "k", "int", "int(10) unsigned zerofill", None),
            SourceColumn(2, "c", "char", "char(120)", "latin1"),
            SourceColumn(3, "pad", "char", "char(60)", "utf8mb4"))


def _same(columns, rows):
    raw = chunk_values.encode(columns, rows)
    assert after_images(columns, raw).to_pylist() == chunk_values.row_images(columns, raw)


@pytest.mark.parametrize("case", PARITY, ids=[r[-1] for r in PARITY])
def test_each_type_as_the_cells_give_it(case):
    column_type, data_type, charset, raw = case[:4]
    _same((SourceColumn(3, "c", data_type, column_type, charset),), [(raw,), (None,), (raw,)])


def test_every_type_in_one_chunk_in_any_column_order():
    columns = [SourceColumn(i, f"c{i}", r[1], r[0], r[2]) for i, r in enumerate(PARITY)]
    shuffled = columns[1::2] + columns[::2]  # the record may list columns in any order
    row = {c.ordinal: PARITY[c.ordinal][3] for c in columns}
    _same(tuple(shuffled), [tuple(row[c.ordinal] for c in shuffled), tuple(None for _ in shuffled)])


@pytest.mark.parametrize("values", [
    [b"1", b"-2", b"0007"],                     # kernel
    [b"1", b"18446744073709551615"],            # beyond int64: cell by cell
], ids=["int64", "bigint unsigned max"])
def test_integers(values):
    _same((SourceColumn(0, "n", "bigint", "bigint(20) unsigned", None),), [(v,) for v in values])


def test_one_non_ascii_value_sends_its_column_cell_by_cell():
    column = SourceColumn(0, "s", "varchar", "varchar(9)", "latin1")
    _same((column,), [(b"plain",), (b"caf\xe9",), (b"\x81",)])  # cp1252 and one of its five holes
    assert _by_kernel(column, pa.array([b"caf\xe9"], pa.binary()), type_code(column)) is None


def test_ascii_bytes_of_a_wide_charset_are_not_ascii_text():
    column = SourceColumn(0, "w", "char", "char(4)", "utf16")  # b"\x00a\x00b" is 'ab', not '\x00a\x00b'
    _same((column,), [("ab".encode("utf-16-be"),), ("z".encode("utf-16-be"),)])


def test_sysbench_columns_take_the_kernels():
    rows = [(str(i).encode(), b"%010d" % i, b"68487932199-96439406143" * 5, b"22195207048-70116052123")
            for i in range(50)]
    _same(SYSBENCH, rows)
    table = chunk_values.table(SYSBENCH, chunk_values.encode(SYSBENCH, rows))
    for i, column in enumerate(SYSBENCH):
        assert _by_kernel(column, table.column(i).combine_chunks(), type_code(column)) is not None


def test_the_change_batch_is_the_change_records():
    from pyspark.sql.pandas.types import to_arrow_schema
    from pipelines.stages.rows import decoded_schema

    rows = [(b"1", b"7", b"x", None), (b"2", None, b"caf\xe9", b"")]
    record = SnapshotRecord.chunk(SYSBENCH, rows, statement="SELECT 1", chunk_no=2, snapshot_id="run",
                                  binlog_file="f", binlog_pos=4, server_id=9, snapshot_ts=10**15,
                                  gtid="0-9-1", database="d", table="t")
    schema = to_arrow_schema(decoded_schema())
    assert change_batch("src", record, schema).to_pylist() == \
        pa.RecordBatch.from_pylist(change_records("src", record), schema=schema).to_pylist()

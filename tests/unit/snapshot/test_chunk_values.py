"""A snapshot chunk's values through the record's Arrow layout (libs/snapshot/chunk_values.py):
the server's bytes come back unchanged, column by column, NULLs included, and convert to the
ColumnValues of values.column_value; bytes that are not a chunk of the record's columns raise
ValueError, which the rows stage turns into a quarantined snapshot table (rows.py)."""
import pytest

from libs.snapshot import chunk_values
from libs.snapshot.changes import change_records
from libs.snapshot.record import ROWS, SnapshotRecord
from libs.snapshot.values import SourceColumn, column_value

COLUMNS = (SourceColumn(0, "id", "int", "int(11)", None),
           SourceColumn(1, "name", "varchar", "varchar(9)", "latin1"),
           SourceColumn(2, "data", "blob", "blob", None))
ROWS_RAW = [(b"1", b"caf\xe9", b"\x00\xff"), (b"2", None, b""), (b"-3", b"", None)]


def test_round_trip_keeps_every_byte_and_null():
    raw = chunk_values.encode(COLUMNS, ROWS_RAW)
    assert chunk_values.decode(COLUMNS, raw) == [list(col) for col in zip(*ROWS_RAW)]


def test_an_empty_chunk():
    assert chunk_values.decode(COLUMNS, chunk_values.encode(COLUMNS, [])) == [[], [], []]


def test_row_images_are_column_value_of_each_cell_in_ordinal_order():
    shuffled = (COLUMNS[2], COLUMNS[0], COLUMNS[1])  # the record may list columns in any order
    rows = [(r[2], r[0], r[1]) for r in ROWS_RAW]
    images = chunk_values.row_images(shuffled, chunk_values.encode(shuffled, rows))
    assert images == [[column_value(c, v) for c, v in zip(COLUMNS, row)] for row in ROWS_RAW]
    assert images[0][1]["text"] == "café"  # latin1, decoded by the column's charset


@pytest.mark.parametrize("raw", [b"", b"\x00garbage", chunk_values.encode(COLUMNS[:2], [(b"1", b"x")])])
def test_bytes_that_are_not_a_chunk_of_these_columns_raise_value_error(raw):
    with pytest.raises(ValueError, match="snapshot chunk"):
        chunk_values.decode(COLUMNS, raw)


def test_a_row_of_the_wrong_width_is_refused_when_encoding():
    with pytest.raises(ValueError, match="row of 2 values for 3 columns"):
        chunk_values.encode(COLUMNS, [(b"1", b"x")])


def test_a_record_whose_values_do_not_decode_fails_its_change_records():
    record = SnapshotRecord(ROWS, "run", "f", 4, 1, 0, database="d", table="t", chunk_no=0, columns=COLUMNS,
                            values=b"\x00garbage", statement="SELECT 1", row_count=1)
    decoded = SnapshotRecord.decode(record.encode())
    with pytest.raises(ValueError, match="snapshot chunk"):
        change_records("src", decoded)

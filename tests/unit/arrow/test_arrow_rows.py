"""libs/contracts/arrow_rows.py gives exactly pa.Table.to_pylist(): random tables of the shapes it handles
itself (flat, struct<flat>, list<flat>, list<struct<flat>>) and one it hands back to
to_pylist, with nulls at every level, sliced and multi-chunk columns."""
import datetime as dt
import decimal

import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from libs.contracts.arrow_rows import column_values, rows

COLUMN_VALUE = pa.struct([pa.field("ordinal", pa.int32(), nullable=False), pa.field("name", pa.string()),
                          pa.field("text", pa.string()), pa.field("binary", pa.binary())])
TYPES = {
    "i64": (pa.int64(), st.integers(-2**63, 2**63 - 1)),
    "i8": (pa.int8(), st.integers(-128, 127)),
    "u64": (pa.uint64(), st.integers(0, 2**64 - 1)),
    "f32": (pa.float32(), st.floats(width=32, allow_nan=False)),
    "f64": (pa.float64(), st.floats(allow_nan=False)),
    "bool": (pa.bool_(), st.booleans()),
    "str": (pa.string(), st.text(max_size=6)),
    "lstr": (pa.large_string(), st.text(max_size=6)),
    "bin": (pa.binary(), st.binary(max_size=6)),
    "ts": (pa.timestamp("us", tz="UTC"), st.datetimes(min_value=dt.datetime(1970, 1, 1),
                                                      timezones=st.just(dt.timezone.utc))),
    "dec": (pa.decimal128(9, 2), st.decimals(min_value=-10**6, max_value=10**6, places=2, allow_nan=False)),
}
STRUCT_VALUE = st.fixed_dictionaries({
    "ordinal": st.integers(0, 100), "name": st.none() | st.text(max_size=4),
    "text": st.none() | st.text(max_size=4), "binary": st.none() | st.binary(max_size=4)})


@st.composite
def tables(draw):
    n = draw(st.integers(0, 12))
    columns, fields = [], []
    for i, key in enumerate(draw(st.lists(st.sampled_from(sorted(TYPES)), min_size=1, max_size=4))):
        kind, values = TYPES[key]
        fields.append(pa.field(f"c{i}_{key}", kind))
        columns.append(draw(st.lists(st.none() | values, min_size=n, max_size=n)))
    fields.append(pa.field("image", pa.list_(COLUMN_VALUE)))
    columns.append(draw(st.lists(st.none() | st.lists(STRUCT_VALUE, max_size=3), min_size=n, max_size=n)))
    fields.append(pa.field("ints", pa.list_(pa.int64())))
    columns.append(draw(st.lists(st.none() | st.lists(st.none() | st.integers(-5, 5), max_size=3),
                                 min_size=n, max_size=n)))
    fields.append(pa.field("pair", pa.struct([pa.field("a", pa.int32()), pa.field("b", pa.string())])))
    columns.append(draw(st.lists(st.none() | st.fixed_dictionaries(
        {"a": st.none() | st.integers(-5, 5), "b": st.none() | st.text(max_size=3)}),
        min_size=n, max_size=n)))
    fields.append(pa.field("nested", pa.list_(pa.list_(pa.int8()))))  # not handled here: to_pylist
    columns.append(draw(st.lists(st.none() | st.lists(st.lists(st.integers(0, 9), max_size=2), max_size=2),
                                 min_size=n, max_size=n)))
    table = pa.Table.from_pylist([dict(zip([f.name for f in fields], r)) for r in zip(*columns)]
                                 if n else [], schema=pa.schema(fields))
    cut = draw(st.integers(0, n))
    if draw(st.booleans()):  # two chunks, the second a slice of a bigger array
        table = pa.concat_tables([table.slice(0, cut), table.slice(cut)])
    start = draw(st.integers(0, n))
    return table.slice(start, draw(st.integers(0, n - start)))


@settings(max_examples=300, deadline=None)
@given(tables())
def test_rows_equal_to_pylist(table):
    expected = table.to_pylist()
    assert rows(table) == expected
    for batch in table.to_batches():
        assert rows(batch) == batch.to_pylist()


def test_values_keep_their_python_types():
    table = pa.table({"i": pa.array([1, None], pa.int64()), "f": pa.array([0.5, None], pa.float32()),
                      "s": ["a", None], "b": pa.array([b"\x00", None]),
                      "d": pa.array([decimal.Decimal("1.50"), None]),
                      "image": pa.array([[{"ordinal": 0, "name": None, "text": "x", "binary": None}], None],
                                        pa.list_(COLUMN_VALUE))})
    got = rows(table)
    assert got == table.to_pylist()
    assert [type(v) for v in got[0].values()] == [int, float, str, bytes, decimal.Decimal, list]
    assert [type(v) for v in column_values(table.column("image"))[0][0].values()] == [
        int, type(None), str, type(None)]

"""libs/contracts/change.py: the apply stage's change record is schemas/change_record.avsc field for
field, its ops the schema's symbols (and the one the apply stage adds), and the Arrow batch the
driver collects reads into the same Changes as its records one by one."""
import datetime as dt

import pyarrow as pa
import pytest

from libs.contracts.change import FIELDS, ROW_OPS, WIRE_OPS, Change, ColumnValue, Op, changes_of, op_of
from libs.contracts.avro_schemas import avro_schema, field_names
from tests.change_builders import Source, change_of


def test_the_fields_are_the_schemas_in_its_order():
    assert FIELDS == field_names("change_record")


def test_the_ops_on_the_wire_are_the_schemas_symbols():
    (op_field,) = [f for f in avro_schema("change_record")["fields"] if f["name"] == "op"]
    assert {op.value for op in WIRE_OPS} == set(op_field["type"]["symbols"])
    assert set(Op) - WIRE_OPS == {Op.SUPERSEDED}
    assert ROW_OPS == {Op.INSERT, Op.UPDATE, Op.DELETE}


def _records():
    src = Source("d", "t", ["id", "name", "blob"])
    return [c.to_record() for c in (
        src.insert({"id": 1, "name": "a", "blob": b"\x00\xff"}, statement="INSERT ..."),
        src.update({"id": 1}, {"name": None}),
        src.delete({"id": 1, "name": None}),
        change_of("ddl", statement="ALTER TABLE t ADD c INT", gtid=None, xid=None),
    )]


def test_an_arrow_batch_reads_as_its_records_do():
    records = _records()
    table = pa.Table.from_pylist(records)
    from_arrow = changes_of(table)
    assert from_arrow == [Change.of(r) for r in table.to_pylist()]
    assert [c.op for c in from_arrow] == [Op.INSERT, Op.UPDATE, Op.DELETE, Op.DDL]
    assert all(type(c.op) is Op for c in from_arrow)
    assert from_arrow[0].after[2] == {"ordinal": 2, "name": "blob", "type_code": 3, "text": None,
                                      "binary": b"\x00\xff"}
    assert from_arrow[1].after[0]["text"] is None and from_arrow[2].after is None
    # columns beyond the schema's (the collected batch's own) are left out
    wider = table.append_column("kafka_offset", pa.array([1, 2, 3, 4]))
    assert changes_of(wider) == from_arrow


def test_a_record_and_its_change_round_trip():
    for record in _records():
        change = Change.of(record)
        assert change.to_record() == record and type(change.to_record()["op"]) is str


def test_what_is_not_a_change_record_is_refused():
    record = _records()[0]
    with pytest.raises(ValueError, match="unknown change op 'upsert'"):
        Change.of({**record, "op": "upsert"})
    with pytest.raises(ValueError, match=r"not change record fields: \['opp'\]"):
        Change.of({**record, "opp": "insert"})
    with pytest.raises(ValueError, match=r"change records without \['binlog_pos'\]"):
        changes_of(pa.Table.from_pylist(_records()).drop_columns(["binlog_pos"]))
    with pytest.raises(ValueError, match="unknown change op"):
        op_of("INSERT")  # the schema's symbols are lower case


def test_derived_changes_leave_the_original_as_it_was():
    change = change_of("insert",
                       after=[{"ordinal": 0, "name": "a", "type_code": 3, "text": "1", "binary": None}],
                       commit_ts=dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc))
    assert change.with_op(Op.SUPERSEDED).op == Op.SUPERSEDED and change.op == Op.INSERT
    moved = change.with_table("e", "u")
    assert (moved.database, moved.table) == ("e", "u") and (change.database, change.table) == ("d", "t")
    assert change.with_filled({"c": 1}).filled == {"c": 1} and change.filled is None
    assert change.with_images(None, []).after == [] and len(change.after) == 1


def test_a_column_value_is_the_schemas_record():
    (before,) = [f for f in avro_schema("change_record")["fields"] if f["name"] == "before"]
    record = before["type"][1]["items"]
    assert record["name"] == ColumnValue.__name__
    assert list(ColumnValue.__annotations__) == [f["name"] for f in record["fields"]]
    assert list(Source("d", "t", ["id"]).image({"id": 1})[0]) == list(ColumnValue.__annotations__)

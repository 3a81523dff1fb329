"""libs/contracts/position.py: one binlog position type, one order, and the commit order built on it."""
from __future__ import annotations

from dataclasses import fields

import pytest

from libs.contracts.avro_schemas import avro_schema
from libs.contracts.position import BinlogPosition, GtidPosition, commit_key, position_key, sort_key_of

ORDERED = [  # as servers write them
    ("mdb-bin.000009", 4), ("mdb-bin.000009", 1250), ("mdb-bin.000010", 4),
    ("mdb-bin.999999", 90), ("mdb-bin.1000000", 4),  # the number grows past six digits
    ("1/other-bin.000001", 4),  # after a server move (epoch 1), whatever the names
]


def test_positions_order_as_servers_write_them_and_not_as_text():
    positions = [BinlogPosition(f, p) for f, p in ORDERED]
    assert sorted(reversed(positions)) == positions
    assert BinlogPosition("mdb-bin.999999", 90) < BinlogPosition("mdb-bin.1000000", 4)
    assert "mdb-bin.999999" > "mdb-bin.1000000"  # as text it would be the other way round
    assert BinlogPosition("b.000002", 7) == BinlogPosition("b.000002", 7) <= BinlogPosition("b.000002", 7)


def test_the_commit_order_extends_the_position_order():
    for (f1, p1), (f2, p2) in zip(ORDERED, ORDERED[1:]):
        assert commit_key(f1, p1, 10**12, 99) < commit_key(f2, p2, 0, 0)
        assert commit_key(f1, p1, 5, 1)[:len(position_key(f1, p1))] == BinlogPosition(f1, p1).key()
    assert sort_key_of("s", "b.000001", 4, 7, 2) == ("s", *commit_key("b.000001", 4, 7, 2))


def test_a_position_reads_and_prints_as_file_colon_pos():
    assert BinlogPosition.parse("1/mdb-bin.000003:1234") == BinlogPosition("1/mdb-bin.000003", 1234)
    assert str(BinlogPosition("mdb-bin.000003", 1234)) == "mdb-bin.000003:1234"
    for bad in ("mdb-bin.000003", ":4", "f:x", "f:-1"):
        with pytest.raises(ValueError, match="must be FILE:POS"):
            BinlogPosition.parse(bad)


def test_a_gtid_position_is_the_progress_schemas_record():
    (positions,) = [f for f in avro_schema("progress_record")["fields"] if f["name"] == "gtid_positions"]
    record = positions["type"][1]["items"]
    assert record["name"] == GtidPosition.__name__
    assert [f.name for f in fields(GtidPosition)] == [f["name"] for f in record["fields"]]
    assert list(GtidPosition("0", 7, "0-1-7").to_record()) == [f["name"] for f in record["fields"]]

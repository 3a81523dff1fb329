"""Replica command payloads, field by field (sql_repl.cc register_slave / com_binlog_dump)."""
import struct
import uuid

import pytest

from libs.source import replica_protocol as proto


def test_register_slave_layout():
    got = proto.register_slave(4242, host="h", user="cdc", password="", port=3306)
    assert got == (struct.pack("<I", 4242) + b"\x01h" + b"\x03cdc" + b"\x00"
                   + struct.pack("<H", 3306) + struct.pack("<I", 0) + struct.pack("<I", 0))


def test_binlog_dump_layout_with_annotate_flag():
    got = proto.binlog_dump("mdb-bin.000003", 1234, 9001)
    assert got == struct.pack("<IHI", 1234, 2, 9001) + b"mdb-bin.000003"


def test_binlog_dump_rejects_positions_below_4():
    with pytest.raises(ValueError, match="position 3"):
        proto.binlog_dump("f", 3, 1)


def test_mysql_gtid_set_encoding_merges_sids_and_uses_exclusive_ends():
    a = "3e11fa47-71ca-11e1-9e33-c80aa9429562"
    got = proto.encode_mysql_gtid_set(f"{a}:1-5:7")
    want = (struct.pack("<Q", 1) + uuid.UUID(a).bytes + struct.pack("<Q", 2)
            + struct.pack("<QQ", 1, 6) + struct.pack("<QQ", 7, 8))
    assert got == want


def test_binlog_dump_gtid_layout():
    a = "3e11fa47-71ca-11e1-9e33-c80aa9429562"
    data = proto.encode_mysql_gtid_set(f"{a}:1-2")
    got = proto.binlog_dump_gtid(f"{a}:1-2", 7)
    assert got == (struct.pack("<HII", 4, 7, 0) + struct.pack("<QI", 4, len(data)) + data)


@pytest.mark.parametrize("text, ok", [("0-1-5", True), ("0-1-5,7-99-1000", True),
                                      ("3e11fa47-71ca-11e1-9e33-c80aa9429562:1-5", False)])
def test_mariadb_gtid_state_recognised(text, ok):
    assert proto.is_mariadb_gtid_state(text) is ok


def test_bad_mysql_gtid_interval_is_named():
    with pytest.raises(ValueError, match="'5-1'"):
        proto.encode_mysql_gtid_set("3e11fa47-71ca-11e1-9e33-c80aa9429562:5-1")

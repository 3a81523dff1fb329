"""libs/snapshot/values.py as a table: one row per type (the kinds of
tests/unit/targets/test_type_mapping.py), with the bytes a MariaDB 10.11 server really sends for
the column's select_expression under SESSION_SETUP and pymysql_wire.RAW_BYTES (recorded from the type
matrix of tests/integration/snapshot/test_snapshot_value_parity.py), and the value the binlog
decoder produces for the same cell (libs/binlog/values.py: int, Decimal, float, temporal text,
bytes, ENUM index / SET bitmask + labels) with what the Table_map tells the binlog path under
binlog_row_metadata=FULL (collation id, labels). The expected ColumnValue is the binlog path's:
libs/stream/assembler/values.column_value of that decoder value."""
from __future__ import annotations

import struct
from decimal import Decimal

import pytest

from libs.stream.assembler.values import column_value as binlog_column_value
from libs.binlog.constants import ColumnType as T
from libs.snapshot.values import (COLUMNS_QUERY, RULES, SESSION_SETUP, SourceColumn, column_value,
                                  select_expression, source_column)


def f32(value: float) -> float:
    """The single-precision float a FLOAT column stores for `value` (the decoder widens it)."""
    return struct.unpack("<f", struct.pack("<f", value))[0]


TIER = ("bronze", "silver", "gold", "platinum")
QUOTED = ("it's", "back\\slash", "a,b")
# MariaDB 10.11 collation ids the FULL Table_map carries (SHOW COLLATION): utf8mb4_general_ci 45,
# utf8mb4_bin 46, latin1_swedish_ci 8, cp1251_general_ci 51, utf16_general_ci 54,
# ascii_general_ci 11, binary 63.

# (COLUMN_TYPE, DATA_TYPE, CHARACTER_SET_NAME, bytes sent, Table_map type, decoder value,
#  Table_map collation, labels, family, where the bytes were seen)
ROWS = [
    ("tinyint(4)", "tinyint", None, b"-128", T.TINY, -128, None, None, None, "t_int id=1 ti"),
    ("tinyint(3) unsigned", "tinyint", None, b"255", T.TINY, 255, None, None, None, "t_int id=2 tiu"),
    ("smallint(5) unsigned", "smallint", None, b"65535", T.SHORT, 65535, None, None, None, "t_int id=2 siu"),
    ("mediumint(8) unsigned", "mediumint", None, b"16777215", T.INT24, 16777215, None, None, None,
     "t_int id=2 miu"),
    ("int(10) unsigned", "int", None, b"4294967295", T.LONG, 4294967295, None, None, None, "t_int id=2 iu"),
    ("int(5) unsigned zerofill", "int", None, b"00042", T.LONG, 42, None, None, None,
     "t_int id=2 z (pad: display)"),
    ("bigint(20)", "bigint", None, b"-9223372036854775808", T.LONGLONG, -2**63, None, None, None,
     "t_int id=1 bi"),
    ("bigint(20) unsigned", "bigint", None, b"18446744073709551615", T.LONGLONG, 2**64 - 1, None, None, None,
     "t_int id=2 biu"),
    ("decimal(65,30)", "decimal", None, b"0.000000000000000000000000000001", T.NEWDECIMAL,
     Decimal("0.000000000000000000000000000001"), None, None, None, "t_num id=2 d65"),
    ("decimal(38,19)", "decimal", None, b"-0.0000000000000000001", T.NEWDECIMAL,
     Decimal("-0.0000000000000000001"), None, None, None, "t_num id=2 d38"),
    ("decimal(10,2) unsigned", "decimal", None, b"0.00", T.NEWDECIMAL, Decimal("0.00"), None, None, None,
     "t_num id=2 du (scale kept)"),
    ("float", "float", None, b"3.402820018375656e38", T.FLOAT, f32(3.40282e38), None, None, None,
     "t_num id=1 f (CAST AS DOUBLE; plain SELECT prints 3.40282e38)"),
    ("float", "float", None, b"16777215", T.FLOAT, 16777215.0, None, None, None,
     "extra id=1 (plain SELECT prints 1.67772e7)"),
    ("float", "float", None, b"1.401298464324817e-45", T.FLOAT, f32(1.401298e-45), None, None, None,
     "t_num id=2 f (denormal)"),
    ("float(10,3)", "float", None, b"1.2350000143051147", T.FLOAT, f32(1.235), None, None, None,
     "extra id=1 f3 (plain SELECT prints 1.235)"),
    ("double", "double", None, b"5e-324", T.DOUBLE, 5e-324, None, None, None, "t_num id=2 d (denormal)"),
    ("double", "double", None, b"0.30000000000000004", T.DOUBLE, 0.1 + 0.2, None, None, None, "extra id=1 d"),
    ("bit(1)", "bit", None, b"\x01", T.BIT, 1, None, None, None, "t_num id=1 b1"),
    ("bit(17)", "bit", None, b"\x01\x00\x01", T.BIT, 0x10001, None, None, None, "t_num id=1 b17"),
    ("bit(64)", "bit", None, b"\xff" * 8, T.BIT, 2**64 - 1, None, None, None, "t_num id=1 b64"),
    ("year(4)", "year", None, b"0000", T.YEAR, 0, None, None, None, "t_time id=2 y (zero year)"),
    ("year(4)", "year", None, b"2155", T.YEAR, 2155, None, None, None, "t_time id=3 y"),
    ("date", "date", None, b"1000-01-01", T.DATE, "1000-01-01", None, None, None, "t_time id=1 dt"),
    ("date", "date", None, b"0000-00-00", T.DATE, "0000-00-00", None, None, None, "t_time id=2 dt (zero)"),
    ("date", "date", None, b"2024-00-00", T.DATE, "2024-00-00", None, None, None, "t_time id=3 dt (partial)"),
    ("time", "time", None, b"-838:59:59", T.TIME2, "-838:59:59", None, None, None, "t_time id=1 t0"),
    ("time(6)", "time", None, b"-00:00:00.000001", T.TIME2, "-00:00:00.000001", None, None, None,
     "t_time id=2 t6"),
    ("datetime(3)", "datetime", None, b"2024-00-00 00:00:00.000", T.DATETIME2, "2024-00-00 00:00:00.000",
     None, None, None, "t_time id=2 dt3 (partial)"),
    ("datetime(6)", "datetime", None, b"9999-12-31 23:59:59.999999", T.DATETIME2,
     "9999-12-31 23:59:59.999999", None, None, None, "t_time id=1 dt6"),
    ("timestamp", "timestamp", None, b"1709210096", T.TIMESTAMP2, "1709210096", None, None, None,
     "t_time id=3 ts0 (UNIX_TIMESTAMP)"),
    ("timestamp", "timestamp", None, b"0", T.TIMESTAMP2, "0", None, None, None, "t_time id=2 ts0 (zero)"),
    ("timestamp(6)", "timestamp", None, b"1000000000.500000", T.TIMESTAMP2, "1000000000.500000",
     None, None, None, "t_time id=2 ts6"),
    ("timestamp(3)", "timestamp", None, b"0.001", T.TIMESTAMP2, "0.001", None, None, None, "extra id=2 ts3"),
    ("char(10)", "char", "utf8mb4", b"h\xc3\xa9llo", T.STRING, b"h\xc3\xa9llo", 45, None, None,
     "t_str id=1 c"),
    ("char(10)", "char", "utf8mb4", b"trail", T.STRING, b"trail", 45, None, None,
     "t_str id=3 c (pad dropped)"),
    ("varchar(100)", "varchar", "utf8mb4", "emoji 😀 and 中文".encode(), T.VARCHAR,
     "emoji 😀 and 中文".encode(), 45, None, None, "t_str id=1 vc"),
    ("varchar(20)", "varchar", "latin1", b"Gr\xfc\xdfe \x80\x89", T.VARCHAR,
     b"Gr\xfc\xdfe \x80\x89", 8, None, None, "t_str id=1 l1 (latin1 is cp1252)"),
    ("varchar(20)", "varchar", "cp1251", b"\xcf\xf0\xe8\xe2\xe5\xf2", T.VARCHAR,
     b"\xcf\xf0\xe8\xe2\xe5\xf2", 51, None, None, "t_str id=1 cy"),
    ("varchar(20)", "varchar", "utf16", "utf16 ✓ 😀".encode("utf-16-be"), T.VARCHAR,
     "utf16 ✓ 😀".encode("utf-16-be"), 54, None, None, "t_str id=1 u16"),
    ("char(4)", "char", "utf16", b"\xd8=\xde\x00", T.STRING, b"\xd8=\xde\x00", 54, None, None,
     "extra id=2 cu"),
    ("char(5)", "char", "ascii", b"ascii", T.STRING, b"ascii", 11, None, None, "t_str id=1 a"),
    ("text", "text", "utf8mb4", b"text\nwith\ttabs", T.BLOB, b"text\nwith\ttabs", 45, None, None,
     "t_str id=1 tx"),
    ("longtext", "longtext", "utf8mb4", b"[]", T.BLOB, b"[]", 46, None, None, "t_misc id=2 j (MariaDB JSON)"),
    ("binary(8)", "binary", None, b"\x00\x01\x00\x02\x00\x00\x00\x00", T.STRING,
     b"\x00\x01\x00\x02", 63, None, None, "t_str id=1 bn (the image drops the 0x00 pad)"),
    ("binary(8)", "binary", None, bytes(8), T.STRING, b"", 63, None, None, "t_str id=2 bn"),
    ("varbinary(20)", "varbinary", None, b"\x00\xff\x00\x00", T.VARCHAR, b"\x00\xff\x00\x00", 63, None, None,
     "t_str id=1 vb (NULs kept)"),
    ("blob", "blob", None, b"\x00", T.BLOB, b"\x00", 63, None, None, "t_str id=3 bl"),
    ("enum('bronze','silver','gold','platinum')", "enum", "latin1", b"silver", T.ENUM, 2, None, TIER, None,
     "t_enum id=1 tier"),
    ("enum('é','€','?')", "enum", "latin1", b"\xe9", T.ENUM, 1, None, ("é", "€", "?"), None,
     "t_enum id=2 eu"),
    ("enum('it''s','back\\\\slash','a,b')", "enum", "utf8mb4", b"it's", T.ENUM, 1, None, QUOTED, None,
     "extra id=1 e"),
    ("enum('it''s','back\\\\slash','a,b')", "enum", "utf8mb4", b"back\\slash", T.ENUM, 2, None, QUOTED, None,
     "extra id=2 e"),
    ("enum('it''s','back\\\\slash','a,b')", "enum", "utf8mb4", b"", T.ENUM, 0, None, QUOTED, None,
     "extra id=5 e (error value, INSERT IGNORE)"),
    ("set('x','y','z')", "set", "latin1", b"x,z", T.SET, 0b101, None, ("x", "y", "z"), None, "t_enum id=1 s"),
    ("set('x','y','z')", "set", "latin1", b"", T.SET, 0, None, ("x", "y", "z"), None, "t_enum id=2 s"),
    ("set('é','ü')", "set", "latin1", b"\xe9,\xfc", T.SET, 0b11, None, ("é", "ü"), None, "extra id=1 s"),
    ("uuid", "uuid", None, b"123e4567-e89b-12d3-a456-426655440000", T.STRING,
     bytes.fromhex("123e4567e89b12d3a456426655440000"), 63, None, "uuid", "t_misc id=1 u"),
    ("uuid", "uuid", None, b"b5d1d3c2-9f4e-4e0a-8c1a-000000000000", T.STRING,
     bytes.fromhex("b5d1d3c29f4e4e0a8c1a"),
     63, None, "uuid", "t_misc id=2 u (0x00 tail dropped in the image)"),
    ("inet6", "inet6", None, b"::ffff:192.0.2.1", T.STRING,
     bytes.fromhex("00000000000000000000ffffc0000201"), 63, None, "inet6", "t_misc id=3 ip6"),
    ("inet6", "inet6", None, b"::", T.STRING, b"", 63, None, "inet6", "t_misc id=4 ip6 (all pad)"),
    ("inet4", "inet4", None, b"127.0.0.1", T.STRING, b"\x7f\x00\x00\x01", 63, None, "inet4",
     "t_misc id=1 ip4"),
    ("inet4", "inet4", None, b"0.0.0.0", T.STRING, b"", 63, None, "inet4", "t_misc id=2 ip4"),
    ("point", "point", None,
     bytes.fromhex("E6100000010100000000000000000000F83F00000000000000C0"), T.GEOMETRY,
     bytes.fromhex("E6100000010100000000000000000000F83F00000000000000C0"), 63, None, None,
     "t_misc id=1 p (SRID 4326 + WKB)"),
]


@pytest.mark.parametrize("column_type,data_type,charset,raw,type_code,decoded,collation,labels,family,where",
                         ROWS, ids=[r[-1] for r in ROWS])
def test_snapshot_value_is_the_binlog_value(column_type, data_type, charset, raw, type_code, decoded,
                                            collation, labels, family, where):
    column = SourceColumn(3, "c", data_type, column_type, charset)
    expected = binlog_column_value(3, "c", type_code, decoded, collation, labels, family)
    assert column_value(column, raw) == expected


@pytest.mark.parametrize("data_type", sorted(RULES))
def test_sql_null_is_null_with_the_type_code(data_type):
    column = SourceColumn(0, "c", data_type, data_type, None)
    assert column_value(column, None) == {"ordinal": 0, "name": "c", "type_code": RULES[data_type].type_code,
                                          "text": None, "binary": None}


@pytest.mark.parametrize("data_type,name,expression", [
    ("float", "f", "CAST(`f` AS DOUBLE)"),
    ("timestamp", "ts", "UNIX_TIMESTAMP(`ts`)"),
    ("int", "we`ird name", "`we``ird name`"),
    ("varchar", "select", "`select`"),
    ("bit", "b", "`b`"),
    ("enum", "e", "`e`"),
    ("inet6", "ip", "`ip`"),
])
def test_select_expression(data_type, name, expression):
    assert select_expression(SourceColumn(0, name, data_type, data_type, None)) == expression


def test_a_type_without_a_conversion_is_refused_by_name():
    column = SourceColumn(0, "v", "vector", "vector(3)", None)
    with pytest.raises(ValueError, match="'v'.*vector"):
        select_expression(column)
    with pytest.raises(ValueError, match="'v'.*vector"):
        column_value(column, b"\0\0\0\0")


def test_source_column_reads_bytes_and_str_rows():
    expected = SourceColumn(1, "é", "varchar", "varchar(10)", "utf8mb4")
    assert source_column((b"2", "é".encode(), b"varchar", b"varchar(10)", b"utf8mb4")) == expected
    assert source_column((2, "é", "VARCHAR", "varchar(10)", "UTF8MB4")) == expected
    assert source_column((b"1", b"id", b"int", b"int(11)", None)) == SourceColumn(0, "id", "int",
                                                                                  "int(11)", None)


def test_the_columns_query_and_session_setup():
    assert COLUMNS_QUERY.count("%s") == 2
    assert "ORDER BY ORDINAL_POSITION" in COLUMNS_QUERY
    assert "SET SESSION character_set_results = binary" in SESSION_SETUP
    assert "SET SESSION time_zone = '+00:00'" in SESSION_SETUP


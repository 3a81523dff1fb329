"""The type mapping (libs/targets/types.py) as a table: one row per MySQL/MariaDB type, with the
Delta type, the value family, a value as a change record carries it, the Python value Delta
gets, and where the pair was seen. The values are the MariaDB 10.11 server's own output in the
corpus (shared/corpus/mariadb/all_types/tables/*.tsv, the `SELECT *` of each table) unless the
row says otherwise."""
from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest

from libs.targets import parse_ddl
from libs.targets.values import ValueConversionError, from_column_value

# (column DDL, Delta type, family, ColumnValue text, ColumnValue binary, Python value in Delta, source)
ROWS = [
    ("tinyint(4)", "tinyint", "int", "-128", None, -128, "t_int id=1 ti"),
    ("tinyint(3) unsigned", "smallint", "int", "255", None, 255, "t_int id=2 tiu"),
    ("smallint(5) unsigned", "int", "int", "65535", None, 65535, "t_int id=2 siu"),
    ("mediumint(8) unsigned", "int", "int", "16777215", None, 16777215, "t_int id=2 miu"),
    ("int(10) unsigned", "bigint", "int", "4294967295", None, 4294967295, "t_int id=2 iu"),
    ("bigint(20)", "bigint", "int", "-9223372036854775808", None, -9223372036854775808, "t_int id=1 bi"),
    ("bigint(20) unsigned", "decimal(20,0)", "decimal", "18446744073709551614", None,
     Decimal("18446744073709551614"), "t_int id=2 biu"),
    ("tinyint(3) unsigned zerofill", "smallint", "int", "7", None, 7, "t_int id=3 tiz ('007': display only)"),
    ("decimal(38,19)", "decimal(38,19)", "decimal", "9999999999999999999.9999999999999999999", None,
     Decimal("9999999999999999999.9999999999999999999"), "t_decimal id=2 d38_19"),
    ("decimal(65,30)", "string", "decimal_text", "-0.000000000000000000000000000001", None,
     "-0.000000000000000000000000000001", "t_decimal id=4 d65_30 (beyond Spark's 38 digits: text)"),
    ("float", "float", "float", "1.100000023841858", None,
     1.100000023841858, "t_float id=4 f (1.1 as float32)"),
    ("double", "double", "double", "5e-324", None, 5e-324, "t_float id=3 r (denormal)"),
    ("bit(17)", "bigint", "bit", None, b"\x01\xff\xff", 0x1FFFF, "t_bit id=2 b17 (HEX 1FFFF)"),
    ("bit(64)", "decimal(20,0)", "bit", None, b"\xff" * 8, Decimal(2**64 - 1), "t_bit id=2 b64"),
    ("year(4)", "int", "year", "2155", None, 2155, "t_date id=2 y"),
    ("date", "date", "date", "9999-12-31", None, dt.date(9999, 12, 31), "t_date id=2 dt"),
    ("date", "date", "date", "0000-00-00", None, None, "t_date id=4 dt (zero date: NULL)"),
    ("date", "date", "date", "2024-00-00", None, None, "t_date id=5 dt (partial date: NULL)"),
    ("datetime(6)", "timestamp_ntz", "datetime", "9999-12-31 23:59:59.999999", None,
     dt.datetime(9999, 12, 31, 23, 59, 59, 999999), "t_datetime id=2 dt6 (wall clock, no zone)"),
    ("datetime(3)", "timestamp_ntz", "datetime", "0000-00-00 00:00:00.000", None,
     None, "t_datetime id=4 dt3"),
    ("timestamp(6)", "timestamp", "timestamp", "2147483647.999999", None,
     dt.datetime(2038, 1, 19, 3, 14, 7, 999999), "t_timestamp id=2 ts6 (UTC instant, shown in UTC)"),
    ("timestamp", "timestamp", "timestamp", "0", None, None, "t_timestamp id=4 ts0 ('0000-00-00 00:00:00')"),
    ("time(6)", "string", "time", "-838:59:59.999999", None, "-838:59:59.999999", "t_time id=3 t6"),
    ("varchar(10) CHARACTER SET latin1", "string", "string", None, b"\x80\x81",
     "\u20ac\x81", "latin1 is cp1252 plus its holes (strings/ctype-latin1.cc)"),
    ("char(10) CHARACTER SET cp1251", "string", "string", None, bytes.fromhex("CFF0E8E2E5F2"), "Привет",
     "t_char_other id=1 c_cp1251 (HEX CFF0E8E2E5F2)"),
    ("varchar(20) CHARACTER SET utf16", "string", "string", None,
     bytes.fromhex("00750074006600310036002020AC"), "utf16 €", "t_char_other id=1 vc_utf16"),
    ("varchar(10) CHARACTER SET ascii", "string", "string", "ascii", None, "ascii",
     "t_char_other id=1 c_ascii"),
    ("varchar(64)", "string", "string", "\U0001F600", None, "\U0001F600", "utf8mb4 emoji"),
    ("binary(8)", "binary", "binary", None, b"ab", b"ab\0\0\0\0\0\0",
     "t_binary id=2 b8 (HEX 6162000000000000)"),
    ("varbinary(10)", "binary", "binary", None, b"\0a\0", b"\0a\0", "NUL bytes kept"),
    ("enum('bronze','silver','gold','platinum')", "string", "enum", "silver", None, "silver", "label"),
    ("set('x','y','z')", "string", "set", "x,y,z", None, "x,y,z", "t_enum_set id=2 s"),
    ("json", "string", "json", '{"a":1}', None, '{"a":1}', "MySQL JSON text"),
    ("longtext CHARACTER SET utf8mb4 COLLATE utf8mb4_bin", "string", "string", '[]', None, "[]",
     "t_json id=1 j2 (MariaDB JSON is LONGTEXT)"),
    ("uuid", "string", "uuid", "123e4567-e89b-12d3-a456-426655440000", None,
     "123e4567-e89b-12d3-a456-426655440000", "t_mariadb_types id=1 u"),
    ("inet6", "string", "inet6", "::ffff:192.0.2.1", None, "::ffff:192.0.2.1", "t_mariadb_types id=3 ip6"),
    ("inet4", "string", "inet4", "0.0.0.0", None, "0.0.0.0", "t_mariadb_types id=3 ip4"),
    ("point", "binary", "geometry", None, bytes.fromhex("000000000101000000000000000000F8BF0000000000000240"),
     bytes.fromhex("000000000101000000000000000000F8BF0000000000000240"), "t_geo id=1 p (SRID + WKB)"),
]


@pytest.mark.parametrize("ddl,spark,family,text,binary,value,source", ROWS, ids=[r[6] for r in ROWS])
def test_type_mapping_row(ddl, spark, family, text, binary, value, source):
    (table,) = parse_ddl(f"CREATE TABLE d.t (c {ddl})")
    column = table.columns[0]
    assert (column.spark_type, column.family) == (spark, family)
    assert from_column_value(column, text, binary) == value


def test_declared_charset_comes_from_the_column_its_collation_or_the_table():
    (table,) = parse_ddl("CREATE TABLE d.t (a varchar(5), b varchar(5) COLLATE cp1251_bin, "
                         "c varchar(5) CHARACTER SET utf16, d char(4) CHARACTER SET binary, n int)"
                         " DEFAULT CHARSET=latin1")
    assert [c.charset for c in table.columns] == ["latin1", "cp1251", "utf16", None, None]
    assert (table.columns[3].family, table.columns[3].fixed_width) == ("binary", 4)  # CHAR BINARY


def test_unsigned_and_fsp_are_declared_facts():
    (table,) = parse_ddl("CREATE TABLE d.t (a int unsigned, b int, c datetime(3), "
                         "d time(6), e decimal(5,2) unsigned)")
    assert [c.unsigned for c in table.columns] == [True, False, False, False, True]
    assert [c.fsp for c in table.columns] == [0, 0, 3, 6, 0]


def test_bytes_that_are_not_text_in_the_declared_charset_are_an_error_not_replacement_characters():
    (table,) = parse_ddl("CREATE TABLE d.t (c varchar(5) CHARACTER SET utf8mb4)")
    with pytest.raises(ValueConversionError, match="not utf8mb4 text"):
        from_column_value(table.columns[0], None, b"\xff\xfe")


def test_zero_dates_make_a_not_null_date_time_column_nullable_in_delta_only():
    (table,) = parse_ddl("CREATE TABLE d.t (a date NOT NULL, b datetime NOT NULL, c int NOT NULL)")
    assert [(c.nullable, c.delta_nullable) for c in table.columns] == [
        (False, True), (False, True), (False, False)]

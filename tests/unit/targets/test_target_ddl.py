"""CREATE TABLE declarations parsed with sqlglot: corpus SHOW CREATE TABLE texts, types, keys, defaults."""

import datetime as dt
import glob
import json
import struct
from decimal import Decimal

import pytest

from libs.targets import TargetConfigError, parse_ddl
from libs.runtime.paths import CORPUS_DIR

MANIFESTS = sorted(glob.glob(str(CORPUS_DIR / "mariadb" / "*" / "manifest.json")))


def _corpus_tables():
    for path in MANIFESTS:
        for table in json.load(open(path)).get("tables", []):
            yield path, table


def test_every_corpus_show_create_table_parses():
    assert MANIFESTS, "the shared corpus /work/shared/corpus is required"
    seen = 0
    for path, table in _corpus_tables():
        database, name = table["table"].split(".")
        (parsed,) = parse_ddl(f"USE `{database}`;\n{table['create_table']}", path)
        assert (parsed.database, parsed.table) == (database, name)
        assert [c.name for c in parsed.columns] == [c["name"] for c in table["columns"]]
        seen += 1
    assert seen >= 90


def test_several_statements_with_use_create_database_and_qualified_names():
    text = """
    CREATE DATABASE shop; CREATE TABLE a (x int);
    USE other; CREATE TABLE b (y int);
    CREATE TABLE third.c (z int);
    SET NAMES utf8mb4; DROP TABLE IF EXISTS zz;
    """
    assert [(t.database, t.table) for t in parse_ddl(text, "f.sql")] == [
        ("shop", "a"), ("other", "b"), ("third", "c")]


def test_table_without_database_names_file_and_statement():
    with pytest.raises(TargetConfigError, match=r"f.sql: statement\[0\] CREATE TABLE a: no database"):
        parse_ddl("CREATE TABLE a (x int)", "f.sql")


def test_unparseable_ddl_names_the_file():
    with pytest.raises(TargetConfigError, match="bad.sql"):
        parse_ddl("CREATE TABLE d.t (x int", "bad.sql")


SPARK_TYPES = {
    "int(11)": "int", "bigint(20) unsigned": "decimal(20,0)", "decimal(10,2)": "decimal(10,2)",
    "decimal(65,30)": "string", "varchar(20)": "string", "text": "string", "blob": "binary",
    "binary(8)": "binary", "datetime(3)": "timestamp_ntz", "timestamp": "timestamp", "date": "date",
    "json": "string", "enum('a','b')": "string", "set('x','y')": "string", "bit(5)": "bigint",
    "bit(64)": "decimal(20,0)", "tinyint(3) unsigned zerofill": "smallint", "int(10) unsigned": "bigint",
    "double": "double", "float unsigned": "float", "time(2)": "string", "year(4)": "int",
    "point": "binary", "geometry": "binary", "inet6": "string", "uuid": "string", "longtext": "string",
}


@pytest.mark.parametrize("mysql_type,spark", sorted(SPARK_TYPES.items()))
def test_spark_type_mapping(mysql_type, spark):
    (table,) = parse_ddl(f"CREATE TABLE d.t (c {mysql_type})")
    assert table.columns[0].spark_type == spark


def test_nullability_keys_and_defaults():
    (t,) = parse_ddl(
        "CREATE TABLE d.t (id int, code char(3) NOT NULL, n int UNIQUE, a int DEFAULT 900,"
        " s varchar(9) DEFAULT 'it''s', z varchar(2) DEFAULT NULL, d decimal(5,2) DEFAULT -1.5,"
        " ts timestamp(6) NOT NULL DEFAULT current_timestamp(6) ON UPDATE current_timestamp(6),"
        " dt datetime(3) NOT NULL DEFAULT '2024-01-01 00:00:00.000', b bit(3) DEFAULT b'101',"
        " h varbinary(2) DEFAULT x'0a0b', e enum('on','off') NOT NULL DEFAULT 'off', nod int NOT NULL,"
        " PRIMARY KEY (id), UNIQUE KEY uk (code))")
    col = {c.name: c for c in t.columns}
    assert t.primary_key == ("id",) and t.unique_keys == (("n",), ("code",))
    assert not col["id"].nullable and not col["code"].nullable and col["n"].nullable
    assert (col["a"].default_kind, col["a"].default) == ("literal", 900)
    assert col["s"].default == "it's" and col["d"].default == Decimal("-1.5")
    assert col["z"].has_default and col["z"].default is None
    assert col["ts"].default_kind == "current_timestamp"
    assert col["dt"].default == dt.datetime(2024, 1, 1)
    assert col["b"].default == 5 and col["h"].default == b"\n\x0b" and col["e"].default == "off"
    assert not col["nod"].has_default


def test_float_default_is_the_single_precision_value_the_column_stores():
    # The row image of such a column carries 0.1f widened (0.10000000149011612), and Delta's
    # FloatType stores the same: a float64 0.1 default would match neither.
    (t,) = parse_ddl("CREATE TABLE d.t (f float DEFAULT 0.1, g double DEFAULT 0.1)")
    col = {c.name: c for c in t.columns}
    assert col["f"].default == struct.unpack("<f", struct.pack("<f", 0.1))[0] != 0.1
    assert col["g"].default == 0.1


def test_unsupported_default_expression_is_a_clear_error():
    with pytest.raises(TargetConfigError, match=r"statement\[0\] CREATE TABLE t.v: DEFAULT: unsupported"):
        parse_ddl("CREATE TABLE d.t (v int DEFAULT (1 + rand()))", "x.sql")

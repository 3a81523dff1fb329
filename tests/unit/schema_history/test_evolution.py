"""A target's Delta columns carried to the schema at its batch's end (libs/schema_history/
evolution.py, issue #17 item 3): which Spark type changes keep every value as the server converts
it (MariaDB ALTER TABLE ... MODIFY: an integer read in a wider integer or a decimal with enough
integer digits is the same number), and each new column's source Delta column, cast, or fill.
A column added by ALTER TABLE ... ADD holds, in every existing row, its DEFAULT, the ALTER's
time for DEFAULT CURRENT_TIMESTAMP, else NULL or the type's implicit default (rpl_record.cc
prepare_record, libs/targets/values.fill_value)."""

import datetime as dt
from decimal import Decimal

import pytest

from libs.schema_history.column_identity import EndNames
from libs.schema_history.evolution import (AddedColumn, NewColumn, SchemaEvolutionError,
                                           converted_by_server, evolution, unknown_fills, widens)
from libs.targets.config import build_catalog
from libs.targets.ddl import parse_ddl

ADDED_AT = dt.datetime(2024, 5, 6, 7, 8, 9, 123456)
WHERE = "source s, mdb-bin.000002:500, d.t (ALTER TABLE t MODIFY a INT)"
DELTA = [("id", "int"), ("a", "int"), ("b", "string")]  # id INT PRIMARY KEY, a INT, b VARCHAR(10)


def target(columns: str):
    return build_catalog(None, "x", parse_ddl(f"CREATE TABLE d.t ({columns})", "test")).get("d", "t")


# -- widens: old Spark type -> new, every value as the server converts it -------------------------
@pytest.mark.parametrize("old, new, expected", [
    ("int", "int", True),
    ("string", "string", True),
    ("decimal(10,2)", "decimal(10,2)", True),
    # integers: wider only
    ("tinyint", "smallint", True),
    ("tinyint", "bigint", True),
    ("smallint", "int", True),
    ("int", "bigint", True),
    ("bigint", "int", False),
    ("int", "smallint", False),
    ("smallint", "tinyint", False),
    ("bigint", "tinyint", False),
    # integer -> decimal: enough integer digits (tinyint 3, smallint 5, int 10, bigint 19)
    ("tinyint", "decimal(3,0)", True),
    ("tinyint", "decimal(4,2)", False),
    ("smallint", "decimal(5,0)", True),
    ("smallint", "decimal(6,2)", False),
    ("int", "decimal(10,0)", True),
    ("int", "decimal(12,2)", True),
    ("int", "decimal(9,0)", False),
    ("int", "decimal(11,2)", False),
    ("bigint", "decimal(19,0)", True),
    ("bigint", "decimal(20,0)", True),   # BIGINT UNSIGNED's Spark type
    ("bigint", "decimal(38,18)", True),
    ("bigint", "decimal(20,2)", False),
    # integer -> double, string
    ("int", "double", True),
    ("tinyint", "double", True),
    ("int", "string", True),
    ("bigint", "string", True),
    # decimal -> decimal: neither scale nor integer digits shrink
    ("decimal(10,2)", "decimal(12,2)", True),
    ("decimal(10,2)", "decimal(12,4)", True),
    ("decimal(10,2)", "decimal(11,3)", True),
    ("decimal(10,2)", "decimal(10,3)", False),
    ("decimal(10,2)", "decimal(12,1)", False),
    ("decimal(10,2)", "decimal(9,2)", False),
    ("decimal(10,2)", "decimal(12,0)", False),
    ("decimal(10,2)", "int", False),
    ("decimal(10,2)", "double", False),
    ("decimal(10,2)", "string", False),
    # floating point, dates
    ("float", "double", True),
    ("double", "float", False),
    ("double", "string", False),
    ("double", "decimal(38,10)", False),
    ("date", "timestamp_ntz", True),
    ("timestamp_ntz", "date", False),
    # strings and others do not become numbers
    ("string", "int", False),
    ("string", "decimal(10,2)", False),
    ("string", "date", False),
    ("binary", "string", False),
    # spelled in any case, with spaces
    ("INT", "BIGINT", True),
    ("BIGINT", "Int", False),
    ("decimal(10,2)", "DECIMAL(10, 2)", True),
    ("Decimal(10, 2)", "decimal(12,3)", True),
    ("INT", "DECIMAL(12, 2)", True),
    ("INT", "DECIMAL(11, 2)", False),
    ("Float", "DOUBLE", True),
])
def test_widens(old, new, expected):
    assert widens(old, new) is expected


# -- evolution: each target column from a Delta column, cast, or filled --------------------------
def test_unchanged_is_none():
    t = target("id INT PRIMARY KEY, a INT, b VARCHAR(10)")
    assert evolution(DELTA, t, EndNames(), ADDED_AT, WHERE) is None
    # names that are none of the Delta columns change nothing either
    assert evolution(DELTA, t, EndNames({"gone": None, "x": "y"}), ADDED_AT, WHERE) is None


KEPT = [NewColumn("id", "int", "id"), NewColumn("a", "int", "a"), NewColumn("b", "string", "b")]


@pytest.mark.parametrize("added, fill", [
    ("c INT DEFAULT 5", 5),
    ("c VARCHAR(5) DEFAULT 'x'", "x"),
    ("c DECIMAL(6,2) DEFAULT 1.5", Decimal("1.5")),
    ("c INT DEFAULT NULL", None),
    ("c INT NOT NULL DEFAULT 7", 7),
    ("c TIMESTAMP DEFAULT CURRENT_TIMESTAMP", ADDED_AT.replace(microsecond=0)),  # NOW() in whole seconds
    ("c DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP", ADDED_AT.replace(microsecond=0)),
    ("c DATETIME(2) DEFAULT CURRENT_TIMESTAMP(2)", ADDED_AT.replace(microsecond=120000)),  # NOW() in fsp 2
    ("c INT", None),                       # nullable, no DEFAULT: NULL
    ("c VARCHAR(5)", None),
    ("c INT NOT NULL", 0),                 # NOT NULL, no DEFAULT: the type's implicit default
    ("c BIGINT NOT NULL", 0),
    ("c VARCHAR(5) NOT NULL", ""),
    ("c DECIMAL(6,2) NOT NULL", Decimal(0)),
    ("c DOUBLE NOT NULL", 0.0),
    ("c ENUM('x','y') NOT NULL", "x"),     # an ENUM's implicit default is its first member
])
def test_an_added_column_is_filled(added, fill):
    out = evolution(DELTA, target(f"id INT PRIMARY KEY, a INT, b VARCHAR(10), {added}"),
                    EndNames(), ADDED_AT, WHERE)
    assert out[:3] == KEPT
    (new,) = out[3:]
    assert (new.name, new.source, new.cast, new.fill) == ("c", None, False, fill)
    assert type(new.fill) is type(fill)


def test_an_added_column_is_filled_as_its_add_defined_it():
    """`added`: the batch's ADD COLUMN of a column; a later DDL of the batch (SET DEFAULT 2, the
    end's definition) does not change what the rows that existed got. A definition None is the
    target's (a declared replica-side one), at the ADD's time."""
    at_add = dt.datetime(2024, 5, 6, 7, 0, 0)
    t = target("id INT PRIMARY KEY, a INT, b VARCHAR(10), c INT DEFAULT 2, ts DATETIME DEFAULT "
               "CURRENT_TIMESTAMP, d DATETIME DEFAULT CURRENT_TIMESTAMP")
    c_at_add = target("id INT PRIMARY KEY, c INT DEFAULT 1").column("c")
    out = evolution(DELTA, t, EndNames(), ADDED_AT, WHERE,
                    {"c": AddedColumn(c_at_add, at_add), "ts": AddedColumn(None, at_add)})
    assert [(n.name, n.fill) for n in out[3:]] == [("c", 1), ("ts", at_add),
                                                   ("d", ADDED_AT.replace(microsecond=0))]


@pytest.mark.parametrize("columns, start, expected", [
    # RENAME COLUMN b TO bee: bee's values are b's
    ("id INT PRIMARY KEY, a INT, bee VARCHAR(10)", EndNames({"b": "bee", "bee": None}),
     [NewColumn("id", "int", "id"), NewColumn("a", "int", "a"), NewColumn("bee", "string", "b")]),
    ("id INT PRIMARY KEY, a INT, bee VARCHAR(10)", EndNames({"b": "bee"}),
     [NewColumn("id", "int", "id"), NewColumn("a", "int", "a"), NewColumn("bee", "string", "b")]),
    # CHANGE a A INT: the same column, named as the end names it
    ("id INT PRIMARY KEY, A INT, b VARCHAR(10)", EndNames(),
     [NewColumn("id", "int", "id"), NewColumn("A", "int", "a"), NewColumn("b", "string", "b")]),
    # DROP COLUMN a: not in the result
    ("id INT PRIMARY KEY, b VARCHAR(10)", EndNames({"a": None}),
     [NewColumn("id", "int", "id"), NewColumn("b", "string", "b")]),
    # DROP a, ADD a INT DEFAULT 9: a new column under the old name
    ("id INT PRIMARY KEY, b VARCHAR(10), a INT DEFAULT 9", EndNames({"a": None}),
     [NewColumn("id", "int", "id"), NewColumn("b", "string", "b"), NewColumn("a", "int", None, fill=9)]),
    # MODIFY b ... FIRST: the same columns in another order
    ("b VARCHAR(10), id INT PRIMARY KEY, a INT", EndNames(),
     [NewColumn("b", "string", "b"), NewColumn("id", "int", "id"), NewColumn("a", "int", "a")]),
    # a swap of a and b (through a temporary name)
    ("id INT PRIMARY KEY, a VARCHAR(10), b INT", EndNames({"a": "b", "b": "a", "tmp": None}),
     [NewColumn("id", "int", "id"), NewColumn("a", "string", "b"), NewColumn("b", "int", "a")]),
    # MODIFY a BIGINT / DECIMAL(12,2) / VARCHAR: widened, cast
    ("id INT PRIMARY KEY, a BIGINT, b VARCHAR(10)", EndNames(),
     [NewColumn("id", "int", "id"), NewColumn("a", "bigint", "a", cast=True), NewColumn("b", "string", "b")]),
    ("id INT PRIMARY KEY, a DECIMAL(12,2), b VARCHAR(10)", EndNames(),
     [NewColumn("id", "int", "id"), NewColumn("a", "decimal(12,2)", "a", cast=True),
      NewColumn("b", "string", "b")]),
    ("id INT PRIMARY KEY, a VARCHAR(20), b TEXT", EndNames(),
     [NewColumn("id", "int", "id"), NewColumn("a", "string", "a", cast=True), NewColumn("b", "string", "b")]),
    # renamed and widened at once
    ("id BIGINT PRIMARY KEY, a INT, bee VARCHAR(10)", EndNames({"b": "bee", "bee": None}),
     [NewColumn("id", "bigint", "id", cast=True), NewColumn("a", "int", "a"),
      NewColumn("bee", "string", "b")]),
    # the table made anew (CREATE TABLE after a DROP): every column is new
    ("id INT PRIMARY KEY, a INT DEFAULT 7, b VARCHAR(10)", EndNames({}, others_gone=True),
     [NewColumn("id", "int", None, fill=0), NewColumn("a", "int", None, fill=7),
      NewColumn("b", "string", None)]),
    ("id INT PRIMARY KEY, a INT, b VARCHAR(10)", EndNames({"a": "a"}, others_gone=True),
     [NewColumn("id", "int", None, fill=0), NewColumn("a", "int", "a"), NewColumn("b", "string", None)]),
])
def test_columns_from_delta(columns, start, expected):
    assert evolution(DELTA, target(columns), start, ADDED_AT, WHERE) == expected


def test_a_delta_type_spelled_otherwise_is_no_cast():
    delta = [("id", "int"), ("p", "decimal(10, 2)")]
    assert evolution(delta, target("id INT PRIMARY KEY, p DECIMAL(10,2)"),
                     EndNames(), ADDED_AT, WHERE) is None
    assert evolution(delta, target("id INT PRIMARY KEY, p DECIMAL(10,2), q INT"),
                     EndNames(), ADDED_AT, WHERE) == [
        NewColumn("id", "int", "id"), NewColumn("p", "decimal(10,2)", "p"), NewColumn("q", "int", None)]


@pytest.mark.parametrize("delta, columns, start, column, old, new", [
    ([("id", "int"), ("a", "bigint")], "id INT PRIMARY KEY, a INT", EndNames(), "a", "BIGINT", "INT"),
    ([("id", "int"), ("a", "string")], "id INT PRIMARY KEY, a INT", EndNames(), "a", "STRING", "INT"),
    ([("id", "int"), ("a", "decimal(10,2)")], "id INT PRIMARY KEY, a DECIMAL(10,1)", EndNames(), "a",
     "DECIMAL(10,2)", "DECIMAL(10,1)"),
    ([("id", "int"), ("a", "double")], "id INT PRIMARY KEY, a FLOAT", EndNames(), "a", "DOUBLE", "FLOAT"),
    ([("id", "int"), ("b", "string")], "id INT PRIMARY KEY, bee DATE", EndNames({"b": "bee"}),
     "bee", "STRING", "DATE"),
])
def test_a_narrowing_stops_with_table_ddl_and_column(delta, columns, start, column, old, new):
    with pytest.raises(SchemaEvolutionError) as raised:
        evolution(delta, target(columns), start, ADDED_AT, WHERE)
    message = str(raised.value)
    assert message.startswith(WHERE)
    assert repr(column) in message and f"from {old} to {new}" in message


def test_a_narrowing_is_a_value_error():
    with pytest.raises(ValueError):
        evolution([("a", "bigint")], target("a SMALLINT"), EndNames(), ADDED_AT, WHERE)


@pytest.mark.parametrize("added, stops", [
    ("g INT AS (a * 2) STORED", "'g' (GENERATED)"),
    ("g INT AS (a * 2) VIRTUAL", "'g' (GENERATED)"),
    ("n INT NOT NULL AUTO_INCREMENT UNIQUE", "'n' (AUTO_INCREMENT)"),
    ("c INT DEFAULT 5", None),
])
def test_an_added_column_only_the_server_can_fill_stops(added, stops):
    """unknown_fills: a GENERATED or AUTO_INCREMENT column added to rows that exist has values
    the server computed and no binlog event carries; a column kept from Delta is not asked."""
    t = target(f"id INT PRIMARY KEY, a INT, b VARCHAR(10), {added}")
    error = unknown_fills(evolution(DELTA, t, EndNames(), ADDED_AT, WHERE), t, WHERE)
    assert (error is None) if stops is None else (stops in str(error) and error.computed)
    kept = target("id INT PRIMARY KEY, a INT AS (id * 2) STORED, b VARCHAR(10)")
    assert unknown_fills([NewColumn("id", "int", "id"), NewColumn("a", "int", "a"),
                          NewColumn("b", "string", "b")],
                         kept, WHERE) is None


@pytest.mark.parametrize("old, new, converts", [
    ("INT", "YEAR", True),            # 5 reads as 2005
    ("VARCHAR(5)", "CHAR(5)", True),  # trailing spaces dropped
    ("TEXT", "CHAR(5)", True),
    ("VARCHAR(5)", "ENUM('a','b')", True),
    ("VARCHAR(5)", "SET('a','b')", True),
    ("CHAR(5)", "CHAR(8)", False),
    ("CHAR(5)", "VARCHAR(5)", False),
    ("ENUM('a','b')", "ENUM('a','b','c')", False),
    ("ENUM('a','b')", "VARCHAR(5)", False),  # the labels, as Delta holds them
    ("INT", "BIGINT", False),
    ("VARCHAR(5)", "TEXT", False),
    ("YEAR", "INT", False),
])
def test_a_modify_the_server_converts(old, new, converts):
    """converted_by_server: a MODIFY whose values the server converts by a rule Delta's cast does not know."""
    columns = target(f"id INT PRIMARY KEY, o {old}, n {new}")
    assert converted_by_server(columns.column("o"), columns.column("n")) is converts

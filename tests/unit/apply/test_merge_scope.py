"""libs/apply/merge_scope.py: which stored rows bound a target's MERGE, as a table of cases."""
import pytest

from libs.apply.merge_scope import IN_LIST_MAX, OR_LIST_MAX, MergeScope, ReadRecorder, merge_scope
from libs.targets import build_catalog, parse_ddl

DDL = """CREATE TABLE d.pk (id INT NOT NULL, v INT, PRIMARY KEY (id));
CREATE TABLE d.two (a INT NOT NULL, b VARCHAR(5) NOT NULL, v INT, PRIMARY KEY (a, b));
CREATE TABLE d.uniq (u INT NOT NULL, v INT, UNIQUE KEY (u));
CREATE TABLE d.nullable_uniq (u INT, v INT, UNIQUE KEY (u));
CREATE TABLE d.keyless (x INT, y INT)"""
CATALOG = build_catalog(None, "test.yaml", parse_ddl(DDL, "test.sql"))


def target(name):
    return CATALOG.get("d", name)


@pytest.mark.parametrize("table, rows, expected", [
    # nothing read: nothing stored can match, whatever the keys (an append will do)
    ("pk", [], MergeScope(("id",), frozenset())),
    ("keyless", [], MergeScope((), frozenset())),
    # the PRIMARY KEY's values of the rows read (a row read twice counts once)
    ("pk", [{"id": 1, "v": 5}, {"id": 2}, {"id": 1}], MergeScope(("id",), frozenset({(1,), (2,)}))),
    ("two", [{"a": 1, "b": "x"}, {"a": 1, "b": "y"}],
     MergeScope(("a", "b"), frozenset({(1, "x"), (1, "y")}))),
    # no PK: the first NOT NULL UNIQUE key finds rows (WL#5092 PKE 2.)
    ("uniq", [{"u": 7}], MergeScope(("u",), frozenset({(7,)}))),
    # rows were read but no key bounds them: the unbounded MERGE
    ("keyless", [{"x": 1, "y": 2}], None),
    ("nullable_uniq", [{"u": 1}], None),
])
def test_scope_of_the_rows_read(table, rows, expected):
    assert merge_scope(target(table), rows) == expected


def test_a_row_without_a_whole_key_value_unbounds_the_merge():
    assert merge_scope(target("pk"), [{"id": 1}, {"id": None}]) is None


def test_beyond_a_filters_size_the_merge_stays_unbounded():
    assert merge_scope(target("pk"), [{"id": i} for i in range(IN_LIST_MAX)]) is not None
    assert merge_scope(target("pk"), [{"id": i} for i in range(IN_LIST_MAX + 1)]) is None
    assert merge_scope(target("two"), [{"a": i, "b": "x"} for i in range(OR_LIST_MAX)]) is not None
    assert merge_scope(target("two"), [{"a": i, "b": "x"} for i in range(OR_LIST_MAX + 1)]) is None


def test_the_recorder_keeps_every_row_of_every_read_and_hands_them_on():
    calls = iter([iter([{"id": 1}]), iter([{"id": 2}, {"id": 3}])])  # readers may return generators
    recorder = ReadRecorder(lambda lookups: next(calls))
    assert recorder("first") == [{"id": 1}]
    assert recorder("second") == [{"id": 2}, {"id": 3}]
    assert recorder.rows == [{"id": 1}, {"id": 2}, {"id": 3}]

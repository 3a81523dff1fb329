"""A TRUNCATE TABLE of the stream becomes its table's truncate change, nothing else does
(libs/apply/plan.with_ddl_truncates)."""
import pytest

from libs.apply.plan import with_ddl_truncates
from tests.change_builders import change_of


def change(statement, op="ddl", database="d", table="t"):
    return change_of(op, statement=statement, database=database, table=table)


@pytest.mark.parametrize("statement, op, database, expected", [
    ("TRUNCATE TABLE t", "ddl", "d", "truncate"),
    ("truncate t", "ddl", "d", "truncate"),
    ("/* hint */ TRUNCATE `d`.`t`", "ddl", "d", "truncate"),
    ("TRUNCATE TABLE other.t", "ddl", "d", "ddl"),          # the record names another table
    ("ALTER TABLE t TRUNCATE PARTITION p0", "ddl", "d", "ddl"),  # some rows only: not a truncate
    ("ALTER TABLE t ADD c INT", "ddl", "d", "ddl"),
    ("TRUNCATE TABLE t", "statement", "d", "statement"),    # only ddl records
    ("TRUNCATE TABLE (", "ddl", "d", "ddl"),                # unreadable: recorded as it is
])
def test_which_changes_truncate_their_table(statement, op, database, expected):
    (out,) = with_ddl_truncates([change(statement, op, database)])
    assert out.op == expected


def test_changes_keep_their_order_and_content():
    changes = [change(None, "insert"), change("TRUNCATE t"), change(None, "insert")]
    out = with_ddl_truncates(changes)
    assert [c.op for c in out] == ["insert", "truncate", "insert"]
    assert out[0] is changes[0] and out[1].statement == "TRUNCATE t"

"""libs/schema_history/table_renames.py: which table each name of a batch is renamed from, and
the chains it refuses (issue #17 item 3, RENAME TABLE; the swap of online schema-change tools)."""
from __future__ import annotations

import pytest

from libs.apply.plan import group_changes
from libs.schema_history.statements import TableName
from libs.schema_history.table_renames import RenameChainError, table_renames
from tests.change_builders import change_of

_pos = iter(range(100, 100_000, 100))


def change(table, op="insert", statement=None, database="d"):
    end = next(_pos)
    return change_of(op, source="s", database=database, table=table, statement=statement,
                     trx_file="bin.000001", trx_end_pos=end, binlog_file="bin.000001", binlog_pos=end - 50,
                     commit_ts=0, change_seq=0)


def ddl(table, statement):
    return change(table, "ddl", statement)


def renames_of(*changes):
    """{new name: (old name, [ops of the old table's changes before the rename], [inherited ops])}"""
    out = table_renames(group_changes(changes))
    return {new: (str(r.old.table), [c.op for c in r.earlier], [c.op for c in r.inherited])
            for (_db, new), r in out.items()}


def test_rename_brings_the_old_tables_changes_before_it():
    got = renames_of(change("a"), ddl("a", "ALTER TABLE a ADD c INT"), change("a", "update"),
                     ddl("a", "RENAME TABLE a TO b"), change("b"), change("a"))
    assert got == {"b": ("a", ["insert", "ddl", "update"], ["insert", "update"])}


@pytest.mark.parametrize("statements, expected", [
    (["RENAME TABLE a TO b"], {"b": "a"}),
    (["ALTER TABLE a RENAME TO b, ADD c INT"], {"b": "a"}),
    (["ALTER TABLE a RENAME TO a"], {}),                                     # not a rename
    (["RENAME TABLE a TO b, c TO d"], {"b": "a", "d": "c"}),
    (["RENAME TABLE d.a TO e.a"], {"a": "a"}),                               # another database
    # the swap of gh-ost / pt-online-schema-change, in one statement or two
    (["RENAME TABLE t TO _t_old, _t_new TO t"], {"_t_old": "t", "t": "_t_new"}),
    (["RENAME TABLE t TO _t_old", "RENAME TABLE _t_new TO t"], {"_t_old": "t", "t": "_t_new"}),
    (["RENAME TABLE a TO b", "DROP TABLE b"], {"b": "a"}),
    (["RENAME TABLE a TO", "CREATE TABLE x (id INT)"], {}),                  # unreadable: no rename
])
def test_which_table_each_name_comes_from(statements, expected):
    got = renames_of(*(ddl(s.split()[2].split(".")[-1], s) for s in statements))
    assert {new: old for new, (old, _earlier, _inherited) in got.items()} == expected


@pytest.mark.parametrize("statements, named", [
    (["RENAME TABLE a TO b", "RENAME TABLE b TO c"], "b"),                   # a chain
    (["RENAME TABLE a TO b, b TO c"], "b"),
    (["RENAME TABLE a TO tmp, b TO a, tmp TO b"], "tmp"),                    # a swap of two tables
    (["RENAME TABLE a TO c", "RENAME TABLE b TO c"], "c"),                   # renamed to twice
])
def test_a_name_renamed_to_and_then_renamed_again_is_refused(statements, named):
    with pytest.raises(RenameChainError) as raised:
        renames_of(*(ddl(s.split()[2], s) for s in statements))
    assert str(raised.value).startswith(f"{TableName('d', named)} is renamed to and then renamed again")
    assert "bin.000001:" in str(raised.value)

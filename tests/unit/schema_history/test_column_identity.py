"""Which column a name means across the DDL of one batch (libs/schema_history/column_identity.py,
issue #17 item 3): the column steps each DDL statement makes for one table, names walked back from
the batch's end (renames, drops, adds, a table made anew), each change's images renamed to the
end's names, and which statements CREATE the table. Written from MariaDB's ALTER TABLE, RENAME
TABLE, DROP TABLE / DATABASE and CREATE TABLE documentation: a rename keeps the column's values
under its new name, a dropped column's values belong to no later column (one added later under
the same name is another column), and IF [NOT] EXISTS of something that is (not) there does
nothing."""

import pytest

from libs.contracts.change import Op
from tests.change_builders import change_of

from libs.schema_history.table_schema import TableSchema
from libs.schema_history.column_identity import (
    ADD, DROP, GONE, RENAME, REPLACE, EndNames, Step, column_steps, creates, end_names,
    with_names_at_end)

IDENTITY = EndNames()


# -- column_steps: what one statement does to the columns of d.t ----------------------------------
@pytest.mark.parametrize("statement, default_db, database, table, expected", [
    # RENAME COLUMN, CHANGE (a rename only when the name changes), MODIFY (never a rename)
    ("ALTER TABLE t RENAME COLUMN a TO b", "d", "d", "t", (Step(RENAME, "a", "b"),)),
    ("ALTER TABLE t RENAME COLUMN a TO A", "d", "d", "t", (Step(RENAME, "a", "A"),)),
    ("ALTER TABLE t CHANGE a b BIGINT", "d", "d", "t", (Step(RENAME, "a", "b"),)),
    ("ALTER TABLE t CHANGE COLUMN `a` `b` VARCHAR(20) NOT NULL AFTER id", "d", "d", "t",
     (Step(RENAME, "a", "b"),)),
    ("ALTER TABLE t CHANGE a a BIGINT", "d", "d", "t", ()),
    ("ALTER TABLE t CHANGE a A BIGINT", "d", "d", "t", ()),  # same name to MySQL: no rename
    ("ALTER TABLE t MODIFY a BIGINT", "d", "d", "t", ()),
    ("ALTER TABLE t MODIFY COLUMN a TEXT FIRST", "d", "d", "t", ()),
    # DROP and ADD, one step per column, in the statement's order
    ("ALTER TABLE t DROP COLUMN a", "d", "d", "t", (Step(DROP, old="a"),)),
    ("ALTER TABLE t DROP a", "d", "d", "t", (Step(DROP, old="a"),)),
    ("ALTER TABLE t ADD COLUMN c INT DEFAULT 5 AFTER a", "d", "d", "t", (Step(ADD, new="c"),)),
    ("ALTER TABLE t ADD c INT FIRST", "d", "d", "t", (Step(ADD, new="c"),)),
    ("ALTER TABLE t ADD (c INT, e TEXT)", "d", "d", "t", (Step(ADD, new="c"), Step(ADD, new="e"))),
    ("ALTER TABLE t ADD c INT AFTER a, DROP b, CHANGE a a2 BIGINT, RENAME COLUMN id TO k", "d", "d", "t",
     (Step(ADD, new="c"), Step(DROP, old="b"), Step(RENAME, "a", "a2"), Step(RENAME, "id", "k"))),
    # keys, defaults, table options: no column step
    ("ALTER TABLE t ADD UNIQUE KEY u (a), DROP INDEX ix, RENAME INDEX x TO y", "d", "d", "t", ()),
    ("ALTER TABLE t ALTER COLUMN a SET DEFAULT 3", "d", "d", "t", ()),
    ("ALTER TABLE t ENGINE=InnoDB", "d", "d", "t", ()),
    ("TRUNCATE TABLE t", "d", "d", "t", ()),
    ("CREATE INDEX ix ON t (a)", "d", "d", "t", ()),
    # qualified and unqualified names: the default database names an unqualified table only
    ("ALTER TABLE d.t DROP a", "e", "d", "t", (Step(DROP, old="a"),)),
    ("ALTER TABLE `d`.`t` DROP a", "e", "d", "t", (Step(DROP, old="a"),)),
    ("ALTER TABLE t DROP a", "e", "d", "t", ()),             # that is e.t
    ("ALTER TABLE t DROP a", "e", "e", "t", (Step(DROP, old="a"),)),
    ("ALTER TABLE e.t DROP a", "d", "d", "t", ()),
    ("ALTER TABLE u DROP a", "d", "d", "t", ()),             # another table
    # ALTER ... RENAME TO: the table's steps, then its name is gone; the new name starts anew
    ("ALTER TABLE t RENAME TO t2", "d", "d", "t", (Step(GONE),)),
    ("ALTER TABLE t ADD c INT, RENAME TO e.t", "d", "d", "t", (Step(ADD, new="c"), Step(GONE))),
    ("ALTER TABLE t RENAME COLUMN a TO b, RENAME TO t2", "d", "d", "t2", (Step(REPLACE),)),
    ("ALTER TABLE u RENAME TO t", "d", "d", "t", (Step(REPLACE),)),
    ("ALTER TABLE t RENAME TO d.t, ADD c INT", "d", "d", "t", (Step(ADD, new="c"),)),  # its own name
    # CREATE TABLE, CREATE ... LIKE of the table: made anew
    ("CREATE TABLE t (id INT PRIMARY KEY, w TEXT)", "d", "d", "t", (Step(REPLACE),)),
    ("CREATE OR REPLACE TABLE d.t (id INT)", "e", "d", "t", (Step(REPLACE),)),
    ("CREATE TABLE t LIKE u", "d", "d", "t", (Step(REPLACE),)),
    ("CREATE TABLE t2 LIKE t", "d", "d", "t", ()),           # t is only read
    ("CREATE TABLE e.t (id INT)", "d", "d", "t", ()),
    # DROP TABLE (among others), DROP DATABASE: the table is gone
    ("DROP TABLE t", "d", "d", "t", (Step(GONE),)),
    ("DROP TABLE IF EXISTS x, t, e.y", "d", "d", "t", (Step(GONE),)),
    ("DROP TABLE x, e.t", "d", "d", "t", ()),
    ("DROP DATABASE d", "e", "d", "t", (Step(GONE),)),
    ("DROP SCHEMA IF EXISTS d", "", "d", "t", (Step(GONE),)),
    ("DROP DATABASE e", "d", "d", "t", ()),
    # RENAME TABLE: renamed away is gone, renamed onto the name starts anew, in the pairs' order
    ("RENAME TABLE t TO t_old", "d", "d", "t", (Step(GONE),)),
    ("RENAME TABLE t_new TO t", "d", "d", "t", (Step(REPLACE),)),
    ("RENAME TABLE t TO t_old, t_new TO t", "d", "d", "t", (Step(GONE), Step(REPLACE))),
    ("RENAME TABLE t TO tmp, u TO t, tmp TO u", "d", "d", "tmp", (Step(REPLACE), Step(GONE))),
    ("RENAME TABLE d.t TO e.t", "x", "e", "t", (Step(REPLACE),)),
    ("RENAME TABLE x TO y, e.t TO e.u", "d", "d", "t", ()),
    # statements that cannot be read, or that the schema history refuses: nothing here
    ("ALTER TABLE t RENAME COLUMN a", "d", "d", "t", ()),
    ("ALTER TABLE t CHANGE a", "d", "d", "t", ()),
    ("ALTER TABLE t DROP a", "", "d", "t", ()),              # no database for t
    ("ALTER TABLE t ADD SYSTEM VERSIONING", "d", "d", "t", ()),
    ("", "d", "d", "t", ()),
])
def test_steps_of_one_statement(statement, default_db, database, table, expected):
    assert column_steps(statement, default_db, database, table) == expected


# -- EndNames: names walked back over steps ----------------------------------------------------
def walked_back(*steps: Step) -> EndNames:
    """The names before `steps` (in commit order), given the end's."""
    names = IDENTITY
    for step in reversed(steps):
        names = names.before(step)
    return names


def test_end_compares_names_as_mysql_does():
    assert IDENTITY.identity and IDENTITY.end("Abc") == "Abc"
    names = EndNames({"a": "b", "c": None})
    assert not names.identity
    assert (names.end("A"), names.end("a"), names.end("C"), names.end("other")) == ("b", "b", None, "other")
    gone = EndNames({"a": "x"}, others_gone=True)
    assert (gone.end("A"), gone.end("other"), gone.identity) == ("x", None, False)


# (steps in commit order, {name before them: its name at the end or None})
WALKS = [
    ([Step(RENAME, "a", "b")], {"a": "b", "A": "b", "b": None, "c": "c"}),
    ([Step(RENAME, "A", "B")], {"a": "B", "b": None}),
    ([Step(RENAME, "a", "A")], {"a": "A", "A": "A"}),              # a case-only rename keeps the column
    ([Step(RENAME, "a", "b"), Step(RENAME, "b", "c")], {"a": "c", "b": None, "c": None}),
    ([Step(RENAME, "a", "b"), Step(RENAME, "B", "c")], {"a": "c", "b": None, "c": None}),
    # swap a and b through a temporary name
    ([Step(RENAME, "a", "tmp"), Step(RENAME, "b", "a"), Step(RENAME, "tmp", "b")],
     {"a": "b", "b": "a", "tmp": None, "id": "id"}),
    ([Step(DROP, old="a")], {"a": None, "b": "b"}),
    ([Step(ADD, new="a")], {"a": None, "b": "b"}),
    ([Step(DROP, old="a"), Step(ADD, new="a")], {"a": None, "b": "b"}),   # the new a is another column
    ([Step(ADD, new="c"), Step(RENAME, "c", "d")], {"c": None, "d": None}),
    ([Step(RENAME, "a", "b"), Step(ADD, new="a")], {"a": "b", "b": None}),  # the old a is the end's b
    ([Step(RENAME, "a", "b"), Step(DROP, old="b")], {"a": None, "b": None}),
    ([Step(REPLACE)], {"a": None, "id": None}),
    ([Step(REPLACE), Step(RENAME, "a", "b")], {"a": None, "b": None, "id": None}),
    ([Step(RENAME, "a", "b"), Step(REPLACE)], {"a": None, "b": None, "id": None}),
    ([Step(GONE)], {"a": "a", "id": "id"}),
    ([Step(RENAME, "a", "b"), Step(GONE)], {"a": "b", "b": None}),
]


@pytest.mark.parametrize("steps, expected", WALKS)
def test_names_walked_back_over_steps(steps, expected):
    names = walked_back(*steps)
    assert {name: names.end(name) for name in expected} == expected


def test_in_between_steps_of_a_swap():
    # after `a TO tmp` (before `b TO a`, `tmp TO b`): tmp is the end's b, b the end's a
    names = walked_back(Step(RENAME, "b", "a"), Step(RENAME, "tmp", "b"))
    assert (names.end("tmp"), names.end("b"), names.end("a")) == ("b", "a", None)


def test_before_keeps_the_names_after_unchanged():
    after = EndNames({"x": "y"})
    before = after.before(Step(RENAME, "a", "b"))
    assert after == EndNames({"x": "y"})
    assert before == EndNames({"x": "y", "a": "b", "b": None})
    assert after.before(Step(GONE)) is after
    assert after.before(Step(REPLACE)) == EndNames({}, True)


# -- end_names: each change's names, and the batch start's --------------------------------------
def ddl(statement, database="d"):
    return change_of("ddl", statement=statement, database=database)


def row(op="insert"):
    return change_of(op)


A_TO_B = EndNames({"a": "b", "b": None, "c": None})


@pytest.mark.parametrize("changes, per_change, start", [
    ([], [], IDENTITY),
    ([row(), row("update"), row("delete")], [IDENTITY] * 3, IDENTITY),
    # a DDL change's own names are those after it
    ([row(), ddl("ALTER TABLE t RENAME COLUMN a TO b"), row(),
      ddl("ALTER TABLE t DROP COLUMN c"), row("update")],
     [A_TO_B, EndNames({"c": None}), EndNames({"c": None}), IDENTITY, IDENTITY], A_TO_B),
    # another table's DDL, or `t` of another default database: nothing
    ([row(), ddl("ALTER TABLE u DROP a"), ddl("ALTER TABLE t DROP a", database="e"), row()],
     [IDENTITY] * 4, IDENTITY),
    ([row(), ddl("ALTER TABLE d.t DROP a", database="e")],
     [EndNames({"a": None}), IDENTITY], EndNames({"a": None})),
    ([row(), ddl(None), ddl("ALTER TABLE t CHANGE a")], [IDENTITY] * 3, IDENTITY),  # no text; unreadable
    # one statement's steps walk back in reverse: a -> b -> c is a's end c
    ([row(), ddl("ALTER TABLE t RENAME COLUMN a TO b, RENAME COLUMN b TO c")],
     [EndNames({"a": "c", "b": None, "c": None}), IDENTITY], EndNames({"a": "c", "b": None, "c": None})),
    # a swap over three statements
    ([row(), ddl("ALTER TABLE t RENAME COLUMN a TO tmp"), ddl("ALTER TABLE t RENAME COLUMN b TO a"),
      ddl("ALTER TABLE t RENAME COLUMN tmp TO b"), row()],
     [EndNames({"a": "b", "b": "a", "tmp": None}), EndNames({"b": "a", "a": None, "tmp": "b"}),
      EndNames({"tmp": "b", "b": None}), IDENTITY, IDENTITY],
     EndNames({"a": "b", "b": "a", "tmp": None})),
    # dropped, then added again: the old a reaches no column
    ([row(), ddl("ALTER TABLE t DROP a"), row(), ddl("ALTER TABLE t ADD a INT"), row()],
     [EndNames({"a": None})] * 3 + [IDENTITY] * 2, EndNames({"a": None})),
    # dropped at the end: its rows keep their names (the Delta table keeps them)
    ([row(), ddl("DROP TABLE t")], [IDENTITY, IDENTITY], IDENTITY),
    # dropped and created again: nothing before the CREATE reaches the end
    ([row(), ddl("DROP TABLE t"), ddl("CREATE TABLE t (k BIGINT PRIMARY KEY, w TEXT)"), row()],
     [EndNames({}, True), EndNames({}, True), IDENTITY, IDENTITY], EndNames({}, True)),
    ([row(), ddl("RENAME TABLE t TO t_old, t_new TO t"), row()],
     [EndNames({}, True), IDENTITY, IDENTITY], EndNames({}, True)),
])
def test_end_names_of_a_batch(changes, per_change, start):
    assert end_names(changes, "d", "t") == (per_change, start)


def test_end_names_continue_from_the_names_after_the_last_change():
    """A table renamed in the batch: its changes before the rename take the names its new name's
    changes start with (`at_end`), walked back over its own DDL."""
    later = EndNames({"a": "b", "b": None})
    changes = [row(), ddl("ALTER TABLE t DROP COLUMN c"), row()]
    per_change, start = end_names(changes, "d", "t", at_end=later)
    before_drop = EndNames({"a": "b", "b": None, "c": None})
    assert (per_change, start) == ([before_drop, later, later], before_drop)
    assert end_names([], "d", "t", at_end=later) == ([], later)


def _history_before(*schemas):
    """`before` for end_names: the schema before each DDL of the list, in order (the history's)."""
    parsed = iter([TableSchema.parse(s, "d") if s else None for s in schemas])
    return lambda change: next(parsed)


def test_a_create_if_not_exists_of_a_table_that_exists_changes_nothing():
    """CREATE TABLE IF NOT EXISTS of a table that exists does nothing (MariaDB: note 1050), and the
    server logs it all the same: the history's schema before it says the table was there, so the
    row logged before it reaches the end."""
    changes = [ddl("CREATE TABLE t (id INT PRIMARY KEY, a INT)"), row(),
               ddl("CREATE TABLE IF NOT EXISTS t (id INT PRIMARY KEY, other INT)"), row("update")]
    before = _history_before("CREATE TABLE t (id INT PRIMARY KEY, a INT)", None)  # walked from the end
    per_change, start = end_names(changes, "d", "t", before=before)
    assert per_change == [IDENTITY, IDENTITY, IDENTITY, IDENTITY]
    assert start == EndNames({}, True)
    assert with_names_at_end(changes[1], per_change[1]).op == Op.INSERT
    # Without the history's word the CREATE counts: the row before it is superseded.
    per_change, _ = end_names(changes, "d", "t")
    assert with_names_at_end(changes[1], per_change[1]).op == Op.SUPERSEDED


def test_an_add_column_if_not_exists_of_a_column_that_exists_changes_nothing():
    """ADD COLUMN IF NOT EXISTS of a column that exists does nothing (MariaDB: note 1060): the
    row logged before it keeps its `a`."""
    changes = [ddl("ALTER TABLE t ADD COLUMN a INT"), row(),
               ddl("ALTER TABLE t ADD COLUMN IF NOT EXISTS a BIGINT")]
    # walked from the end
    before = _history_before("CREATE TABLE t (id INT, a INT)", "CREATE TABLE t (id INT)")
    per_change, start = end_names(changes, "d", "t", before=before)
    assert per_change == [IDENTITY, IDENTITY, IDENTITY]
    assert start == EndNames({"a": None})


def test_drop_and_change_if_exists_of_a_missing_column_change_nothing():
    steps = column_steps("ALTER TABLE t DROP COLUMN IF EXISTS x, CHANGE COLUMN IF EXISTS y z INT, "
                         "DROP COLUMN a",
                         "d", "d", "t", TableSchema.parse("CREATE TABLE t (id INT, a INT)", "d"))
    assert steps == (Step(DROP, old="a"),)


# -- with_names_at_end: images renamed to the end's names ---------------------------------------
def value(ordinal, name, text):
    return {"ordinal": ordinal, "name": name, "text": text, "binary": None}


def update(before, after):
    return change_of("update", before=before, after=after)


def test_identity_returns_the_change_itself():
    change = update([value(0, "a", "1")], [value(0, "a", "2")])
    assert with_names_at_end(change, IDENTITY) is change


def test_images_take_the_end_names():
    change = update([value(0, "id", "1"), value(1, "A", "10"), value(2, "c", "x"), value(3, None, "p")],
                    [value(0, "id", "1"), value(1, "a", "11"), value(2, "c", "y"), value(3, None, "q")])
    out = with_names_at_end(change, EndNames({"a": "bee", "c": None}))
    assert out == update([value(0, "id", "1"), value(1, "bee", "10"), value(3, None, "p")],
                         [value(0, "id", "1"), value(1, "bee", "11"), value(3, None, "q")])
    assert out.before[0] is change.before[0]  # a name kept as it is: the same column value
    assert change.before[1]["name"] == "A" and len(change.after) == 4  # the input is left as it was


@pytest.mark.parametrize("op, before, after, names, expected_before, expected_after", [
    ("insert", None, [value(0, "a", "1"), value(1, "b", "2")], EndNames({"b": None}),
     None, [value(0, "a", "1")]),
    ("delete", [value(0, "a", "1")], None, EndNames({"a": "z"}), [value(0, "z", "1")], None),
    ("insert", None, [value(0, "a", "1")], EndNames({"a": None}), None, []),
    ("insert", None, [value(0, "A", "1")], EndNames({"x": None}), None, [value(0, "A", "1")]),
    ("insert", None, [value(0, None, "1")], EndNames({"a": None}), None, [value(0, None, "1")]),
])
def test_one_image(op, before, after, names, expected_before, expected_after):
    out = with_names_at_end(change_of(op, before=before, after=after), names)
    assert (out.op, out.before, out.after) == (op, expected_before, expected_after)


@pytest.mark.parametrize("op, expected", [
    ("insert", Op.SUPERSEDED), ("update", Op.SUPERSEDED), ("delete", Op.SUPERSEDED), ("ddl", Op.DDL)])
def test_rows_of_a_table_made_anew_later_are_superseded(op, expected):
    change = change_of(op, after=None if op == "ddl" else [value(0, "a", "1")])
    out = with_names_at_end(change, EndNames({}, True))
    assert out == change_of(expected, after=change.after)
    assert change.op == op


# -- creates: does the statement CREATE d.t -----------------------------------------------------
@pytest.mark.parametrize("statement, default_db, expected", [
    ("CREATE TABLE t (id INT PRIMARY KEY)", "d", True),
    ("CREATE TABLE d.t (id INT)", "e", True),
    ("CREATE TABLE IF NOT EXISTS t (id INT)", "d", True),  # whether it did: the schema history's
    ("CREATE OR REPLACE TABLE t (id INT)", "d", True),
    ("CREATE TABLE t LIKE u", "d", True),
    ("CREATE TABLE t2 LIKE t", "d", False),
    ("CREATE TABLE t (id INT)", "e", False),              # e.t
    ("CREATE TEMPORARY TABLE t (id INT)", "d", False),
    ("CREATE TABLE t SELECT 1 AS x", "d", False),         # refused: its columns are not in the binlog
    ("CREATE TABLE t (id INT", "d", False),               # unreadable
    ("ALTER TABLE t ADD c INT", "d", False),
    ("RENAME TABLE u TO t", "d", False),                  # u's rows come along: not a new, empty table
    ("DROP TABLE t", "d", False),
    ("TRUNCATE TABLE t", "d", False),
])
def test_creates(statement, default_db, expected):
    assert creates(statement, default_db, "d", "t") is expected


def test_a_ddl_the_history_refused_changes_no_name():
    """A DDL the schema history refused for the table (its later rows are quarantined) is no
    step: the rows before it keep their names, and nothing starts anew."""
    swap = ddl("RENAME TABLE t TO t_old, t_new TO t")
    changes = [row(), swap, row()]
    assert end_names(changes, "d", "t") == ([EndNames({}, True), IDENTITY, IDENTITY], EndNames({}, True))
    assert end_names(changes, "d", "t", refused=lambda change: change is swap) == ([IDENTITY] * 3, IDENTITY)


def test_a_new_snapshot_starts_the_table_anew():
    """A snapshot's truncate (the table snapshotted again): no column before it reaches the end."""
    changes = [row(), change_of("truncate"), row("snapshot")]
    assert end_names(changes, "d", "t") == ([EndNames({}, True), IDENTITY, IDENTITY], EndNames({}, True))

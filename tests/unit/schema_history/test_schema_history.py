"""Schema versions by binlog position (libs/schema_history/history.py): the version in force for
a row, renames moving a history, drops, truncates, CREATE ... LIKE, replays, and errors naming
source, position and statement."""

import pytest

from libs.schema_history.history import (
    ALTERED, CREATED, DROPPED, RENAMED, TRUNCATED, UNSUPPORTED, HistoryError, SchemaHistory)
from libs.schema_history.statements import TableName
from libs.schema_history.table_schema import TableSchema
from libs.contracts.position import BinlogPosition

T = TableSchema.parse("CREATE TABLE d.t (id INT PRIMARY KEY, a INT)", "d")


def at(pos, file="mdb-bin.000002"):
    return BinlogPosition(file, pos)


def history():
    h = SchemaHistory()
    h.start("src", T, at(100))
    return h


def names(h, table, pos, database="d", file="mdb-bin.000002"):
    schema = h.at("src", database, table, at(pos, file))
    return None if schema is None else schema.column_names


def test_a_row_reads_with_the_version_before_its_position():
    h = history()
    (change,) = h.apply("src", at(500), "ALTER TABLE t ADD b INT AFTER id", "d")
    assert change.kind == ALTERED and change.before == T and change.after.column_names == ("id", "b", "a")
    h.apply("src", at(900), "ALTER TABLE t DROP a", "d")
    assert [names(h, "t", p) for p in (50, 100, 101, 499, 501, 899, 901)] == [
        None, None, ("id", "a"), ("id", "a"), ("id", "b", "a"), ("id", "b", "a"), ("id", "b")]
    assert names(h, "t", 4, file="mdb-bin.000010") == ("id", "b")  # a later file: later, whatever the pos
    assert [v.statement for v in h.versions("src", "d", "t")] == [
        None, "ALTER TABLE t ADD b INT AFTER id", "ALTER TABLE t DROP a"]


def test_sources_and_databases_are_separate():
    h = history()
    h.apply("src", at(500), "ALTER TABLE t ADD b INT", "d")
    assert names(h, "t", 600, database="e") is None
    assert h.at("other", "d", "t", at(600)) is None


def test_rename_moves_the_history_and_a_swap_works():
    h = history()
    h.start("src", TableSchema.parse("CREATE TABLE d.u (k INT)", "d"), at(100))
    changes = h.apply("src", at(500), "RENAME TABLE t TO tmp, u TO t, tmp TO u", "d")
    assert [(c.kind, str(c.renamed_from), str(c.name)) for c in changes] == [
        (RENAMED, "d.t", "d.tmp"), (RENAMED, "d.u", "d.t"), (RENAMED, "d.tmp", "d.u")]
    assert names(h, "t", 400) == ("id", "a") and names(h, "t", 600) == ("k",)
    assert names(h, "u", 600) == ("id", "a") and names(h, "tmp", 600) is None
    assert h.at("src", "d", "u", at(600)).table == "u"


def test_alter_rename_to_another_database():
    h = history()
    (change,) = h.apply("src", at(500), "ALTER TABLE t RENAME TO e.t2, ADD c INT", "d")
    assert change.kind == RENAMED and change.renamed_from == TableName("d", "t")
    assert names(h, "t2", 600, database="e") == ("id", "a", "c") and names(h, "t", 600) is None


def test_drop_truncate_create_and_like():
    h = history()
    (trunc,) = h.apply("src", at(300), "TRUNCATE TABLE t", "d")
    assert trunc.kind == TRUNCATED and trunc.after == T
    (created,) = h.apply("src", at(400), "CREATE TABLE d.n (x INT PRIMARY KEY)", "d")
    assert created.kind == CREATED and names(h, "n", 401) == ("x",)
    (like,) = h.apply("src", at(450), "CREATE TABLE m LIKE n", "d")
    assert like.kind == CREATED and h.at("src", "d", "m", at(451)).table == "m"
    assert h.apply("src", at(460), "CREATE TABLE IF NOT EXISTS m (y INT)", "d") == []
    (replaced,) = h.apply("src", at(470), "CREATE OR REPLACE TABLE m (y INT)", "d")
    assert (replaced.kind == CREATED and replaced.before.column_names == ("x",)
            and names(h, "m", 471) == ("y",))
    dropped = h.apply("src", at(500), "DROP TABLE IF EXISTS t, n, never", "d")
    assert [(c.kind, c.name.table, c.before is not None) for c in dropped] == [
        (DROPPED, "t", True), (DROPPED, "n", True), (DROPPED, "never", False)]
    assert names(h, "t", 501) is None and names(h, "t", 499) == ("id", "a")
    (again,) = h.apply("src", at(600), "CREATE TABLE t (z INT)", "d")  # a new table, a new history
    assert names(h, "t", 601) == ("z",) and names(h, "t", 550) is None


def test_drop_database_drops_its_tables():
    h = history()
    h.apply("src", at(400), "CREATE TABLE e.x (i INT)", "d")
    changes = h.apply("src", at(500), "DROP DATABASE d", "")
    assert [(c.kind, str(c.name)) for c in changes] == [(DROPPED, "d.t")]
    assert names(h, "x", 600, database="e") == ("i",)


def test_ddl_of_a_table_without_history_changes_nothing():
    h = history()
    assert h.apply("src", at(500), "ALTER TABLE nobody ADD c INT", "d") == []
    assert h.apply("src", at(510), "RENAME TABLE nobody TO somebody", "d") == []
    assert h.apply("src", at(520), "CREATE INDEX i ON t (a)", "d") == []
    assert h.tables() == [("src", "d", "t")]


def test_unsupported_ddl_is_returned_for_the_policy_not_applied():
    h = history()
    (change,) = h.apply("src", at(500), "ALTER TABLE t TRUNCATE PARTITION p0", "d")
    assert change.kind == UNSUPPORTED and "TRUNCATE PARTITION" in change.reason
    assert names(h, "t", 600) == ("id", "a")


def test_a_replayed_ddl_gives_the_same_version_once():
    """A batch replayed after a crash applies its DDL again, to the version before it."""
    h = history()
    first = h.apply("src", at(500), "ALTER TABLE t ADD b INT", "d")
    again = h.apply("src", at(500), "ALTER TABLE t ADD b INT", "d")
    assert again == first and len(h.versions("src", "d", "t")) == 2
    assert names(h, "t", 600) == ("id", "a", "b")


def test_what_a_later_snapshot_holds_is_not_applied_again():
    """A DDL or a snapshot older than the table's latest version (a re-snapshot after it) is
    already in that version: nothing changes, nothing is reported."""
    h = history()
    h.start("src", TableSchema.parse("CREATE TABLE d.t (id INT PRIMARY KEY, a INT, z INT)", "d"), at(900))
    assert h.apply("src", at(500), "ALTER TABLE t ADD b INT", "d") == []
    assert h.apply("src", at(510), "TRUNCATE t", "d") == []
    h.start("src", T, at(200))
    assert names(h, "t", 1000) == ("id", "a", "z") and len(h.versions("src", "d", "t")) == 2


def test_added_at_lists_the_versions_a_ddl_gave():
    h = history()
    h.apply("src", at(500), "RENAME TABLE t TO u", "d")
    assert [(str(n), v.schema and v.schema.table) for n, v in h.added_at("src", at(500))] == [
        ("d.t", None), ("d.u", "u")]


@pytest.mark.parametrize("statement, reason", [
    ("ALTER TABLE t DROP COLUMN nope", "d.t has no column 'nope'"),
    ("ALTER TABLE t ADD COLUMN x NOTATYPE(", "cannot read the DDL"),
    ("CREATE TABLE c LIKE unknown", "d.unknown is not known"),
])
def test_errors_name_source_position_and_statement(statement, reason):
    h = history()
    with pytest.raises(HistoryError) as exc:
        h.apply("src", at(500), statement, "d")
    assert str(exc.value).startswith("source src, mdb-bin.000002:500: ") and reason in str(exc.value)
    assert str(exc.value).endswith(f"statement: {statement}")
    assert names(h, "t", 600) == ("id", "a")  # nothing of a failed DDL is kept

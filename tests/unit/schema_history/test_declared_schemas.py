"""A target declared by hand follows its source's DDL as a MySQL replica's own table does
(libs/schema_history/declared_schemas.py; issue #17 item 3: "ADD COLUMN (with the replica-side
DEFAULT of the declaration if one exists, else the source's)"; README "Schema changes"; WL#5092
"Tm and Ts"). The declaration is the replica's table: each ALTER of the source applies to it, a
column it declares keeps its declared definition when the source adds it, an action on a column
it lacks does nothing, a CREATE of the name or a table renamed to it starts it again as declared,
and a refused DDL, a DROP or a later snapshot change nothing. The catalog's declared targets are
built again on that schema with their YAML entry's settings, `defaults` and `key`."""
from __future__ import annotations

from dataclasses import replace

import pytest

from libs.schema_history.declared_schemas import declared_schema, followed_declarations
from libs.schema_history.history import HistoryError, SchemaHistory, Version
from libs.schema_history.table_schema import TableSchema
from libs.contracts.position import BinlogPosition
from libs.targets import model
from libs.targets.config import build_catalog
from libs.targets.ddl import parse_ddl

SOURCE = "CREATE TABLE db.t (id INT PRIMARY KEY, a INT, b VARCHAR(10), e INT, x INT)"
DECLARED = "CREATE TABLE db.t (id INT PRIMARY KEY, a INT, b VARCHAR(10) DEFAULT 'rep')"
DECLARED_C = "CREATE TABLE db.t (id INT PRIMARY KEY, a INT, b VARCHAR(10) DEFAULT 'rep', c INT DEFAULT 7)"
ID, A, B, C7 = "id INT", "a INT", "b VARCHAR(10) DEFAULT 'rep'", "c INT DEFAULT 7"
AS_DECLARED = (ID, A, B)


def at(pos: int) -> BinlogPosition:
    return BinlogPosition("bin.000001", pos)


def version(statement: str | None, schema: str | None = SOURCE, error: str | None = None):
    """A step that is not a plain DDL applied (a plain one is its statement's text)."""
    return statement, schema, error


def versions(*steps) -> list[Version]:
    """The start (a snapshot), then one version per step."""
    out = [Version(at(4), TableSchema.parse(SOURCE, "db"))]
    for i, step in enumerate(steps, 1):
        statement, schema, error = version(step) if isinstance(step, str) else step
        out.append(Version(at(100 * i), schema and TableSchema.parse(schema, "db"), statement, error))
    return out


# -- declared_schema: the declaration folded through the versions' DDL ---------------------------
@pytest.mark.parametrize("declared, steps, columns, key", [
    pytest.param(DECLARED, [], AS_DECLARED, ("id",), id="no-ddl"),
    # ADD COLUMN: the source's definition at the source's place, unless the declaration has the column
    pytest.param(DECLARED, ["ALTER TABLE t ADD COLUMN c INT DEFAULT 1 AFTER a"],
                 (ID, A, "c INT DEFAULT 1", B), ("id",), id="add-takes-the-sources-definition"),
    pytest.param(DECLARED_C, ["ALTER TABLE t ADD COLUMN c INT DEFAULT 1 AFTER a"],
                 (ID, A, B, C7), ("id",), id="add-of-a-declared-column-keeps-it"),
    pytest.param(DECLARED_C, ["ALTER TABLE t ADD COLUMN C BIGINT FIRST"],
                 (ID, A, B, C7), ("id",), id="add-of-a-declared-column-any-case"),
    pytest.param(DECLARED_C, ["ALTER TABLE t DROP COLUMN c",
                              "ALTER TABLE t ADD COLUMN c INT DEFAULT 1 AFTER a"],
                 (ID, A, C7, B), ("id",), id="drop-then-add-takes-the-declared-definition-at-the-adds-place"),
    pytest.param(DECLARED_C, ["ALTER TABLE t DROP COLUMN c, ADD COLUMN c INT DEFAULT 1 FIRST"],
                 (C7, ID, A, B), ("id",), id="drop-and-add-in-one-alter"),
    pytest.param(DECLARED, ["ALTER TABLE t ADD COLUMN d INT AFTER x"],
                 (*AS_DECLARED, "d INT"), ("id",), id="add-after-a-column-the-replica-lacks-goes-last"),
    pytest.param(DECLARED, ["ALTER TABLE t ADD COLUMN d INT FIRST"],
                 ("d INT", *AS_DECLARED), ("id",), id="add-first"),
    pytest.param(DECLARED, ["ALTER TABLE t ADD COLUMN (d INT, e TEXT)"],
                 (*AS_DECLARED, "d INT", "e TEXT"), ("id",), id="add-a-list"),
    # DROP, RENAME, CHANGE, MODIFY: on the columns the declaration has
    pytest.param(DECLARED, ["ALTER TABLE t DROP COLUMN x"],
                 AS_DECLARED, ("id",), id="drop-of-an-absent-column"),
    pytest.param(DECLARED, ["ALTER TABLE t DROP COLUMN b"], (ID, A), ("id",), id="drop"),
    pytest.param(DECLARED, ["ALTER TABLE t DROP COLUMN id"], (A, B), (), id="drop-of-the-key-column"),
    pytest.param(DECLARED, ["ALTER TABLE t RENAME COLUMN b TO bee"],
                 (ID, A, "`bee` VARCHAR(10) DEFAULT 'rep'"), ("id",),
                 id="rename-keeps-the-declared-definition"),
    pytest.param(DECLARED, ["ALTER TABLE t RENAME COLUMN x TO y"],
                 AS_DECLARED, ("id",), id="rename-of-an-absent-column"),
    pytest.param(DECLARED, ["ALTER TABLE t CHANGE b bee BIGINT"],
                 (ID, A, "bee BIGINT"), ("id",), id="change"),
    pytest.param(DECLARED, ["ALTER TABLE t CHANGE id k BIGINT"],
                 ("k BIGINT", A, B), ("k",), id="change-renames-the-key"),
    pytest.param(DECLARED, ["ALTER TABLE t CHANGE b bee BIGINT FIRST"],
                 ("bee BIGINT", ID, A), ("id",), id="change-first"),
    pytest.param(DECLARED, ["ALTER TABLE t CHANGE b bee BIGINT AFTER x"],
                 (ID, A, "bee BIGINT"), ("id",), id="change-after-a-column-the-replica-lacks-stays"),
    pytest.param(DECLARED, ["ALTER TABLE t CHANGE x y BIGINT"],
                 AS_DECLARED, ("id",), id="change-of-an-absent-column"),
    pytest.param(DECLARED, ["ALTER TABLE t MODIFY a BIGINT"], (ID, "a BIGINT", B), ("id",), id="modify"),
    pytest.param(DECLARED, ["ALTER TABLE t MODIFY b VARCHAR(20)"],
                 (ID, A, "b VARCHAR(20)"), ("id",), id="modify-replaces-the-declared-default-too"),
    pytest.param(DECLARED, ["ALTER TABLE t MODIFY x BIGINT"],
                 AS_DECLARED, ("id",), id="modify-of-an-absent-column"),
    # defaults and keys
    pytest.param(DECLARED, ["ALTER TABLE t ALTER COLUMN a SET DEFAULT 5"],
                 (ID, "a INT DEFAULT 5", B), ("id",), id="set-default"),
    pytest.param(DECLARED, ["ALTER TABLE t ALTER COLUMN b DROP DEFAULT"],
                 (ID, A, "b VARCHAR(10)"), ("id",), id="drop-default"),
    pytest.param(DECLARED, ["ALTER TABLE t ALTER COLUMN x SET DEFAULT 5"],
                 AS_DECLARED, ("id",), id="set-default-of-an-absent-column"),
    pytest.param(DECLARED, ["ALTER TABLE t ADD PRIMARY KEY (a)"],
                 AS_DECLARED, ("id",), id="add-key-over-the-declared-key"),
    pytest.param("CREATE TABLE db.t (id INT, a INT)", ["ALTER TABLE t ADD PRIMARY KEY (a)"],
                 (ID, A), ("a",), id="add-key"),
    pytest.param(DECLARED, ["ALTER TABLE t DROP PRIMARY KEY, ADD PRIMARY KEY (a)"],
                 AS_DECLARED, ("a",), id="key-replaced"),
    pytest.param(DECLARED, ["ALTER TABLE t DROP PRIMARY KEY, ADD PRIMARY KEY (x)"],
                 AS_DECLARED, (), id="key-on-an-absent-column"),
    # versions that are not a DDL applied to a live table
    pytest.param(DECLARED, [version("ALTER TABLE t DROP COLUMN b", error="refused")],
                 AS_DECLARED, ("id",), id="refused-ddl"),
    pytest.param(DECLARED, [version("ALTER TABLE t DROP COLUMN b", None, "refused")],
                 AS_DECLARED, ("id",), id="refused-ddl-as-the-history-keeps-it"),
    pytest.param(DECLARED, ["ALTER TABLE t ADD d INT", version("DROP TABLE t", None)],
                 (*AS_DECLARED, "d INT"), ("id",), id="drop-table-keeps-the-last-schema"),
    pytest.param(DECLARED, [version("ALTER TABLE t ADD d INT, RENAME TO db.u", None)],
                 AS_DECLARED, ("id",), id="renamed-away-as-the-history-keeps-it"),
    pytest.param(DECLARED, ["ALTER TABLE t ADD d INT", version(None)],
                 (*AS_DECLARED, "d INT"), ("id",), id="later-snapshot"),
    # the table made anew under the name: the declaration again
    pytest.param(DECLARED, ["ALTER TABLE t DROP COLUMN b", "ALTER TABLE t ADD d INT",
                            "CREATE TABLE t (k BIGINT PRIMARY KEY, other TEXT)"],
                 AS_DECLARED, ("id",), id="create-table"),
    pytest.param(DECLARED, ["ALTER TABLE t DROP COLUMN b", version("DROP TABLE t", None),
                            "CREATE TABLE db.t (k BIGINT PRIMARY KEY)", "ALTER TABLE t ADD d INT"],
                 (*AS_DECLARED, "d INT"), ("id",), id="create-table-then-alter"),
    pytest.param(DECLARED, ["ALTER TABLE t DROP COLUMN b", "CREATE TABLE t LIKE s"],
                 AS_DECLARED, ("id",), id="create-like"),
    pytest.param(DECLARED, ["ALTER TABLE t DROP COLUMN b", "RENAME TABLE db.s TO db.t"],
                 AS_DECLARED, ("id",), id="renamed-to-the-name"),
    pytest.param(DECLARED, ["ALTER TABLE t DROP COLUMN b", "RENAME TABLE t TO t_old, t_new TO t"],
                 AS_DECLARED, ("id",), id="swapped-in"),
    pytest.param(DECLARED, ["ALTER TABLE t DROP COLUMN b", "ALTER TABLE db.s ADD d INT, RENAME TO db.t"],
                 AS_DECLARED, ("id",), id="alter-rename-to-the-name"),
    # other tables, and a table renamed away
    pytest.param(DECLARED, ["ALTER TABLE db.t RENAME TO db.u"], AS_DECLARED, ("id",), id="alter-rename-away"),
    pytest.param(DECLARED, ["ALTER TABLE t ADD d INT, RENAME TO db.t"],
                 (*AS_DECLARED, "d INT"), ("id",), id="alter-rename-to-its-own-name"),
    pytest.param(DECLARED, ["CREATE TABLE db.s (k INT)", "CREATE TABLE other.t (k INT)",
                            "CREATE TABLE s LIKE t", "ALTER TABLE other.t DROP a", "ALTER TABLE s DROP a"],
                 AS_DECLARED, ("id",), id="statements-of-other-tables"),
    pytest.param(DECLARED, ["ALTER TABLE t ADD d INT, DROP b"],
                 (ID, A, "d INT"), ("id",), id="several-actions"),
    pytest.param(DECLARED, ["ALTER TABLE t DROP x, ADD d INT, MODIFY a BIGINT"],
                 (ID, "a BIGINT", B, "d INT"), ("id",), id="several-actions-one-on-an-absent-column"),
])
def test_the_declaration_through_the_sources_ddl(declared, steps, columns, key):
    schema = declared_schema(TableSchema.parse(declared, "db"), versions(*steps))
    assert [c.definition for c in schema.columns] == list(columns)
    assert schema.primary_key == key
    assert (schema.database, schema.table) == ("db", "t")


# -- followed_declarations: the catalog's declared targets on that schema -------------------------
def history(*statements: str, source: str = "src", start: str | None = SOURCE) -> SchemaHistory:
    """A snapshot of db.t (unless `start` is None), then each DDL as the job keeps it: applied,
    or refused when the history cannot apply it."""
    h = SchemaHistory()
    if start:
        h.start(source, TableSchema.parse(start, "db"), at(4))
    for i, statement in enumerate(statements, 1):
        try:
            h.apply(source, at(100 * i), statement, "db")
        except HistoryError as exc:
            h.refuse(source, at(100 * i), exc.names, statement, exc.reason)
    return h


def catalog(yaml: dict | None, ddl: str = ""):
    return build_catalog(yaml, "targets.yaml", parse_ddl(ddl, "replica.sql") if ddl else ())


def followed(cat, h, name="t"):
    return followed_declarations(cat, h).get("db", name)


def test_without_ddl_the_declaration_stays_as_written():
    cat = catalog({"targets": {"db.t": {"delta_table": "t_delta"}}}, DECLARED)
    h = history()
    h.start("src", TableSchema.parse(SOURCE, "db"), at(500))  # snapshotted again
    target = followed(cat, h)
    assert target == cat.get("db", "t")
    assert target.follows_source is False


def test_a_table_created_in_the_stream_without_ddl_after_stays_as_written():
    cat = catalog(None, DECLARED)
    target = followed(cat, history("CREATE TABLE t (id INT PRIMARY KEY, a INT, b VARCHAR(10))", start=None))
    assert target == cat.get("db", "t") and target.follows_source is False


def test_an_added_column_is_followed_with_the_entrys_settings():
    cat = catalog({"defaults": {"zero_dates": "fail"},
                   "targets": {"db.t": {"delta_table": "t_delta", "apply": "both",
                                        "on_statement": "quarantine",
                                        "key": ["id"], "defaults": {"b": "yaml", "e": 3}}}},
                  "CREATE TABLE db.t (id INT, a INT, b VARCHAR(10) DEFAULT 'rep', e INT)")
    before = cat.get("db", "t")
    target = followed(cat, history("ALTER TABLE t ADD COLUMN c INT DEFAULT 1 AFTER a",
                                   "ALTER TABLE t MODIFY b VARCHAR(20)",
                                   "ALTER TABLE t DROP COLUMN e",
                                   "ALTER TABLE t ADD COLUMN dt DATE"))
    assert before.column_names == ("id", "a", "b", "e") and before.follows_source is False
    assert target.column_names == ("id", "a", "c", "b", "dt") and target.follows_source is True
    c, b, dt = target.column("c"), target.column("b"), target.column("dt")
    assert (c.default_kind, c.default) == (model.LITERAL_DEFAULT, 1)
    assert (b.mysql_type, b.default_kind, b.default) == ("VARCHAR(20)", model.LITERAL_DEFAULT, "yaml")
    assert dt.zero_dates == model.ZERO_DATES_FAIL
    assert (target.delta_table, target.apply, target.on_statement, target.primary_key) == (
        "t_delta", frozenset({model.APPLY_ROWS, model.APPLY_STATEMENTS}),
        model.ON_STATEMENT_QUARANTINE, ("id",))


@pytest.mark.parametrize("column", [
    pytest.param({"name": "n", "type": "INT", "nullable": False}, id="not-null"),
    pytest.param({"name": "n", "type": "BIGINT UNSIGNED"}, id="unsigned"),
    pytest.param({"name": "n", "type": "DECIMAL(10,2)", "default": "1.50"}, id="decimal-default"),
    pytest.param({"name": "n", "type": "INT", "default": -3}, id="negative-default"),
    pytest.param({"name": "n", "type": "INT", "default": None}, id="default-null"),
    pytest.param({"name": "n", "type": "TINYINT(1)", "default": True}, id="boolean-default"),
    pytest.param({"name": "n", "type": "VARCHAR(10)", "default": "it's", "charset": "latin1"},
                 id="charset-and-quote"),
    pytest.param({"name": "n", "type": "VARCHAR(10)", "charset": "UTF8"}, id="charset-alias"),
    pytest.param({"name": "n", "type": "VARCHAR(10)", "default": "a\\b"}, id="backslash-default"),
    pytest.param({"name": "n", "type": "DATETIME(3)", "nullable": False, "default": "CURRENT_TIMESTAMP"},
                 id="current-timestamp"),
    pytest.param({"name": "n", "type": "DATE", "default": "2024-02-29"}, id="date-default"),
    pytest.param({"name": "n", "type": "TIME(2)", "default": "10:00:00.5"}, id="time-default"),
    pytest.param({"name": "n", "type": "ENUM('x','y')", "default": "y"}, id="enum"),
    pytest.param({"name": "n", "type": "BINARY(4)"}, id="binary"),
    pytest.param({"name": "n", "type": "JSON"}, id="json"),
])
def test_a_yaml_columns_declaration_keeps_its_columns_through_an_add(column):
    cat = catalog({"targets": {"db.t": {"columns": [{"name": "id", "type": "INT", "nullable": False}, column],
                                        "key": ["id"]}}})
    target = followed(cat, history("ALTER TABLE t ADD COLUMN z INT"))
    assert target.columns[:2] == cat.get("db", "t").columns
    assert target.column_names == ("id", "n", "z") and target.primary_key == ("id",) and target.follows_source


@pytest.mark.parametrize("statement",
                         ["ALTER TABLE t ADD COLUMN z INT", "ALTER TABLE t ADD COLUMN z INT AFTER legacy"])
def test_a_left_out_column_stays_out(statement):
    cat = catalog({"targets": {"db.t": {"leave_out": ["legacy"]}}},
                  "CREATE TABLE db.t (id INT PRIMARY KEY, a INT, legacy INT)")
    target = followed(cat, history(statement,
                                   start="CREATE TABLE db.t (id INT PRIMARY KEY, a INT, legacy INT)"))
    assert cat.get("db", "t").column_names == ("id", "a")
    assert target.column_names == ("id", "a", "z") and target.follows_source


@pytest.mark.parametrize("statements", [
    pytest.param(["ALTER TABLE t DROP COLUMN x"], id="an-action-on-a-column-it-lacks"),
    pytest.param(["ALTER TABLE t DROP COLUMN nosuch"], id="a-refused-ddl"),
    pytest.param(["DROP TABLE t"], id="drop-table"),
    pytest.param(["ALTER TABLE t DROP COLUMN b", "CREATE TABLE t (k INT)"], id="created-again"),
])
def test_ddl_that_leaves_the_declaration_as_it_is_follows_it_as_declared(statements):
    cat = catalog({"targets": {"db.t": {"delta_table": "t_delta", "defaults": {"b": "yaml"}}}}, DECLARED)
    target = followed(cat, history(*statements))
    assert target == replace(cat.get("db", "t"), follows_source=True)
    assert target.column("b").default == "yaml"


def test_a_declaration_whose_table_has_no_history_stays_as_written():
    cat = catalog(None, f"{DECLARED}; CREATE TABLE db.u (k INT PRIMARY KEY)")
    h = history("ALTER TABLE u ADD COLUMN v INT", start="CREATE TABLE db.u (k INT PRIMARY KEY)")
    assert followed(cat, h, "u").column_names == ("k", "v")
    t = followed(cat, h)
    assert t == cat.get("db", "t") and t.follows_source is False


def test_one_history_per_table_the_first_sources():
    cat = catalog(None, DECLARED)
    h = history(source="a")
    h.start("b", TableSchema.parse(SOURCE, "db"), at(4))
    h.apply("b", at(100), "ALTER TABLE t ADD COLUMN d INT", "db")
    assert followed(cat, h) == cat.get("db", "t")
    h.apply("a", at(100), "ALTER TABLE t ADD COLUMN f INT", "db")
    assert followed(cat, h).column_names == ("id", "a", "b", "f")


def test_a_yaml_default_follows_a_column_renamed_in_another_case_and_messages_name_both_files():
    cat = catalog({"targets": {"db.t": {"defaults": {"b": "yaml"}}}}, DECLARED)
    target = followed(cat, history("ALTER TABLE t CHANGE b B VARCHAR(10)"))
    assert target.column_names == ("id", "a", "B") and target.column("B").default == "yaml"
    assert target.declared_in == f"{cat.get('db', 't').declared_in} (as the source's DDL changed it)"
    assert target.declared_in.startswith("targets.yaml, replica.sql")

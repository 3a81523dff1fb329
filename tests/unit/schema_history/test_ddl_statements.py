"""DDL of the binlog -> schema changes (libs/schema_history/statements.py), and each ALTER
applied to a version as the server applies it (libs/schema_history/table_schema.py): ordinals,
keys and defaults. Written from MariaDB's ALTER TABLE documentation, one row per spelling."""

import json

import pytest

from libs.runtime.paths import CORPUS_DIR as CORPUS
from libs.schema_history import statements as S
from libs.schema_history.table_schema import SchemaChangeError, TableSchema

BASE = TableSchema.parse("CREATE TABLE d.t (id INT NOT NULL, a VARCHAR(10) DEFAULT 'x', b INT, "
                         "PRIMARY KEY (id), UNIQUE KEY ub (b)) DEFAULT CHARSET=latin1", "d")


def altered(sql: str) -> TableSchema:
    (change,) = S.parse(sql, "d")
    assert isinstance(change, S.AlterTable) and change.name == S.TableName("d", "t")
    return change.apply(BASE)


# (statement, columns after it, primary key, unique keys)
ALTERS = [
    ("ALTER TABLE t ADD COLUMN c INT", ("id", "a", "b", "c"), ("id",), (("ub", ("b",)),)),
    ("ALTER TABLE t ADD c INT FIRST", ("c", "id", "a", "b"), ("id",), (("ub", ("b",)),)),
    ("ALTER TABLE d.t ADD COLUMN c INT DEFAULT 5 AFTER id", ("id", "c", "a", "b"), ("id",),
     (("ub", ("b",)),)),
    ("ALTER TABLE `t` ADD COLUMN IF NOT EXISTS a INT", ("id", "a", "b"), ("id",), (("ub", ("b",)),)),
    ("ALTER TABLE t ADD (c INT, e TEXT)", ("id", "a", "b", "c", "e"), ("id",), (("ub", ("b",)),)),
    ("ALTER TABLE t ADD c INT AFTER a, ADD e INT FIRST, DROP b", ("e", "id", "a", "c"), ("id",), ()),
    ("ALTER TABLE t DROP COLUMN a", ("id", "b"), ("id",), (("ub", ("b",)),)),
    ("ALTER TABLE t DROP a, DROP COLUMN IF EXISTS zz", ("id", "b"), ("id",), (("ub", ("b",)),)),
    ("ALTER TABLE t CHANGE COLUMN a a2 VARCHAR(20) AFTER b", ("id", "b", "a2"), ("id",), (("ub", ("b",)),)),
    ("ALTER TABLE t CHANGE id id2 BIGINT NOT NULL", ("id2", "a", "b"), ("id2",), (("ub", ("b",)),)),
    ("ALTER TABLE t MODIFY b BIGINT FIRST", ("b", "id", "a"), ("id",), (("ub", ("b",)),)),
    ("ALTER TABLE t MODIFY COLUMN a TEXT", ("id", "a", "b"), ("id",), (("ub", ("b",)),)),
    ("ALTER TABLE t RENAME COLUMN b TO bb", ("id", "a", "bb"), ("id",), (("ub", ("bb",)),)),
    ("ALTER TABLE t DROP PRIMARY KEY", ("id", "a", "b"), (), (("ub", ("b",)),)),
    ("ALTER TABLE t DROP PRIMARY KEY, ADD PRIMARY KEY (id, a)", ("id", "a", "b"), ("id", "a"),
     (("ub", ("b",)),)),
    ("ALTER TABLE t ADD UNIQUE KEY ua (a, b)", ("id", "a", "b"), ("id",),
     (("ub", ("b",)), ("ua", ("a", "b")))),
    ("ALTER TABLE t ADD UNIQUE (a)", ("id", "a", "b"), ("id",), (("ub", ("b",)), ("a", ("a",)))),
    ("ALTER TABLE t ADD CONSTRAINT ua UNIQUE (a(5))", ("id", "a", "b"), ("id",),
     (("ub", ("b",)), ("ua", ("a",)))),
    ("ALTER TABLE t DROP INDEX ub", ("id", "a", "b"), ("id",), ()),
    ("ALTER TABLE t DROP KEY ub, ADD INDEX ia (a)", ("id", "a", "b"), ("id",), ()),
    ("ALTER TABLE t RENAME INDEX ub TO ub2", ("id", "a", "b"), ("id",), (("ub2", ("b",)),)),
    ("ALTER TABLE t ADD c INT UNIQUE", ("id", "a", "b", "c"), ("id",), (("ub", ("b",)), ("c", ("c",)))),
    ("ALTER TABLE t ENGINE=InnoDB, ALGORITHM=INPLACE, LOCK=NONE, ADD c INT", ("id", "a", "b", "c"), ("id",),
     (("ub", ("b",)),)),
    ("ALTER ONLINE TABLE t ADD c INT", ("id", "a", "b", "c"), ("id",), (("ub", ("b",)),)),
    ("ALTER TABLE t /* why */ ADD `c d` INT COMMENT 'x, y' AFTER `a`", ("id", "a", "c d", "b"), ("id",),
     (("ub", ("b",)),)),
]


@pytest.mark.parametrize("sql, columns, primary, uniques", ALTERS)
def test_alter_table_moves_columns_and_keys_as_the_server_does(sql, columns, primary, uniques):
    after = altered(sql)
    assert after.column_names == columns
    assert after.primary_key == primary and after.unique_keys == uniques
    # the version renders and parses back
    assert tuple(c.name for c in after.table_ddl("test").columns) == columns


def test_defaults_and_types_follow_the_alter():
    assert altered("ALTER TABLE t ALTER COLUMN a SET DEFAULT 'y'").table_ddl("t").columns[1].default == "y"
    assert altered("ALTER TABLE t ALTER a DROP DEFAULT").table_ddl("t").columns[1].default is None
    widened = altered("ALTER TABLE t MODIFY b BIGINT UNSIGNED DEFAULT 7").table_ddl("t").columns[2]
    assert widened.mysql_type.upper().startswith("BIGINT") and widened.unsigned and widened.default == 7
    assert altered("ALTER TABLE t ADD c INT DEFAULT 5").table_ddl("t").columns[3].default == 5


def test_charsets_of_the_table_and_its_columns():
    ddl = altered("ALTER TABLE t ADD c VARCHAR(3)").table_ddl("t")
    assert ddl.columns[1].charset == "latin1" and ddl.columns[3].charset == "latin1"
    ddl = altered("ALTER TABLE t CONVERT TO CHARACTER SET utf8mb4").table_ddl("t")
    assert ddl.columns[1].charset == "utf8mb4"
    ddl = altered("ALTER TABLE t DEFAULT CHARSET = utf8mb4, ADD c VARCHAR(3)").table_ddl("t")
    assert ddl.columns[1].charset == "latin1" and ddl.columns[3].charset == "utf8mb4"


@pytest.mark.parametrize("sql, expected", [
    ("RENAME TABLE t TO u, e.x TO e.y",
     S.RenameTables(((S.TableName("d", "t"), S.TableName("d", "u")),
                     (S.TableName("e", "x"), S.TableName("e", "y"))))),
    ("TRUNCATE TABLE t", S.Truncate(S.TableName("d", "t"))),
    ("TRUNCATE e.t", S.Truncate(S.TableName("e", "t"))),
    ("DROP TABLE IF EXISTS `t`, e.u /* generated by server */",
     S.DropTables((S.TableName("d", "t"), S.TableName("e", "u")), True)),
    ("DROP TABLE t", S.DropTables((S.TableName("d", "t"),), False)),
    ("DROP DATABASE IF EXISTS e", S.DropDatabase("e")),
    ("CREATE TABLE u LIKE t", S.CreateLike(S.TableName("d", "u"), S.TableName("d", "t"))),
    ("CREATE TABLE IF NOT EXISTS e.u (LIKE t)",
     S.CreateLike(S.TableName("e", "u"), S.TableName("d", "t"), True)),
])
def test_table_level_statements(sql, expected):
    assert S.parse(sql, "d") == [expected]


def test_create_table_is_a_version():
    (change,) = S.parse("CREATE TABLE u (id INT PRIMARY KEY, v VARCHAR(3) UNIQUE, w INT) "
                        "DEFAULT CHARSET=utf8mb4", "d")
    assert isinstance(change, S.CreateTable) and change.name == S.TableName("d", "u")
    assert change.schema.column_names == ("id", "v", "w") and change.schema.primary_key == ("id",)
    assert change.schema.unique_keys == (("v", ("v",)),) and change.schema.charset == "utf8mb4"
    (replaced,) = S.parse("CREATE OR REPLACE TABLE e.u (a INT)", "d")
    assert replaced.or_replace and replaced.name == S.TableName("e", "u")


def test_unique_indexes_by_their_own_statements():
    (create,) = S.parse("CREATE UNIQUE INDEX ua ON t (a)", "d")
    assert create.apply(BASE).unique_keys == (("ub", ("b",)), ("ua", ("a",)))
    (drop,) = S.parse("DROP INDEX ub ON d.t", "d")
    assert drop.apply(BASE).unique_keys == ()
    assert isinstance(S.parse("CREATE INDEX ia ON t (a)", "d")[0], S.NoSchemaChange)


@pytest.mark.parametrize("sql", [
    "CREATE DATABASE e", "CREATE TEMPORARY TABLE x (a INT)", "DROP TEMPORARY TABLE IF EXISTS x",
    "CREATE DEFINER=`root`@`localhost` TRIGGER trg AFTER UPDATE ON t FOR EACH ROW SET @a = 1",
    "CREATE SEQUENCE s", "DROP SEQUENCE `s` /* generated by server */", "ALTER TABLE t ENGINE=InnoDB",
    "ALTER TABLE t ADD PARTITION (PARTITION p2 VALUES LESS THAN (10))", "GRANT ALL ON *.* TO x",
    "ALTER TABLE t ALTER INDEX ia INVISIBLE", "CREATE OR REPLACE VIEW v AS SELECT 1",
    "ALTER TABLE t ORDER BY a",
])
def test_ddl_that_changes_no_table_schema(sql):
    assert all(isinstance(c, S.NoSchemaChange) for c in S.parse(sql, "d"))


@pytest.mark.parametrize("sql, reason", [
    ("ALTER TABLE t TRUNCATE PARTITION p1", "TRUNCATE PARTITION"),
    ("ALTER TABLE t DROP PARTITION p1", "DROP PARTITION"),
    ("ALTER TABLE t EXCHANGE PARTITION p1 WITH TABLE u", "EXCHANGE PARTITION"),
    ("ALTER TABLE t ADD SYSTEM VERSIONING", "SYSTEM VERSIONING"),
    ("ALTER TABLE t DISCARD TABLESPACE", "TABLESPACE"),
    ("ALTER TABLE t FROBNICATE", "unknown action 'FROBNICATE'"),
    ("CREATE TABLE u SELECT * FROM t", "SELECT"),
])
def test_ddl_the_binlog_cannot_follow_is_named_not_guessed(sql, reason):
    (change,) = S.parse(sql, "d")
    assert isinstance(change, S.Unsupported) and reason in change.reason


@pytest.mark.parametrize("sql, message", [
    ("ALTER TABLE t CHANGE a", "a column definition is missing"),
    ("ALTER TABLE t RENAME COLUMN a", "expected TO"),
    ("ALTER TABLE t ADD COLUMN c NOTATYPE(", "column definition"),
    ("ALTER TABLE t ADD c INT,", "empty ALTER TABLE action"),
    ("TRUNCATE TABLE x", "no database"),
])
def test_unreadable_ddl_is_an_error_naming_what(sql, message):
    with pytest.raises(S.DdlParseError, match=message):
        S.parse(sql, "" if "x" in sql else "d")


@pytest.mark.parametrize("sql, message", [
    ("ALTER TABLE t DROP COLUMN zz", "no column 'zz'"),
    ("ALTER TABLE t ADD COLUMN a INT", "already has a column 'a'"),
    ("ALTER TABLE t ADD c INT AFTER zz", "no column 'zz'"),
    ("ALTER TABLE t ADD PRIMARY KEY (a)", "already has a PRIMARY KEY"),
])
def test_an_alter_that_does_not_fit_the_version(sql, message):
    with pytest.raises(SchemaChangeError, match=message):
        altered(sql)


def test_a_version_round_trips_through_its_create_table():
    text = ("CREATE TABLE `t` (`id` int(11) unsigned NOT NULL AUTO_INCREMENT, `c` varchar(10) CHARACTER SET "
            "latin1 COLLATE latin1_bin DEFAULT 'x' COMMENT 'hi', `e` enum('a','b') DEFAULT 'b', `ts` "
            "timestamp(3) NOT NULL DEFAULT current_timestamp(3) ON UPDATE current_timestamp(3), `g` point "
            "DEFAULT NULL, `u` uuid DEFAULT NULL, `i6` inet6 DEFAULT NULL, `i4` inet4 DEFAULT NULL, `d` "
            "decimal(10,2) unsigned zerofill DEFAULT NULL, `b` bit(3) DEFAULT b'101', `s` set('x','y') "
            "DEFAULT 'x,y', `j` longtext, `f` float DEFAULT 1.5, `dt` datetime(6) DEFAULT "
            "'2024-01-02 03:04:05.000006', `y` year(4) DEFAULT NULL, PRIMARY KEY (`id`), "
            "UNIQUE KEY `u1` (`c`,`e`), KEY `k` (`c`)) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4")
    from libs.targets.ddl import parse_ddl
    (original,) = parse_ddl(f"USE d; {text}", "x")
    version = TableSchema.parse(text, "d")
    assert version.table_ddl("x").columns == original.columns
    assert TableSchema.parse(version.create_table(), "d") == version


def _corpus_tables():
    for manifest in sorted(CORPUS.glob("mariadb/*/manifest.json")):
        for table in json.loads(manifest.read_text()).get("tables", ()):
            yield pytest.param(table["table"].split(".")[0], table["create_table"],
                               id=f"{manifest.parent.name}:{table['table']}")


@pytest.mark.parametrize("database, create_table", list(_corpus_tables()))
def test_every_corpus_table_round_trips_as_a_version(database, create_table):
    """Each real server's SHOW CREATE TABLE, made a version and written back, is the same target."""
    from libs.targets.ddl import parse_ddl
    (original,) = parse_ddl(f"USE `{database}`;\n{create_table}", "manifest")
    version = TableSchema.parse(create_table, database)
    rendered = version.table_ddl("version")
    assert rendered.columns == original.columns and rendered.primary_key == original.primary_key
    assert {frozenset(k) for k in rendered.unique_keys} == {frozenset(k) for k in original.unique_keys}

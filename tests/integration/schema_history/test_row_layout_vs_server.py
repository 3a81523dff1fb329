"""A table version's row layout (libs/schema_history/row_layout.py) is what a real MariaDB logs:
for every column type, generated columns included, the layout read from the server's SHOW
CREATE TABLE fits the Table_map the server writes for the table's rows; after a widening MODIFY
the old version no longer fits (the check can fail)."""

import pytest

from libs.binlog.framing import iter_events
from libs.binlog.shapes import is_table_map
from libs.schema_history.row_layout import RowLayout
from libs.schema_history.table_schema import TableSchema

pytestmark = pytest.mark.integration

DB = "sh_layout"
EVERY_TYPE = """CREATE TABLE every_type (
  id INT UNSIGNED PRIMARY KEY, ti TINYINT, b BOOLEAN, si SMALLINT UNSIGNED, mi MEDIUMINT,
  bi BIGINT UNSIGNED, y YEAR, bt BIT(11), dc DECIMAL(30,4), f FLOAT, d DOUBLE,
  dt DATE, dtm DATETIME(6), ts TIMESTAMP(3) NULL, tm TIME(2),
  c CHAR(5), cb CHAR(4) CHARACTER SET binary, vc VARCHAR(300), bin BINARY(16), vb VARBINARY(40),
  tt TINYTEXT, tx TEXT, mt MEDIUMTEXT, lt LONGTEXT, tb TINYBLOB, bl BLOB, mb MEDIUMBLOB, lb LONGBLOB,
  e ENUM('a','b'), s SET('x','y','z'), j JSON, g GEOMETRY, p POINT NULL,
  u UUID, i4 INET4, i6 INET6,
  gv INT AS (id + 1) VIRTUAL, gs BIGINT AS (id * 2) PERSISTENT
)"""


def _table_maps(mariadb, file, table):
    return [e.body for e in iter_events(mariadb.binlog_path(file).read_bytes(), file=file)
            if is_table_map(e) and e.body.table == table]


def _schema(mariadb, table):
    return TableSchema.parse(mariadb.query(f"SHOW CREATE TABLE {DB}.{table}")[0][1], DB)


def test_every_column_type_fits_the_table_map_the_server_logs(mariadb):
    mariadb.sql(f"DROP DATABASE IF EXISTS {DB}; CREATE DATABASE {DB}")
    mariadb.sql(EVERY_TYPE, database=DB)
    file = mariadb.flush_binlogs()
    mariadb.sql("INSERT INTO every_type (id, c, e, s, j, u, i4, i6) VALUES "
                "(1, 'ab', 'b', 'x,z', '[1]', UUID(), '10.0.0.1', '::1')", database=DB)
    (table_map,) = _table_maps(mariadb, file, "every_type")
    layout = RowLayout.of(_schema(mariadb, "every_type"))
    assert layout.mismatch(table_map.column_types) is None
    assert len(layout.names) == len(table_map.column_types) == 38
    assert all(types for types, _ in layout.logged)  # every type of the table is checked


def test_a_version_before_a_widening_modify_does_not_fit_the_rows_after_it(mariadb):
    mariadb.sql(f"DROP DATABASE IF EXISTS {DB}; CREATE DATABASE {DB}")
    mariadb.sql("CREATE TABLE w (id INT PRIMARY KEY, n INT, v VARCHAR(5))", database=DB)
    before = RowLayout.of(_schema(mariadb, "w"))
    mariadb.sql("ALTER TABLE w MODIFY n BIGINT", database=DB)
    after = RowLayout.of(_schema(mariadb, "w"))
    mariadb.sql("ALTER TABLE w ADD z INT FIRST", database=DB)
    added = RowLayout.of(_schema(mariadb, "w"))
    file = mariadb.flush_binlogs()
    mariadb.sql("INSERT INTO w VALUES (7, 1, 2, 'v')", database=DB)
    (table_map,) = _table_maps(mariadb, file, "w")
    assert added.mismatch(table_map.column_types) is None
    assert "has 3 (id, n, v)" in after.mismatch(table_map.column_types)
    mariadb.sql("ALTER TABLE w DROP z", database=DB)
    file = mariadb.flush_binlogs()
    mariadb.sql("INSERT INTO w VALUES (8, 1, 'v')", database=DB)
    (table_map,) = _table_maps(mariadb, file, "w")
    assert after.mismatch(table_map.column_types) is None
    assert before.mismatch(table_map.column_types) == (
        "column 2 of the row image is logged as LONGLONG, the schema of sh_layout.w in force at its "
        "position has n INT(11)")

"""A table version's row layout (libs/schema_history/row_layout.py): the storage types each SQL
type is logged with, what a mismatch says, refusals, and the layouts of a whole history. The
types are checked against a real server in tests/integration/schema_history/test_row_layout_vs_server.py."""
import pytest

from libs.binlog.constants import ColumnType as C
from libs.schema_history.history import SchemaHistory
from libs.schema_history.row_layout import RowLayout, history_layouts
from libs.schema_history.statements import TableName
from libs.schema_history.table_schema import TableSchema
from libs.contracts.position import BinlogPosition


def layout(columns: str) -> RowLayout:
    return RowLayout.of(TableSchema.parse(f"CREATE TABLE d.t ({columns})", "d"))


@pytest.mark.parametrize("sql_type, fits, does_not_fit", [
    ("TINYINT", C.TINY, C.SHORT),
    ("BOOLEAN", C.TINY, C.LONG),
    ("SMALLINT UNSIGNED", C.SHORT, C.INT24),
    ("MEDIUMINT", C.INT24, C.LONG),
    ("INT", C.LONG, C.LONGLONG),
    ("BIGINT", C.LONGLONG, C.LONG),
    ("DECIMAL(10,2)", C.NEWDECIMAL, C.DOUBLE),
    ("FLOAT", C.FLOAT, C.DOUBLE),
    ("DOUBLE", C.DOUBLE, C.FLOAT),
    ("DATE", C.DATE, C.DATETIME2),
    ("DATETIME(3)", C.DATETIME2, C.TIMESTAMP2),
    ("TIMESTAMP(6)", C.TIMESTAMP2, C.DATETIME2),
    ("TIME", C.TIME2, C.DATETIME2),
    ("YEAR", C.YEAR, C.SHORT),
    ("BIT(3)", C.BIT, C.TINY),
    ("CHAR(3)", C.STRING, C.VARCHAR),
    ("VARCHAR(3)", C.VARCHAR, C.STRING),
    ("VARBINARY(3)", C.VARCHAR, C.BLOB),
    ("TEXT", C.BLOB, C.VARCHAR),
    ("LONGBLOB", C.BLOB, C.STRING),
    ("JSON", C.BLOB, C.VARCHAR),  # MariaDB: LONGTEXT
    ("ENUM('a')", C.ENUM, C.SET),
    ("SET('a')", C.SET, C.ENUM),
    ("UUID", C.STRING, C.BLOB),
    ("INET6", C.STRING, C.VARCHAR),
    ("POINT", C.GEOMETRY, C.BLOB),
])
def test_each_type_fits_the_storage_types_it_is_logged_with(sql_type, fits, does_not_fit):
    one = layout(f"c {sql_type}")
    assert one.mismatch([fits]) is None
    assert one.mismatch([does_not_fit]) == (
        f"column 1 of the row image is logged as {C(does_not_fit).name}, the schema of d.t in force at its "
        f"position has c {one.logged[0][1]}")


def test_what_the_version_tells_that_the_binlog_may_not():
    one = layout("id INT UNSIGNED, ts DATETIME(4), e ENUM('x', 'y') CHARACTER SET latin1, v VARCHAR(3)")
    assert one.names == ("id", "ts", "e", "v") and one.unsigned == frozenset({0})
    assert one.old_temporal_fsp == ((1, 4),)
    assert one.hints[2].labels == ("x", "y") and one.hints[2].charset == "latin1"


def test_a_column_count_that_differs_is_named():
    assert layout("a INT, b INT").mismatch([C.LONG]) == (
        "the row image has 1 columns, the schema of d.t in force at its position has 2 (a, b)")


def test_a_refusing_layout_refuses_every_image():
    refusing = RowLayout.refusing("d.t", "cannot read the DDL: boom")
    assert refusing.mismatch([C.LONG]) == ("the schema of d.t is not known at this position: "
                                           "cannot read the DDL: boom")


def test_the_layouts_of_a_history():
    history = SchemaHistory()
    history.start("s", TableSchema.parse("CREATE TABLE d.t (a INT)", "d"), BinlogPosition("b.000001", 10))
    history.apply("s", BinlogPosition("b.000001", 20), "ALTER TABLE t ADD b INT", "d")
    history.apply("s", BinlogPosition("b.000001", 30), "DROP TABLE t", "d")
    history.apply("s", BinlogPosition("b.000001", 40), "CREATE TABLE t (a INT)", "d")
    history.refuse("s", BinlogPosition("b.000001", 50), [TableName("d", "t")], "ALTER TABLE t FROBNICATE",
                   "cannot read the DDL")
    cache = {}
    (key, versions), = history_layouts(history, cache).items()
    assert key == ("s", "d", "t")
    assert [(pos[-1], l and (l.names, l.refusal)) for pos, l in versions] == [  # noqa: E741 - l: a layout
        (10, (("a",), None)), (20, (("a", "b"), None)), (30, None), (40, (("a",), None)),
        (50, ((), "the schema of d.t is not known at this position: cannot read the DDL"))]
    assert versions[0][1] is versions[3][1]  # the same schema: one layout, from the cache
    assert len(cache) == 2

"""The compiled row reader (libs/snapshot/row_stream.py, pymysql_wire.py) on a real MariaDB: a
row of 16 MB and more (split over two packets), NULLs and empty values, and two tables read one
after the other on the snapshot's one connection, in its one transaction."""
from __future__ import annotations

import pymysql
import pytest

from libs.snapshot import row_stream, source, values
from tests.integration.snapshot.helpers import ServerOpts

pytestmark = pytest.mark.integration

DB = "row_reader"
BIG = 2_200_000  # REPEAT('abcdefgh', BIG): 17.6 MB, over one packet's 16 MB - 1


@pytest.fixture
def tables(mariadb):
    old = mariadb.query("SELECT @@global.max_allowed_packet")[0][0]
    mariadb.sql(f"SET GLOBAL max_allowed_packet = {64 << 20};")  # the server sends rows up to it
    mariadb.sql(f"""DROP DATABASE IF EXISTS {DB}; CREATE DATABASE {DB};
        CREATE TABLE {DB}.big (id INT PRIMARY KEY, b LONGBLOB, t VARCHAR(10));
        INSERT INTO {DB}.big VALUES (1, REPEAT('abcdefgh', {BIG}), 'after'), (2, NULL, ''), (3, '', NULL),
                                     (4, REPEAT('z', 16777215 - 11), 'edge');  """
                f"""-- payload 0xFFFFFF, then an empty one
        CREATE TABLE {DB}.small (id INT PRIMARY KEY);
        INSERT INTO {DB}.small VALUES (1), (2), (3);""")
    yield
    mariadb.sql(f"SET GLOBAL max_allowed_packet = {old}; DROP DATABASE {DB};")


def _read(conn, name):
    table = source.SourceTable(DB, name)
    _create, columns = source.describe(conn, table)
    batches = list(source.stream_batches(conn, source.select_statement(table, columns), columns, 1 << 22))
    return [row for b in batches for row in zip(*(c.to_pylist() for c in b.columns))]


@pytest.mark.parametrize("native", [True, False], ids=["compiled", "pymysql-fallback"])
def test_big_rows_nulls_and_two_tables_in_one_snapshot(mariadb, tables, native, monkeypatch):
    assert row_stream.NATIVE
    monkeypatch.setattr(row_stream, "NATIVE", native)
    conn = source.connect(ServerOpts(mariadb))
    try:
        source.open_snapshot(conn)
        rows = _read(conn, "big")
        mariadb.sql(f"INSERT INTO {DB}.small VALUES (4);")  # after the snapshot: not in it
        small = _read(conn, "small")
        assert source.query(conn, "SELECT @@in_transaction") == [(b"1",)]
    finally:
        conn.close()
    assert [r[0] for r in rows] == [b"1", b"2", b"3", b"4"]
    assert rows[0][1] == b"abcdefgh" * BIG and rows[0][2] == b"after"
    assert rows[1][1:] == (None, b"") and rows[2][1:] == (b"", None)
    assert len(rows[3][1]) == 16777215 - 11 and rows[3][2] == b"edge"
    assert small == [(b"1",), (b"2",), (b"3",)]


def test_a_missing_table_is_a_snapshot_error_naming_it(mariadb, tables):
    conn = source.connect(ServerOpts(mariadb))
    try:
        point = source.open_snapshot(conn)
        run = source.Run("src", "id1", point)
        with pytest.raises(source.SnapshotError,
                           match=r"snapshot of table row_reader.gone failed: 1146: Table "):
            list(source.run_records(conn, run, [source.SourceTable(DB, "gone")]))
        assert source.query(conn, "SELECT 1") == [(b"1",)]  # the connection goes on
    finally:
        conn.close()


def test_an_error_after_rows_were_sent_raises_it_and_the_connection_goes_on(mariadb, tables):
    """The server sends rows, then meets the error at row 3 (a subquery of two rows): an ERR
    packet after the row packets, read by the compiled reader."""
    conn = source.connect(ServerOpts(mariadb))
    columns = [values.SourceColumn(1, "id", "int", "int(11)", None)]
    statement = f"SELECT IF(id < 3, id, (SELECT 1 UNION SELECT 2)) FROM {DB}.small ORDER BY id"
    got = []
    try:
        source.open_snapshot(conn)
        with pytest.raises(pymysql.err.OperationalError, match="Subquery returns more than 1 row"):
            for batch in source.stream_batches(conn, statement, columns, 1 << 22, max_rows=1):
                got.extend(batch.column(0).to_pylist())
        assert source.query(conn, "SELECT @@in_transaction") == [(b"1",)]
    finally:
        conn.close()
    assert got == [b"1", b"2"]

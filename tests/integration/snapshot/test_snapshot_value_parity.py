"""Snapshot values = binlog values, cell by cell, on a real MariaDB.

The type matrix (tests/integration/types/matrix.py TABLES and INSERTS) is written twice, under
binlog_row_metadata FULL and NO_LOG, both with binlog_row_image=FULL. Each cell is then read two
ways and converted by libs/replay/images.typed_value against the Target of the server's own
SHOW CREATE TABLE:

  snapshot: the shipper's own path: its connection and session (source.connect,
            open_snapshot), the SELECT of every column's select_expression, the chunk's bytes
            through the record's Arrow layout and back, converted by row_images (the rows
            stage's conversion: libs/snapshot/chunk_values.py, values.py);
  binlog:   the INSERT's after image, decoded from the binlog file the server wrote
            (assemble_group / decode_segment with the declarations' DecodeHints, as the pipeline
            decodes every batch: tests/integration/types/test_type_matrix.py does the same).

Under FULL the ColumnValues themselves must be identical; under NO_LOG the binlog has no names
(ColumnValue.name is None), the rest is compared and every other difference listed.
"""
from __future__ import annotations

import pyarrow as pa
import pytest

from libs.stream.assembler import InMemorySpillStore
from libs.binlog import iter_frames
from libs.replay.images import target_column_of, typed_value
from libs.snapshot import chunk_values, source
from libs.snapshot.record import SnapshotRecord
from libs.stages.assembly import InputFrame, assemble_group, decode_segment
from libs.targets import build_catalog, parse_ddl
from libs.targets.decoding import DecodeHints
from tests.integration.snapshot.helpers import ServerOpts
from tests.integration.types.matrix import INSERTS, TABLES

pytestmark = pytest.mark.integration

MODES = ("FULL", "NO_LOG")

# Beside the matrix: values whose server text loses digits or needs care, which the matrix
# does not hold: floats needing more than 6 digits (16777215 prints '1.67772e7'), a quoted and a
# backslashed ENUM label, the ENUM error value '' (index 0, INSERT IGNORE), a latin1 SET, padded
# CHARs in utf16 and latin1, a BINARY(4) ending in 0x00, TIMESTAMP(3), TIME(3), ZEROFILL, and a
# column name with a backtick and a space.
EXTRA_TABLE = "t_snapshot_extra"
EXTRA_COLUMNS = """(id INT PRIMARY KEY, `we``ird name` FLOAT, f3 FLOAT(10,3), d DOUBLE,
    e ENUM('it''s','back\\\\slash','a,b') CHARACTER SET utf8mb4, s SET('é','ü') CHARACTER SET latin1,
    cu CHAR(4) CHARACTER SET utf16, cl CHAR(4) CHARACTER SET latin1, b4 BINARY(4), ts3 TIMESTAMP(3) NULL,
    t3 TIME(3), z TINYINT(3) UNSIGNED ZEROFILL) DEFAULT CHARSET=utf8mb4"""
EXTRA_ROWS = """(1, 16777215, 1.2345678, 0.30000000000000004, 'it''s', 'é,ü', 'ab  ', 'Ÿ ', X'61000000',
     '2024-03-10 02:30:00.123', '-00:00:00.001', 7),
    (2, 1.2345678e-40, -99.999, -1.5e-310, 'back\\\\slash', '', '😀', '', X'00000000',
     '1970-01-01 00:00:00.001', '838:59:59.000', 255),
    (3, -3.4028234e38, 0, 1e22, 'a,b', 'ü', '', 'x', X'FF', '2038-01-19 03:14:07.999', '00:00:00', 0),
    (4, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL)"""
EXTRA_IGNORED = "(5, NULL, NULL, NULL, 'not a member', NULL, NULL, NULL, NULL, NULL, NULL, NULL)"

ROWS = {**dict.fromkeys(TABLES, 4), EXTRA_TABLE: 5}  # ids 1-4 in every INSERTS entry; 1-5 here
# Columns: t_int 13, t_num 10, t_time 11, t_str 11, t_enum 6, t_misc 7 (the matrix), extra 12.
CELLS_PER_MODE = 4 * (13 + 10 + 11 + 11 + 6 + 7) + 5 * 12


def _database(meta: str) -> str:
    return f"snapshot_values_{meta.lower()}"


def _workload(database: str) -> str:
    parts = ["SET SESSION binlog_row_image = FULL; SET SESSION time_zone = '+00:00';",
             "SET SESSION sql_mode = 'STRICT_TRANS_TABLES,NO_ENGINE_SUBSTITUTION';",
             f"CREATE DATABASE {database}; USE {database};"]
    for table, columns in TABLES.items():
        parts += [f"CREATE TABLE {table} {columns};", f"INSERT INTO {table} VALUES {INSERTS[table]};"]
    parts += [f"CREATE TABLE {EXTRA_TABLE} {EXTRA_COLUMNS};",
              f"INSERT INTO {EXTRA_TABLE} VALUES {EXTRA_ROWS};",
              f"INSERT IGNORE INTO {EXTRA_TABLE} VALUES {EXTRA_IGNORED};"]
    return "\n".join(parts)


@pytest.fixture(scope="module")
def written(mariadb):
    """Both workloads written; their binlog decoded into change records; the catalog."""
    saved = mariadb.query("SELECT @@GLOBAL.binlog_row_metadata")[0][0]
    first = mariadb.flush_binlogs()
    try:
        for meta in MODES:
            mariadb.sql(f"SET GLOBAL binlog_row_metadata = {meta};")
            mariadb.sql(_workload(_database(meta)))
    finally:
        mariadb.sql(f"SET GLOBAL binlog_row_metadata = {saved};")
    mariadb.flush_binlogs()
    ddl = []
    for meta in MODES:
        for table in ROWS:
            create = mariadb.query(f"SHOW CREATE TABLE `{_database(meta)}`.`{table}`")[0][1]
            ddl.append(f"USE `{_database(meta)}`;\n{create};")
    catalog = build_catalog(None, "SHOW CREATE TABLE", parse_ddl("\n".join(ddl), "SHOW CREATE TABLE"))
    data = mariadb.binlog_path(first).read_bytes()
    frames = [InputFrame(raw, first, pos) for pos, raw in iter_frames(data, file=first)]
    records, _ = assemble_group("snapshot-values", None, frames, InMemorySpillStore())
    hints = DecodeHints(catalog.targets)
    changes = [c for r in records if r["kind"] == "segment" for c in decode_segment(r, hints=hints)]
    return {"catalog": catalog, "changes": changes}


def _binlog_rows(changes, database: str, table: str) -> dict[int, list[dict]]:
    """id -> the INSERT's after image."""
    return {int(c["after"][0]["text"]): c["after"] for c in changes
            if c["op"] == "insert" and (c["database"], c["table"]) == (database, table)}


def _snapshot_rows(mariadb, database: str, table: str) -> dict[int, list[dict]]:
    conn = source.connect(ServerOpts(mariadb))
    try:
        source.open_snapshot(conn)
        t = source.SourceTable(database, table)
        _create, columns = source.describe(conn, t)
        batches = list(source.stream_batches(conn, source.select_statement(t, columns), columns, 1 << 22))
    finally:
        conn.close()
    chunk = pa.Table.from_batches(batches, schema=chunk_values.schema(columns))
    record = SnapshotRecord.chunk(tuple(columns), chunk, snapshot_id="parity", binlog_file="f", binlog_pos=4,
                                  server_id=1, snapshot_ts=0)
    images = SnapshotRecord.decode(record.encode()).row_images()
    return {int(image[0]["text"]): image for image in images}


@pytest.fixture(scope="module")
def compared(written, mariadb):
    """Per mode: cells compared, typed differences, ColumnValue differences."""
    out = {}
    for meta in MODES:
        database = _database(meta)
        cells, typed_diffs, value_diffs = 0, [], []
        for table in ROWS:
            target = written["catalog"].get(database, table)
            snap = _snapshot_rows(mariadb, database, table)
            binlog = _binlog_rows(written["changes"], database, table)
            assert sorted(snap) == sorted(binlog) == list(range(1, ROWS[table] + 1)), table
            for key in snap:
                assert len(snap[key]) == len(binlog[key]) == len(target.columns), (table, key)
                for s, b in zip(snap[key], binlog[key]):
                    name = target_column_of(target, b)
                    assert name == target_column_of(target, s) is not None, (table, key, s, b)
                    cells += 1
                    where = f"{table} id={key} {name}"
                    ours, theirs = typed_value(target, name, s), typed_value(target, name, b)
                    if ours != theirs or type(ours) is not type(theirs):
                        typed_diffs.append(f"{where}: snapshot {ours!r}, binlog {theirs!r}")
                    compared_keys = ("ordinal", "name", "type_code", "text", "binary") if meta == "FULL" \
                        else ("ordinal", "type_code", "text", "binary")  # NO_LOG logs no names
                    if any(s[k] != b[k] for k in compared_keys):
                        value_diffs.append(f"{where}: snapshot {s}, binlog {b}")
        out[meta] = {"cells": cells, "typed": typed_diffs, "values": value_diffs}
    return out


@pytest.mark.parametrize("meta", MODES)
def test_every_cell_was_compared(compared, meta):
    assert compared[meta]["cells"] == CELLS_PER_MODE == 292


@pytest.mark.parametrize("meta", MODES)
def test_snapshot_and_binlog_give_the_same_delta_values(compared, meta):
    assert compared[meta]["typed"] == []


@pytest.mark.parametrize("meta", MODES)
def test_snapshot_column_values_equal_the_binlog_ones(compared, meta):
    """FULL: the whole ColumnValue (names included); NO_LOG: all but the name it does not log.
    A difference here whose typed values agree would be listed by this assertion."""
    assert compared[meta]["values"] == []


def test_the_binlog_names_its_columns_only_under_full(written):
    """The two modes really differ (a global that did not take would hide it)."""
    named = {c["database"]: c["after"][0]["name"] for c in written["changes"] if c["op"] == "insert"}
    assert named == {_database("FULL"): "id", _database("NO_LOG"): None}

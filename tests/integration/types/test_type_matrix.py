"""Every value as the server shows it: the type matrix (matrix.py) on a real MariaDB, logged with
binlog_row_metadata NO_LOG, MINIMAL and FULL, each under FULL and MINIMAL row images, decoded
and applied to Delta with the server's own SHOW CREATE TABLE as the declarations, then read
back by Spark with a non-UTC session time zone and by delta-rs (the `deltalake` package), and
compared cell by cell with the server's SELECT of the same rows.

The only cells allowed to differ are the zero and partial dates, which Delta cannot hold: they
read as NULL (zero_dates: to_null, the default; matrix.expected_cell).
"""
from __future__ import annotations

import datetime as dt

import pytest
import pyarrow as pa
from deltalake import DeltaTable, QueryBuilder
from pyspark.sql import functions as F

from libs.stream.assembler import InMemorySpillStore
from libs.binlog import iter_frames
from libs.binlog.constants import EventType
from libs.binlog.context import DecodeContext
from libs.binlog import decode_event
from libs.config.job import JobConfig
from libs.stages.assembly import InputFrame, assemble_group, decode_segment
from libs.targets import build_catalog, parse_ddl
from pipelines.apply import DeltaApplier
from pipelines.apply import tables as D
from pipelines.job.schemas import spark_schema
from tests.integration.types import matrix

pytestmark = pytest.mark.integration

RUNS = [(meta, image) for meta in ("NO_LOG", "MINIMAL", "FULL") for image in ("FULL", "MINIMAL")]
READER_TIME_ZONE = "America/Los_Angeles"
EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)


def _database(meta: str, image: str) -> str:
    return f"types_{meta.lower()}_{image.lower()}"


@pytest.fixture(scope="module")
def replicated(mariadb, spark, tmp_path_factory):
    """Runs every workload, decodes the binlog file they were written to, applies it to Delta."""
    first = mariadb.flush_binlogs()
    try:
        for meta, image in RUNS:
            mariadb.sql(f"SET GLOBAL binlog_row_metadata = {meta};")
            mariadb.sql(matrix.workload(_database(meta, image), image))
    finally:
        mariadb.sql("SET GLOBAL binlog_row_metadata = NO_LOG;")
    mariadb.flush_binlogs()
    data = mariadb.binlog_path(first).read_bytes()
    frames = [InputFrame(raw, first, pos) for pos, raw in iter_frames(data, file=first)]
    ddl = []
    conn = mariadb.connect()
    try:
        with conn.cursor() as cursor:
            for meta, image in RUNS:
                for table in matrix.TABLES:
                    cursor.execute(f"SHOW CREATE TABLE `{_database(meta, image)}`.`{table}`")
                    ddl.append(f"USE `{_database(meta, image)}`;\n{cursor.fetchone()[1]};")
    finally:
        conn.close()
    catalog = build_catalog(None, "SHOW CREATE TABLE", parse_ddl("\n".join(ddl), "SHOW CREATE TABLE"))
    cfg = JobConfig(delta_root=str(tmp_path_factory.mktemp("types") / "delta"))
    applier = DeltaApplier(catalog, cfg, app_id="types")
    records, _ = assemble_group("types", None, frames, InMemorySpillStore())
    changes = [c for r in records if r["kind"] == "segment"
               for c in decode_segment(r, hints=applier.decode_hints)]
    changes = [{**c, "commit_ts": EPOCH + dt.timedelta(microseconds=c["commit_ts"])} for c in changes]
    counts = applier(spark.createDataFrame(changes, spark_schema("change_record")), 0)
    return {"catalog": catalog, "cfg": cfg, "frames": frames, "counts": counts}


def _table_maps(frames) -> list:
    ctx, maps = DecodeContext(), []
    for f in frames:
        event = decode_event(f.raw, f.pos, ctx)
        if event.header.type_code == EventType.TABLE_MAP and event.body.database.startswith("types_"):
            maps.append(event.body)
    return maps


def test_each_run_logged_its_row_metadata_mode(replicated):
    """The runs really cover the three modes (a global that did not take would hide it)."""
    by_db = {}
    for tm in _table_maps(replicated["frames"]):
        by_db.setdefault(tm.database, tm)
    for meta, image in RUNS:
        tm = by_db[_database(meta, image)]
        assert (tm.signedness is not None) == (meta != "NO_LOG"), (meta, image)
        assert (tm.column_names is not None) == (meta == "FULL"), (meta, image)


def _server(mariadb, target):
    conn = mariadb.connect()
    try:
        return matrix.server_cells(conn, target.database, target.table, target.columns)
    finally:
        conn.close()


def _spark_rows(spark, path, target) -> dict[int, tuple]:
    """Delta through Spark in a non-UTC session: TIMESTAMP as its instant (unix_micros),
    TIMESTAMP_NTZ as the text Spark shows, which no session zone may shift."""
    exprs = []
    for c in target.columns:
        col = F.col(f"`{c.name}`")
        exprs.append(F.unix_micros(col) if c.family == "timestamp" else
                     col.cast("string") if c.family == "datetime" else col)
    rows = spark.read.format("delta").load(path).select(*exprs).collect()
    out = {}
    for row in rows:
        values = []
        for c, v in zip(target.columns, row):
            if v is not None and c.family == "timestamp":
                v = EPOCH + dt.timedelta(microseconds=v)
            elif v is not None and c.family == "datetime":
                v = dt.datetime.fromisoformat(v)
            values.append(matrix.delta_cell(c, v))
        out[int(row[0])] = tuple(values)
    return out


def _delta_rs_rows(path, target) -> dict[int, tuple]:
    """Delta through delta-rs' DataFusion query path (it reads column mapping and TIMESTAMP_NTZ)."""
    reader = QueryBuilder().register("target", DeltaTable(path)).execute("SELECT * FROM target")
    rows = pa.table(reader.read_all()).to_pylist()  # arro3 -> pyarrow through the Arrow C stream
    return {int(r[target.columns[0].name]): tuple(matrix.delta_cell(c, r[c.name]) for c in target.columns)
            for r in rows}


def _differences(target, server: dict, ours: dict) -> list[str]:
    out = []
    if sorted(server) != sorted(ours):
        return [f"{target.qualified_name}: ids {sorted(ours)} in Delta, {sorted(server)} on the server"]
    for key, cells in server.items():
        for column, s, o in zip(target.columns, cells, ours[key]):
            if not matrix.same_cell(column, o, matrix.expected_cell(column, s)):
                out.append(f"{target.qualified_name} id={key} {column.name} ({column.mysql_type}): "
                           f"Delta {o!r}, server {s!r}")
    return out


@pytest.mark.parametrize("meta,image", RUNS)
def test_delta_equals_the_server_through_spark_in_a_non_utc_session(replicated, mariadb, spark, meta, image):
    saved = spark.conf.get("spark.sql.session.timeZone")
    spark.conf.set("spark.sql.session.timeZone", READER_TIME_ZONE)
    try:
        problems = []
        for table in matrix.TABLES:
            target = replicated["catalog"].get(_database(meta, image), table)
            path = D.table_path(replicated["cfg"].delta_root, target.delta_table)
            problems += _differences(target, _server(mariadb, target), _spark_rows(spark, path, target))
    finally:
        spark.conf.set("spark.sql.session.timeZone", saved)
    assert problems == []


@pytest.mark.parametrize("meta,image", RUNS)
def test_delta_equals_the_server_through_delta_rs(replicated, mariadb, meta, image):
    problems = []
    for table in matrix.TABLES:
        target = replicated["catalog"].get(_database(meta, image), table)
        path = D.table_path(replicated["cfg"].delta_root, target.delta_table)
        problems += _differences(target, _server(mariadb, target), _delta_rs_rows(path, target))
    assert problems == []


def test_zero_and_partial_dates_are_the_only_nulls_the_server_does_not_have(replicated, mariadb):
    """The documented difference, counted: zero/partial DATE/DATETIME and the zero TIMESTAMP."""
    target = replicated["catalog"].get(_database("NO_LOG", "MINIMAL"), "t_time")
    server = _server(mariadb, target)
    zero = [(key, c.name) for key, cells in server.items() for c, s in zip(target.columns, cells)
            if s is not None and matrix.expected_cell(c, s) is None]
    assert sorted(zero) == [(2, "dt"), (2, "dt0"), (2, "dt3"), (2, "dt6"), (2, "dtn"), (2, "ts0"), (3, "dt")]

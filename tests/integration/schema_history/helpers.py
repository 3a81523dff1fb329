"""What the schema-change integration tests share: the server's and Delta's view of a table, a
snapshot shipped in-process, the server's binlog_row_metadata for a block, one job run."""
from __future__ import annotations

import dataclasses
import re
from contextlib import contextmanager

import pytest
from pyspark.errors import StreamingQueryException

from libs.config.job import JobConfig
from libs.targets import model
from libs.targets.ddl import parse_ddl
from pipelines.replicate import build_query, make_applier
from pipelines.ship import main as ship_main

from ..shipper.helpers import password_file


def server_table(db, table: str) -> tuple[list[str], list[tuple]]:
    """The server's column list and rows (SELECT *), rows sorted."""
    columns = [r[0] for r in db.query(f"SELECT column_name FROM information_schema.columns WHERE "
                                      f"table_schema = '{table.split('.')[0]}' AND table_name = "
                                      f"'{table.split('.')[1]}' ORDER BY ordinal_position")]
    return columns, sorted(db.query(f"SELECT * FROM {table}"), key=_nulls_first)


def delta_table(spark, path: str) -> tuple[list[str], list[tuple]]:
    """The Delta table's data columns (no _row_id, _lineage) and rows, rows sorted."""
    df = spark.read.format("delta").load(path).drop("_row_id", "_lineage")
    return df.columns, sorted((tuple(r) for r in df.collect()), key=_nulls_first)


def server_target(create_table: str):
    """What a target takes of a CREATE TABLE: columns, primary key, unique keys. Two spellings of
    the server are not differences: an integer's display width (int(11)) and the implicit
    DEFAULT NULL of a nullable column."""
    (ddl,) = parse_ddl(f"USE d;\n{create_table}", "server")
    columns = []
    for c in ddl.columns:
        if c.nullable and c.default_kind == model.NO_DEFAULT:
            c = dataclasses.replace(c, default_kind=model.LITERAL_DEFAULT, default=None)
        columns.append(dataclasses.replace(c, mysql_type=re.sub(r"^(\w*INT)\(\d+\)", r"\1", c.mysql_type)))
    return columns, ddl.primary_key, {frozenset(k) for k in ddl.unique_keys}


def _nulls_first(row: tuple) -> list:
    return [(value is not None, value) for value in row]


def ship_snapshot(db, kafka_broker, topic, name, *, resnapshot: str | None = None):
    """Database `name` shipped as source `name`: its snapshot, or the binlog to its end once the
    topic has it; `resnapshot` (a db.table regex): a new snapshot run of those tables first."""
    mode = (["--resnapshot", "--include", resnapshot] if resnapshot
            else ["--snapshot", "--include", rf"{name}\..*"])
    assert ship_main(["--server", f"{db.host}:{db.port}", "--user", db.user,
                      "--password-file", password_file(db),
                      "--bootstrap", kafka_broker.bootstrap, "--topic", topic, "--source", name, *mode,
                      "--non-block"]) == 0


def job_config(kafka_broker, topic, tmp_path, name, include: str | None = None, **settings) -> JobConfig:
    """The job to the topic's end over the tables `include` selects (default: database `name`'s)."""
    return JobConfig(bootstrap=kafka_broker.bootstrap, topic=topic, delta_root=str(tmp_path / "delta"),
                     checkpoint=str(tmp_path / "ckpt"), available_now=True,
                     tables={"include": [include or rf"{name}\..*"]}, **settings)


@contextmanager
def row_metadata(db, metadata: str):
    """The server's binlog_row_metadata for the block, then as it was."""
    (old,) = db.query("SELECT @@global.binlog_row_metadata")[0]
    db.sql(f"SET GLOBAL binlog_row_metadata = {metadata}")
    try:
        yield
    finally:
        db.sql(f"SET GLOBAL binlog_row_metadata = {old}")


def replicate(spark, cfg):
    """One run of the job to the topic's end, with a new applier (what a restarted job has)."""
    query = build_query(spark, cfg, make_applier(cfg))
    query.awaitTermination()
    assert query.exception() is None


def stop_message(spark, cfg) -> str:
    """One run of the job that must stop: its message."""
    query = build_query(spark, cfg, make_applier(cfg))
    with pytest.raises(StreamingQueryException) as stopped:
        query.awaitTermination()
    return str(stopped.value)


def accepted_through(error: str, source: str) -> dict[str, str]:
    """The accept_schema_changes_through a stop message names, as a JobConfig takes it."""
    accepted = re.search(r"accept_schema_changes_through: \{(\S+): '(\S+)'\}", error)
    assert accepted is not None and accepted[1] == source, error
    return {accepted[1]: accepted[2]}

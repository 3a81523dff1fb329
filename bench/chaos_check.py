"""What bench/chaos_restarts.py checks once every process of the pipeline is gone, against the
server's own answers: every Delta table against `SELECT *` (pipelines/delta/table_equality.py),
the change log against the server's decoder over its binlog (`mariadb-binlog -vv`,
tests/integration/exactly_once/oracle.py) and the same change twice, `_cdc_progress`'s last GTID
against `@@gtid_binlog_pos`, and the quarantine."""
from __future__ import annotations

import collections

from pyspark.sql import functions as F

from pipelines.delta.table_equality import delta_rows, server_rows
from tests.integration.exactly_once.oracle import binlog_row_changes

ROW_OPS = ("insert", "update", "delete")


def check(chaos, files: list[str], spark_of, figures) -> None:
    if spark_of is None:
        from pipelines.job.spark_session import SessionOptions, build_session
        spark = build_session(SessionOptions(app_name="chaos-check", driver_memory="2g"))
    else:
        spark = spark_of()
    server, db, delta = chaos.server, chaos.db, chaos.opts.work / "delta"
    tables = [row[0] for row in server.query(
        "SELECT table_name FROM information_schema.tables WHERE table_schema = %s ORDER BY 1", (db,))]
    for table in tables:
        columns, expected = server_rows(server, db, table)
        got = delta_rows(spark, str(delta / f"{db}__{table}"), columns)
        figures.tables[f"{db}.{table}"] = (sum(expected.values()), sum(got.values()), got == expected)
    _change_log(spark, delta, [server.binlog_path(f) for f in files], db, figures)
    progress = spark.read.format("delta").load(str(delta / "_cdc_progress"))
    latest = progress.orderBy(F.col("batch_id").desc()).select("gtid").first()
    figures.progress_at_server_gtid = latest is not None and (
        latest["gtid"] == server.query("SELECT @@gtid_binlog_pos")[0][0])
    quarantine = delta / "_cdc_quarantine"
    if quarantine.is_dir():  # made by the first quarantined row
        figures.quarantined = spark.read.format("delta").load(str(quarantine)).count()


def _change_log(spark, delta, binlogs, db: str, figures) -> None:
    """Entries; changes twice (one (source, trx_id, change_seq) on two entries); row changes per
    (GTID, table, operation) against the server's binlog: missing, extra."""
    log = spark.read.format("delta").load(str(delta / "_cdc_change_log"))
    figures.change_log = log.count()
    figures.twice = (log.groupBy("lineage.source", "lineage.trx_id", "lineage.change_seq").count()
                     .where("count > 1").count())
    got = collections.Counter({(r["gtid"], r["table"], r["op"]): r["count"] for r in (
        log.where(F.col("op").isin(*ROW_OPS) & (F.col("database") == db))
        .groupBy(F.col("lineage.gtid").alias("gtid"), "table", "op").count().collect())})
    oracle = collections.Counter((c.gtid, c.table, c.op) for c in binlog_row_changes(binlogs)
                                 if c.database == db)
    figures.binlog_changes = sum(oracle.values())
    figures.missing, figures.extra = sum((oracle - got).values()), sum((got - oracle).values())

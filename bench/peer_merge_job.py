"""The peer's Spark job for bench/peer_debezium.py: what users build today on top of Debezium.

Structured Streaming from Debezium's topics (one per table, `<prefix>.<db>.<table>`, JSON values
without schemas: the bare envelope), and per micro-batch (foreachBatch), for each table the
batch touched: parse the envelope, keep the LATEST change per primary key (the highest Kafka
offset: Debezium writes a table's changes to its one-partition topic in binlog order, so the
offset is the binlog order, also between two changes of one row inside one transaction, which
share source.pos), and MERGE it into the table's Delta table: delete when op = 'd', update when
matched, insert when not (full row images: Debezium needs binlog_row_image=FULL). The tables are
MERGEd one after another; each MERGE carries Delta's txnAppId/txnVersion (= the batch id), the
idempotent-write pattern Delta documents for foreachBatch (a retried batch skips the tables it
already wrote), which bench/delta_visibility.py also reads to time the batches.

Same Spark session factory, Spark/Delta versions and settings as the project's job
(pipelines/job/spark_session.py), same trigger and maxOffsetsPerTrigger as passed by the bench.

    .venv/bin/python bench/peer_merge_job.py --bootstrap H:P --topic-prefix dbz \
        --delta-root DIR --checkpoint DIR [--trigger-seconds 1] [--max-offsets 200000]

Runs until SIGTERM (stops the query between batches) or a failure (exit 1).
"""
from __future__ import annotations

import argparse
import signal
import sys
import threading
from functools import reduce
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from peer_workload import DB, TABLES, Table  # noqa: E402

APP_ID = "peer-merge"
QUERY_NAME = "peer-debezium-merge"
TXN_APP_ID_CONF = "spark.databricks.delta.write.txnAppId"
TXN_VERSION_CONF = "spark.databricks.delta.write.txnVersion"


def spark_type(sql_type: str):
    """The Delta type a MariaDB column lands in (as the project's mapping: DATETIME -> TIMESTAMP_NTZ)."""
    from pyspark.sql import types as T
    base = sql_type.split("(")[0].upper()
    if base == "DECIMAL":
        precision, scale = sql_type[sql_type.index("(") + 1:-1].split(",")
        return T.DecimalType(int(precision), int(scale))
    return {"INT": T.IntegerType(), "BIGINT": T.LongType(), "VARCHAR": T.StringType(),
            "DATETIME": T.TimestampNTZType()}[base]


def json_type(sql_type: str):
    """How Debezium's JsonConverter writes the column: DECIMAL as a string
    (decimal.handling.mode=string), DATETIME(0-3) as epoch milliseconds (io.debezium.time.Timestamp)."""
    from pyspark.sql import types as T
    base = sql_type.split("(")[0].upper()
    return {"DECIMAL": T.StringType(), "DATETIME": T.LongType()}.get(base) or spark_type(sql_type)


def envelope_schema(table: Table):
    from pyspark.sql import types as T
    image = T.StructType([T.StructField(c, json_type(t)) for c, t in table.columns])
    source = T.StructType([T.StructField("file", T.StringType()), T.StructField("pos", T.LongType()),
                           T.StructField("row", T.IntegerType()), T.StructField("gtid", T.StringType()),
                           T.StructField("ts_ms", T.LongType())])
    return T.StructType([T.StructField("before", image), T.StructField("after", image),
                         T.StructField("source", source), T.StructField("op", T.StringType()),
                         T.StructField("ts_ms", T.LongType())])


def delta_schema(table: Table):
    from pyspark.sql import types as T
    return T.StructType([T.StructField(c, spark_type(t)) for c, t in table.columns])


def typed(column, sql_type: str):
    """A column of the Debezium image as its Delta type."""
    from pyspark.sql import functions as F
    base = sql_type.split("(")[0].upper()
    if base == "DATETIME":  # epoch ms of the wall-clock value read as UTC; the session is UTC
        return F.timestamp_millis(column).cast("timestamp_ntz")
    return column.cast(spark_type(sql_type))


def latest_changes(batch, table: Table, topic: str):
    """The batch's changes of one table, the latest per key: op + the row image (after; before
    for a delete) in the table's Delta types."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F
    e = F.from_json(F.col("value").cast("string"), envelope_schema(table)).alias("e")
    changes = batch.where(F.col("topic") == topic).select("offset", e)
    image = F.coalesce(F.col("e.after"), F.col("e.before"))  # after is null only for a delete
    rows = changes.select(F.col("offset"), F.col("e.op").alias("_op"),
                          *[typed(image[c], t).alias(c) for c, t in table.columns])
    newest = Window.partitionBy(*table.key).orderBy(F.col("offset").desc())
    return (rows.withColumn("_n", F.row_number().over(newest)).where(F.col("_n") == 1)
            .drop("_n", "offset"))


class LatestChangeMerge:
    """foreachBatch sink: each table's latest change per key MERGEd into its Delta table at
    `root/<table>`, one table after another, each MERGE idempotent per (APP_ID, batch id)."""

    def __init__(self, root: str, topic_prefix: str, deletion_vectors: bool = True):
        self.root, self.topic_prefix = root, topic_prefix
        self.deletion_vectors = deletion_vectors  # issue #37 goal d: DVs on both sides' tables

    def topic(self, table: Table) -> str:
        return f"{self.topic_prefix}.{DB}.{table.name}"

    def path(self, table: Table) -> str:
        return f"{self.root}/{table.name}"

    def create_tables(self, spark) -> None:
        from delta.tables import DeltaTable
        for table in TABLES:
            (DeltaTable.createIfNotExists(spark).location(self.path(table))
             .addColumns(delta_schema(table))
             .property("delta.enableDeletionVectors", str(self.deletion_vectors).lower()).execute())

    def __call__(self, batch_df, batch_id: int) -> None:
        from delta.tables import DeltaTable
        from pyspark.sql import functions as F
        spark = batch_df.sparkSession
        batch = batch_df.select("topic", "offset", "value").persist()
        try:
            touched = {r["topic"] for r in batch.select("topic").distinct().collect()}
            for table in TABLES:
                if self.topic(table) not in touched:
                    continue
                source = latest_changes(batch, table, self.topic(table)).alias("s")
                on = reduce(lambda a, b: a & b, [F.col(f"t.{k}") == F.col(f"s.{k}") for k in table.key])
                values = {c: F.col(f"s.{c}") for c, _ in table.columns}
                spark.conf.set(TXN_APP_ID_CONF, APP_ID)
                spark.conf.set(TXN_VERSION_CONF, str(batch_id))
                try:
                    (DeltaTable.forPath(spark, self.path(table)).alias("t").merge(source, on)
                     .whenMatchedDelete(condition=F.col("s._op") == "d")
                     .whenMatchedUpdate(set=values)
                     .whenNotMatchedInsert(condition=F.col("s._op") != "d", values=values)
                     .execute())
                finally:
                    spark.conf.unset(TXN_APP_ID_CONF)
                    spark.conf.unset(TXN_VERSION_CONF)
        finally:
            batch.unpersist()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bootstrap", required=True)
    ap.add_argument("--topic-prefix", default="dbz")
    ap.add_argument("--delta-root", required=True)
    ap.add_argument("--checkpoint", required=True)
    ap.add_argument("--trigger-seconds", type=float, default=1.0)
    ap.add_argument("--max-offsets", type=int, default=200_000)
    ap.add_argument("--no-deletion-vectors", action="store_true", help="the tables without deletion vectors")
    args = ap.parse_args(argv)

    from pipelines.job.spark_session import SessionOptions, build_session
    spark = build_session(SessionOptions(app_name=QUERY_NAME))
    sink = LatestChangeMerge(str(Path(args.delta_root).resolve()), args.topic_prefix,
                             deletion_vectors=not args.no_deletion_vectors)
    sink.create_tables(spark)
    query = (spark.readStream.format("kafka")
             .option("kafka.bootstrap.servers", args.bootstrap)
             .option("subscribe", ",".join(sink.topic(t) for t in TABLES))
             .option("startingOffsets", "earliest")
             .option("failOnDataLoss", "true")
             .option("maxOffsetsPerTrigger", args.max_offsets)
             .load()
             .writeStream.queryName(QUERY_NAME)
             .foreachBatch(sink)
             .option("checkpointLocation", args.checkpoint)
             .trigger(processingTime=f"{args.trigger_seconds} seconds")
             .start())
    print(f"{QUERY_NAME}: reading {args.topic_prefix}.{DB}.* at {args.bootstrap} into {args.delta_root}",
          file=sys.stderr, flush=True)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    from pyspark.errors import StreamingQueryException
    try:
        while not stop.is_set() and query.isActive:
            query.awaitTermination(1)
    except StreamingQueryException as exc:
        print(f"{QUERY_NAME}: failed: {exc}", file=sys.stderr)
        return 1
    query.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Foundation smoke path: frames -> Kafka topic -> Spark Kafka source -> pandas_udf header
decode -> Delta table. Proves the real parts work together on a fresh machine; the full
pipeline (`cdc-replicate`) replaces it as the main job.
"""
from __future__ import annotations

import pandas as pd
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T
from pyspark.sql.functions import pandas_udf

from libs.smoke_frames import HEADER_FIELDS, decode_header_columns, smoke_frames

_SPARK_TYPES = {"long": T.LongType(), "int": T.IntegerType()}
HEADER_SCHEMA = T.StructType([T.StructField(name, _SPARK_TYPES[kind]) for name, kind in HEADER_FIELDS])


@pandas_udf(HEADER_SCHEMA)
def common_header(frames: pd.Series) -> pd.DataFrame:
    # one vectorised pass over the Arrow batch: the header is fixed width (issue #3 "Vectorised use")
    return decode_header_columns(frames.to_numpy())


def produce(bootstrap: str, topic: str, count: int, source: str = "smoke", file: str = "smoke-bin.000001") -> int:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "acks": "all"})
    for pos, frame in smoke_frames(count):
        producer.produce(topic, key=source.encode(), value=frame,
                         headers=[("binlog_file", file.encode()), ("binlog_pos", str(pos).encode())])
    if producer.flush(60) != 0:
        raise RuntimeError(f"{count} smoke frames not all delivered to {topic}")
    return count


def decoded(kafka_df: DataFrame) -> DataFrame:
    """Kafka records -> (source, file, pos, partition, offset, header fields)."""
    hdr = F.col("headers")
    return (
        kafka_df
        .withColumn("h", common_header(F.col("value")))
        .select(
            F.col("key").cast("string").alias("source"),
            F.filter(hdr, lambda x: x["key"] == "binlog_file")[0]["value"].cast("string").alias("binlog_file"),
            F.filter(hdr, lambda x: x["key"] == "binlog_pos")[0]["value"].cast("string").cast("long").alias("binlog_pos"),
            "partition", "offset", "h.*",
        )
    )


def run_smoke(spark: SparkSession, bootstrap: str, topic: str, delta_path: str, checkpoint: str) -> int:
    """Read everything now in `topic` into the Delta table at `delta_path`; returns its row count."""
    stream = (
        spark.readStream.format("kafka")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", topic)
        .option("startingOffsets", "earliest")
        .option("includeHeaders", "true")
        .load()
    )
    query = (
        decoded(stream).writeStream.format("delta")
        .option("checkpointLocation", checkpoint)
        .trigger(availableNow=True)
        .start(delta_path)
    )
    query.awaitTermination()
    return spark.read.format("delta").load(delta_path).count()

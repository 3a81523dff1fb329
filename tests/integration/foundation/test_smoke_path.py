"""Kafka -> Spark Kafka source -> pandas_udf -> Delta, end to end on the real parts (issue #2)."""
import struct

import pytest
from chispa import assert_df_equality
from pyspark.sql import types as T

from libs.smoke_frames import smoke_frames
from pipelines.smoke import produce, run_smoke

pytestmark = pytest.mark.integration


def test_smoke_frames_land_in_delta_with_decoded_headers(spark, kafka_broker, topic, tmp_path):
    count = 300
    produce(kafka_broker.bootstrap, topic, count)
    rows = run_smoke(spark, kafka_broker.bootstrap, topic, str(tmp_path / "delta"), str(tmp_path / "ckpt"))
    assert rows == count

    # Expected rows come from struct.unpack of each frame, independent of the pandas_udf.
    expected = [
        ("smoke", "smoke-bin.000001", pos, 0, i, *struct.unpack_from("<IBIIIH", frame))
        for i, (pos, frame) in enumerate(smoke_frames(count))
    ]
    schema = T.StructType([
        T.StructField("source", T.StringType()), T.StructField("binlog_file", T.StringType()),
        T.StructField("binlog_pos", T.LongType()), T.StructField("partition", T.IntegerType()),
        T.StructField("offset", T.LongType()), T.StructField("timestamp", T.LongType()),
        T.StructField("type_code", T.IntegerType()), T.StructField("server_id", T.LongType()),
        T.StructField("event_size", T.LongType()), T.StructField("log_pos", T.LongType()),
        T.StructField("flags", T.IntegerType()),
    ])
    actual = spark.read.format("delta").load(str(tmp_path / "delta"))
    assert_df_equality(actual, spark.createDataFrame(expected, schema), ignore_row_order=True,
                       ignore_nullable=True)

    # Rerunning from the same checkpoint reads nothing new and writes nothing twice.
    assert run_smoke(spark, kafka_broker.bootstrap, topic, str(tmp_path / "delta"), str(tmp_path / "ckpt")) == count

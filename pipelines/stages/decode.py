"""Decode stage: Kafka records -> frames with their typed common-header columns.

One pandas_udf over Arrow batches calls the codec's vectorised header decoder (no per-row Python
objects: the header is fixed width). Bodies are decoded by the assemble stage, which holds the
per-source Format_description; a frame whose size disagrees with its header still flows on (as
data) and is quarantined there, never dropped (DESIGN.md "Bad input")."""
from __future__ import annotations

import pandas as pd
import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T
from pyspark.sql.functions import pandas_udf

from libs.binlog.vectorized import decode_headers
from libs.shipper.record import HEADER_BINLOG_FILE, HEADER_BINLOG_POS

HEADER_SCHEMA = T.StructType([
    T.StructField("timestamp", T.LongType()), T.StructField("type_code", T.IntegerType()),
    T.StructField("server_id", T.LongType()), T.StructField("event_size", T.LongType()),
    T.StructField("flags", T.IntegerType()), T.StructField("size_ok", T.BooleanType()),
])


_PANDAS_DTYPES = {T.LongType(): pd.Int64Dtype(), T.IntegerType(): pd.Int32Dtype(), T.BooleanType(): pd.BooleanDtype()}
_ARROW_TYPES = {T.LongType(): pa.int64(), T.IntegerType(): pa.int32(), T.BooleanType(): pa.bool_()}


@pandas_udf(HEADER_SCHEMA)
def common_header(values: pd.Series) -> pd.DataFrame:
    headers = decode_headers(pa.array(values, type=pa.binary()))
    # column casts, then masked (nullable) pandas arrays: nulls stay nulls, no per-row objects
    return pd.DataFrame({
        f.name: headers.field(f.name).cast(_ARROW_TYPES[f.dataType]).to_pandas(
            types_mapper={_ARROW_TYPES[f.dataType]: _PANDAS_DTYPES[f.dataType]}.get)
        for f in HEADER_SCHEMA.fields})


def _header(name: str):
    return F.filter(F.col("headers"), lambda h: h["key"] == name)[0]["value"].cast("string")


def frames(kafka_df: DataFrame) -> DataFrame:
    """Kafka source rows -> (source, binlog_file, binlog_pos, kafka_partition, kafka_offset, raw, header)."""
    return kafka_df.select(
        F.col("key").cast("string").alias("source"),
        _header(HEADER_BINLOG_FILE).alias("binlog_file"),
        _header(HEADER_BINLOG_POS).cast("long").alias("binlog_pos"),
        F.col("partition").alias("kafka_partition"),
        F.col("offset").alias("kafka_offset"),
        F.col("value").alias("raw"),
        common_header(F.col("value")).alias("header"),
    )

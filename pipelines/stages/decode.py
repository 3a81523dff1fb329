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
from pyspark.sql.functions import pandas_udf
from pyspark.sql.pandas.types import to_arrow_type

from libs.binlog.vectorized import decode_headers
from libs.shipper.record import (
    BINLOG_EVENT, HEADER_BINLOG_EPOCH, HEADER_BINLOG_FILE, HEADER_BINLOG_POS, HEADER_RECORD_KIND,
)
from pipelines.schemas import FRAME_HEADER, spark_schema

HEADER_SCHEMA = spark_schema(FRAME_HEADER)
# Masked (nullable) pandas arrays of the header's Arrow types: nulls stay nulls, no per-row objects.
_PANDAS_DTYPES = {pa.int64(): pd.Int64Dtype(), pa.int32(): pd.Int32Dtype(), pa.bool_(): pd.BooleanDtype()}


@pandas_udf(HEADER_SCHEMA)
def common_header(values: pd.Series) -> pd.DataFrame:
    headers = decode_headers(pa.array(values, type=pa.binary()))
    return pd.DataFrame({
        f.name: headers.field(f.name).cast(to_arrow_type(f.dataType)).to_pandas(
            types_mapper=_PANDAS_DTYPES.get)
        for f in HEADER_SCHEMA.fields})


def _header(name: str):
    """The header's value as text; NULL when the record has no such header (F.get: [0] fails
    under ANSI mode on an empty array)."""
    return F.get(F.filter(F.col("headers"), lambda h: h["key"] == name), 0)["value"].cast("string")


def _binlog_file():
    """The record's file as the job names it: `EPOCH/NAME` after the shipper moved to another
    server (binlog_epoch header > 0), so that positions keep one order across servers
    (libs/binlog/file_names.py epoch_file); the plain name otherwise."""
    epoch = F.coalesce(_header(HEADER_BINLOG_EPOCH).cast("int"), F.lit(0))
    name = _header(HEADER_BINLOG_FILE)
    return F.when(epoch == 0, name).otherwise(F.concat(epoch.cast("string"), F.lit("/"), name))


def frames(kafka_df: DataFrame) -> DataFrame:
    """Kafka source rows -> (source, binlog_file, binlog_pos, record_kind, kafka_partition, kafka_offset,
    kafka_ms, raw, header). record_kind: 'binlog' for a binlog event (no header), 'snapshot' for a
    snapshot record. kafka_ms: the record's Kafka timestamp (epoch millis), whose oldest per source
    the assemble stage reports for the per-source Kafka -> Delta lag (libs/source_counters.py)."""
    return kafka_df.select(
        F.col("key").cast("string").alias("source"),
        _binlog_file().alias("binlog_file"),
        _header(HEADER_BINLOG_POS).cast("long").alias("binlog_pos"),
        F.coalesce(_header(HEADER_RECORD_KIND), F.lit(BINLOG_EVENT)).alias("record_kind"),
        F.col("partition").alias("kafka_partition"),
        F.col("offset").alias("kafka_offset"),
        F.unix_millis(F.col("timestamp")).alias("kafka_ms"),
        F.col("value").alias("raw"),
        common_header(F.col("value")).alias("header"),
    )

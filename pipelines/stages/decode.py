"""Decode stage: Kafka records -> frames with their source, binlog position and record kind
(from the record's Kafka headers). No frame byte is decoded here: the assemble stage decodes the
common header and the bodies it needs (it holds the per-source Format_description), the rows
stage the row images. A frame whose size disagrees with its header still flows on (as data) and
is quarantined there, never dropped (DESIGN.md "Bad input").

Until issue #21 this stage also decoded every frame's common header in a pandas_udf (a Python
pass over every record) into a `header` column no later stage read: the assembler decodes the
header again with the body, so that pass was work done twice and is gone."""
from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from libs.shipper.record import (
    BINLOG_EVENT, HEADER_BINLOG_EPOCH, HEADER_BINLOG_FILE, HEADER_BINLOG_POS, HEADER_RECORD_KIND,
)


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
    kafka_ms, raw). record_kind: 'binlog' for a binlog event (no header), 'snapshot' for a
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
    )

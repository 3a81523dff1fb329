"""Spark schemas are derived from the Avro files, with the nesting and nullability they declare."""
import pytest
from pyspark.sql import types as T

from pipelines.job.schemas import spark_schema

pytestmark = pytest.mark.spark


def test_change_record_schema_is_derived_from_avro():
    s = spark_schema("change_record")
    assert s["change_seq"].dataType == T.LongType() and not s["change_seq"].nullable
    assert s["commit_ts"].dataType == T.TimestampType()
    assert s["gtid"].nullable
    col = s["before"].dataType.elementType
    assert [f.name for f in col.fields] == ["ordinal", "name", "type_code", "text", "binary"]
    assert col["binary"].dataType == T.BinaryType()
    assert s["after"].dataType.elementType == col  # named type reused, not redeclared


def test_assembled_record_frames_are_structs():
    s = spark_schema("assembled_record")
    frame = s["frames"].dataType.elementType
    assert frame["context"].dataType == T.BooleanType()
    assert s["kind"].dataType == T.StringType()


def test_empty_dataframe_with_derived_schema(spark):
    df = spark.createDataFrame([], spark_schema("quarantine_record"))
    assert df.columns[:3] == ["source", "binlog_file", "binlog_pos"]


def test_every_system_table_with_a_batch_id_declares_it_long():
    """Issue #39 item 8: `batch_id` is one type in every `_cdc_*` table that has it (Structured
    Streaming's batch ids are longs): the change log, progress, schema history and source schemas."""
    from libs.tables.system_tables import CHANGE_LOG, PROGRESS, SCHEMA_HISTORY, SOURCE_SCHEMAS
    from pipelines.apply.tables import change_log_schema, progress_schema
    from pipelines.job.schemas import SCHEMA_VERSION_RECORD, SOURCE_SCHEMA_RECORD

    declared = {CHANGE_LOG: change_log_schema(), PROGRESS: progress_schema(),
                SCHEMA_HISTORY: spark_schema(SCHEMA_VERSION_RECORD),
                SOURCE_SCHEMAS: spark_schema(SOURCE_SCHEMA_RECORD)}
    assert {name: schema["batch_id"].dataType for name, schema in declared.items()} == {
        name: T.LongType() for name in declared}

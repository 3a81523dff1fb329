"""pipelines/stages/decode.py over Kafka source rows: each check of libs/stages/kafka_input.py's table
names its problem, a good record has none, and no header (however malformed) raises: under
ANSI mode a failed cast stopped the job at every restart (issue #38 items 7 and 8)."""
import datetime as dt

import pytest
from pyspark.sql import types as T

from libs.binlog.constants import EVENT_LEN_OFFSET
from libs.contracts.topic import KafkaRecord
from pipelines.stages.decode import frames

KAFKA_SCHEMA = T.StructType([  # the Kafka source's columns (includeHeaders)
    T.StructField("key", T.BinaryType()), T.StructField("value", T.BinaryType()),
    T.StructField("topic", T.StringType()), T.StructField("partition", T.IntegerType()),
    T.StructField("offset", T.LongType()), T.StructField("timestamp", T.TimestampType()),
    T.StructField("headers", T.ArrayType(T.StructType([T.StructField("key", T.StringType()),
                                                       T.StructField("value", T.BinaryType())]))),
])
EVENT = bytearray(30)
EVENT[EVENT_LEN_OFFSET] = 30  # a 30-byte event: its common header says so
GOOD = KafkaRecord("m1", "mdb-bin.000001", 4, bytes(EVENT))


def record(key=b"m1", value=bytes(EVENT), **headers):
    """GOOD's record with some headers changed (None: left out)."""
    merged = {k: v for k, v in GOOD.headers()} | headers
    return key, value, [(k, v) for k, v in merged.items() if v is not None]


CASES = [  # (key, value, headers), expected source, binlog_pos, record_problem
    (record(), "m1", 4, None),
    (record(binlog_epoch=b"2"), "m1", 4, None),
    (record(binlog_pos=b"abc"), "m1", None, "binlog_pos header 'abc' is not a number"),
    (record(binlog_pos=b"-4"), "m1", None, "binlog_pos header '-4' is not a number"),
    (record(binlog_pos=b"99999999999999999999"), "m1", None,
     "binlog_pos header '99999999999999999999' is not a number"),
    (record(binlog_pos=None), "m1", None, "no binlog_pos header"),
    (record(binlog_epoch=b"x"), "m1", 4, "binlog_epoch header 'x' is not a number"),
    (record(binlog_file=None), "m1", 4, "no binlog_file header"),
    (record(key=None), "m1", 4, "no key (the source id)"),
    (record(key=b""), "m1", 4, "no key (the source id)"),
    (record(key=b"m2"), "m2", 4, "key 'm2' names another source than its source header 'm1'"),
    (record(source=None), "m1", 4, None),  # the contract's "at least": file and position
    (record(record_kind=b"ddl"), "m1", 4,
     "record_kind header 'ddl' is not one of binlog, snapshot, format, heartbeat"),
    (record(value=None), "m1", 4, "no value"),
    (record(value=bytes(EVENT) + b"x"), "m1", 4, "value of 31 bytes is not one binlog event (its header's "
                                                  "event_size is 30)"),
    (record(value=b"\x01"), "m1", 4, "value of 1 bytes is shorter than a binlog event header (19)"),
    (record(value=b"{}", record_kind=b"heartbeat"), "m1", 4, None),  # side records: their own decoders
    ((None, b"{}", None), "kafka:binlog:3", None, "no key (the source id); no binlog_file header; "
     "no binlog_pos header; value of 2 bytes is shorter than a binlog event header (19)"),
]


def test_each_check_names_its_problem_and_no_header_raises(spark):
    at = dt.datetime(2026, 1, 1)
    rows = [(key, value, "binlog", 3, offset, at, headers)
            for offset, ((key, value, headers), *_) in enumerate(CASES)]
    got = {r["kafka_offset"]: r for r in frames(spark.createDataFrame(rows, KAFKA_SCHEMA)).collect()}
    for offset, (_, source, pos, problem) in enumerate(CASES):
        row = got[offset]
        assert (row["source"], row["binlog_pos"], row["record_problem"]) == (source, pos, problem), offset
    assert got[1]["binlog_file"] == "2/mdb-bin.000001" and got[6]["binlog_file"] == "mdb-bin.000001"
    assert {r["kafka_topic"] for r in got.values()} == {"binlog"}


@pytest.fixture(autouse=True)
def _ansi(spark):
    """Spark 4 runs with ANSI mode by default, as the job does; this test holds it on."""
    before = spark.conf.get("spark.sql.ansi.enabled")
    spark.conf.set("spark.sql.ansi.enabled", "true")
    yield
    spark.conf.set("spark.sql.ansi.enabled", before)

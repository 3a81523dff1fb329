"""The decode stage's tag columns (pipelines/stages/decode.py tag_columns) are the contract's
encoding (libs/contracts/topic_tag.py tag_head) computed by Spark: for every shape of key and
headers the two agree byte for byte, so the assemble stage's check (TopicKeys.head_problem) gives
the answer the shipper's does; no shape raises under ANSI mode."""
import datetime as dt

import pytest

from libs.contracts.topic import KafkaRecord, Origin
from libs.contracts.topic_tag import TopicKeys, tag_head
from pipelines.stages.decode import frames
from tests.spark.stream.test_decode_records import EVENT, KAFKA_SCHEMA

KEYS = TopicKeys((b"z" * 40,))
RECORD = KafkaRecord("m1", "mdb-bin.000001", 4, bytes(EVENT),
                     origin=Origin("mariadb server_id=1 gtid_domain_id=0", "0-1-7", "0-1-8"))
TAGGED = KEYS.tagged(b"m1", bytes(EVENT), RECORD.headers())
CASES = [  # key, value, headers
    (b"m1", bytes(EVENT), TAGGED),
    (None, bytes(EVENT), TAGGED),
    (b"m1", None, TAGGED),
    (b"m1", bytes(EVENT), TAGGED[:-1]),                          # no tag
    (b"m1", bytes(EVENT), [*TAGGED, ("x", b"y")]),               # the tag not last
    (b"m1", bytes(EVENT), [("\u00e9t\u00e9", None), ("", b""), TAGGED[-1]]),  # a name not ASCII, nulls
    (b"m1", bytes(EVENT), [TAGGED[-1]]),                         # the tag alone
    (b"m1", bytes(EVENT), []),
    (b"m1", bytes(EVENT), None),
    (b"", b"", [("cdc_tag", b"\xff\xfe")]),                      # a tag that is not UTF-8
]


def test_spark_computes_the_contracts_tag_head_and_the_checks_agree(spark):
    at = dt.datetime(2026, 1, 1)
    rows = [(key, value, "binlog", 0, offset, at, headers)
            for offset, (key, value, headers) in enumerate(CASES)]
    decoded = frames(spark.createDataFrame(rows, KAFKA_SCHEMA), tagged=True)
    got = {r["kafka_offset"]: r for r in decoded.collect()}
    for offset, (key, value, headers) in enumerate(CASES):
        row = got[offset]
        if headers is None:
            assert (row["tag"], row["tag_head"]) == (None, None)
            continue
        tagged = bool(headers) and headers[-1][0] == "cdc_tag"
        before = headers[:-1] if headers else []
        assert bytes(row["tag_head"]) == tag_head(key, before), offset
        assert row["tag"] == (headers[-1][1].decode("utf-8", "replace") if tagged else None), offset
        verdict = KEYS.head_problem(bytes(row["tag_head"]), value, row["tag"])
        assert (verdict is None) == (KEYS.problem(key, value, headers) is None), offset
    assert [o for o, r in got.items() if KEYS.head_problem(bytes(r["tag_head"] or b""), CASES[o][1], r["tag"])
            is None] == [0]


def test_without_a_secret_the_decode_stage_is_as_before(spark):
    at = dt.datetime(2026, 1, 1)
    df = spark.createDataFrame([(b"m1", bytes(EVENT), "binlog", 0, 0, at, TAGGED)], KAFKA_SCHEMA)
    assert "tag" not in frames(df).columns and "tag_head" not in frames(df).columns


def test_the_secret_never_enters_a_plan(spark, tmp_path):
    """The assemble stage holds the secrets in its Python function (pickled), never in a Spark
    expression: the query's plan, as explain() and the UI show it, does not hold them."""
    from pyspark.sql import functions as F

    from libs.stages.assembly import StageConfig
    from pipelines.stages.assemble import assemble

    secret = b"PLAN-SECRET-" * 4
    stream = spark.readStream.format("rate").load().select(
        F.lit(bytearray(b"m1")).alias("key"), F.lit(bytearray(bytes(EVENT))).alias("value"),
        F.lit("binlog").alias("topic"), F.lit(0).alias("partition"), F.col("value").alias("offset"),
        F.col("timestamp"), F.array(F.struct(F.lit("binlog_file").alias("key"),
                                             F.lit(bytearray(b"f")).alias("value"))).alias("headers"))
    query = assemble(frames(stream, tagged=True), str(tmp_path), StageConfig(), 1000, TopicKeys((secret,)))
    plan = query._jdf.queryExecution().toString()
    assert "tag_head" in plan and "PLAN-SECRET" not in plan and secret.hex() not in plan


@pytest.fixture(autouse=True)
def _ansi(spark):
    before = spark.conf.get("spark.sql.ansi.enabled")
    spark.conf.set("spark.sql.ansi.enabled", "true")
    yield
    spark.conf.set("spark.sql.ansi.enabled", before)

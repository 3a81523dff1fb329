"""Issue #4 end to end on the real parts: corpus binlogs -> cdc-ship -> Kafka broker ->
cdc-replicate stages (decode pandas_udf, applyInPandasWithState assembler, parallel rows) ->
Delta change records, compared with the server's own decoder output (mariadb-binlog -vv)."""
import collections

import pytest
from pyspark.sql import functions as F

from libs.config.job import JobConfig
from pipelines.replicate import build_query
from libs.tables.system_tables import CHANGES
from pipelines.ship import main as cdc_ship
from tests.unit.stream.test_stream_assembly import CORPUS, OPS, oracle_row_counts

pytestmark = pytest.mark.integration

# Every corpus file, compared with its oracle: test_corpus_through_kafka.py; a SIGKILL while a
# spilled transaction is open: test_kill_and_restart.py. Here: more data arriving while the job
# is down, restarts from the same checkpoint.
FILES = [f"{CORPUS}/row_minimal/mdb-bin.000002", f"{CORPUS}/row_noblob/mdb-bin.000003"]


def ship(bootstrap, topic, source, files):
    assert cdc_ship(["--from-file", *files, "--bootstrap", bootstrap, "--topic", topic,
                     "--source", source]) == 0


def replicate(spark, cfg: JobConfig) -> None:
    query = build_query(spark, cfg)
    query.awaitTermination()
    assert query.exception() is None


def row_counts(df) -> collections.Counter:
    rows = df.filter(F.col("op").isin(*OPS.values())).groupBy("database", "table", "op").count().collect()
    return collections.Counter({(r["database"], r["table"], r["op"]): r["count"] for r in rows})


def test_restart_from_checkpoint_mid_stream_gives_same_output_nothing_twice(
        spark, kafka_broker, topic, tmp_path):
    files = FILES[:2]
    cfg = JobConfig(bootstrap=kafka_broker.bootstrap, topic=topic, delta_root=str(tmp_path / "delta"),
                    checkpoint=str(tmp_path / "ckpt"), available_now=True, max_offsets_per_trigger=150)
    ship(kafka_broker.bootstrap, topic, "mdb", files[:1])
    replicate(spark, cfg)                                  # first run: first file only
    ship(kafka_broker.bootstrap, topic, "mdb", files[1:])  # more arrives while the job is down
    replicate(spark, cfg)                                  # restart from the same checkpoint
    replicate(spark, cfg)                                  # and again: nothing new
    changes = spark.read.format("delta").load(f"{cfg.delta_root}/{CHANGES}")
    expected = sum((oracle_row_counts(f + ".vv.txt.gz") for f in files), collections.Counter())
    assert row_counts(changes) == expected
    assert changes.groupBy("trx_id", "change_seq").count().filter("count > 1").count() == 0

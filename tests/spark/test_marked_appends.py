"""pipelines/delta/marked_appends.py on Delta: appends idempotent per (app_id, batch_id) by commit marks."""
from __future__ import annotations

import pipelines.delta.marked_appends as marked_appends
from pipelines.delta.marked_appends import MarkedAppends, committed_batch


def _rows(spark, path):
    return sorted(tuple(r) for r in spark.read.format("delta").load(path).collect())


def _df(spark, *values):
    return spark.createDataFrame([(v,) for v in values], "v string")


def test_a_batch_appended_once_whatever_writer_instance_replays_it(spark, tmp_path):
    path = str(tmp_path / "t")
    first = MarkedAppends()
    assert first.append(_df(spark, "a"), path, "app", 0)
    assert first.append(_df(spark, "b"), path, "app", 1)
    assert not first.append(_df(spark, "b"), path, "app", 1)  # known to this writer
    replayer = MarkedAppends()  # a restarted job: it reads the marks from the table's history
    assert not replayer.append(_df(spark, "b"), path, "app", 1)
    assert replayer.append(_df(spark, "c"), path, "app", 2)
    assert _rows(spark, path) == [("a",), ("b",), ("c",)]
    assert committed_batch(spark, path, "app") == 2
    assert committed_batch(spark, str(tmp_path / "none"), "app") == -1


def test_both_quarantine_writers_of_one_batch_land(spark, tmp_path):
    """The stream stages (rejected frames) and the applier (rejected changes) both append to
    `_cdc_quarantine` in one batch: under one app id the second append looked done."""
    from libs.config.job import JobConfig
    from libs.tables.table_location import TableLocation
    from pipelines.apply import DeltaApplier
    from pipelines.stages.sink import BatchPaths, ReplicateBatch
    from tests.spark.apply.builders import catalog_from_ddl

    stream = ReplicateBatch(BatchPaths(str(tmp_path), str(tmp_path / "ckpt")), None)
    applier = DeltaApplier(catalog_from_ddl("CREATE TABLE db.t (id INT PRIMARY KEY)"),
                           JobConfig(delta_root=str(tmp_path)))
    assert stream.quarantine.app_id != applier.quarantine_app_id
    path = str(tmp_path / "_cdc_quarantine")
    # one writer class, one table
    assert stream.quarantine.path == applier.writes.quarantine.path == TableLocation(path=path)
    assert stream.quarantine.appends.append(_df(spark, "frame"), path, stream.quarantine.app_id, 5)
    assert applier.writes.quarantine.appends.append(_df(spark, "change"), path,
                                                    applier.writes.quarantine.app_id, 5)
    assert _rows(spark, path) == [("change",), ("frame",)]


def test_txn_versions_of_earlier_releases_count_as_committed(spark, tmp_path):
    path = str(tmp_path / "old")
    (_df(spark, "old").write.format("delta").mode("append")
     .option("txnAppId", "app").option("txnVersion", "3").save(path))
    appends = MarkedAppends()
    assert not appends.append(_df(spark, "old"), path, "app", 3)
    assert appends.append(_df(spark, "new"), path, "app", 4)
    assert _rows(spark, path) == [("new",), ("old",)]


def test_a_mark_older_than_the_first_history_page_is_found(spark, tmp_path, monkeypatch):
    monkeypatch.setattr(marked_appends, "HISTORY_PAGE", 2)
    path = str(tmp_path / "deep")
    MarkedAppends().append(_df(spark, "mine"), path, "app", 9)
    other = MarkedAppends()
    for batch in range(3):  # another writer's commits bury the mark
        other.append(_df(spark, f"other{batch}"), path, "other", batch)
    assert committed_batch(spark, path, "app") == 9
    assert not MarkedAppends().append(_df(spark, "mine"), path, "app", 9)


def test_a_quarantine_table_of_an_earlier_release_gains_kafka_topic(spark, tmp_path):
    """_cdc_quarantine created before kafka_topic was declared (schemas/quarantine_record.avsc):
    the next append adds the nullable column instead of failing on the schema mismatch."""
    import datetime as dt

    from libs.tables.system_tables import QUARANTINE
    from pipelines.delta.arrow_frames import arrow_frame
    from pipelines.delta.quarantine import QuarantineWriter, quarantine_schema

    row = {"source": "m1", "kind": "kafka_record", "reason": "no key", "raw": b"x", "kafka_topic": "binlog",
           "kafka_partition": 0, "kafka_offset": 7,
           "quarantined_at": dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)}
    old = arrow_frame(spark, [row], quarantine_schema()).drop("kafka_topic")
    path = str(tmp_path / QUARANTINE)
    old.write.format("delta").save(path)
    QuarantineWriter(str(tmp_path), "app", "stream").append(arrow_frame(spark, [row], quarantine_schema()), 0)
    got = [(r["kafka_topic"], r["kafka_offset"]) for r in spark.read.format("delta").load(path).collect()]
    assert sorted(got, key=str) == [("binlog", 7), (None, 7)]

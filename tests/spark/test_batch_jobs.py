"""pipelines/job/batch_jobs.py: the jobs a batch submits, read off the DAG scheduler's counter,
against the status tracker's own list of the jobs (the public API, one py4j call per id)."""
from __future__ import annotations

from pipelines.job.batch_jobs import jobs_since, jobs_submitted


def test_the_count_is_the_jobs_the_status_tracker_lists(spark):
    tracker = spark.sparkContext.statusTracker()
    before = set(tracker.getJobIdsForGroup(None))
    first = jobs_submitted(spark)
    spark.range(10).count()
    spark.range(5).collect()
    spark.range(100).selectExpr("id % 3 AS k").groupBy("k").count().collect()
    new = set(tracker.getJobIdsForGroup(None)) - before
    assert jobs_since(spark, first) == len(new) >= 3


def test_an_unknown_start_gives_no_count(spark):
    assert jobs_since(spark, None) is None

"""How many Spark jobs a micro-batch starts (issue #57 item 5: "measure and report the jobs per
batch before and after").

Spark numbers its jobs in the order they are submitted. The DAG scheduler's next number, read
before and after a batch, gives the jobs submitted meanwhile on every thread: the batch's own
(the applier's side-by-side tables too) and the background warm of the previous batch's targets
(pipelines/apply/snapshot_warmer.py), which is part of what a batch costs. One py4j call each,
under a millisecond. The status tracker's public lists were no use here: a py4j round trip per
job id. The counter is not public API: where it cannot be read (another Spark build, a
Databricks runtime) the count is None and the progress line leaves it out."""
from __future__ import annotations

from pyspark.sql import SparkSession


def jobs_submitted(spark: SparkSession) -> int | None:
    """Spark jobs submitted in this session's context so far (None: not readable here)."""
    try:
        return int(spark.sparkContext._jsc.sc().dagScheduler().nextJobId())
    except Exception:  # noqa: BLE001 - a measurement only: a Spark without it runs as before
        return None


def jobs_since(spark: SparkSession, first: int | None) -> int | None:
    """The jobs submitted since `first` (jobs_submitted's), None when either is unknown."""
    now = jobs_submitted(spark) if first is not None else None
    return None if now is None else now - first

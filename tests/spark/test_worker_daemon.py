"""The session's Python workers run pipelines/job/worker_daemon.py: no zip importer is left for
PySpark's per-task importlib.invalidate_caches() to re-read (libs/runtime/worker_path.py)."""
from __future__ import annotations


def _worker_importers(_):
    import sys
    import zipimport

    import pandas  # noqa: F401  (a worker imports its UDFs' dependencies)

    yield sorted(k for k, v in sys.path_importer_cache.items() if isinstance(v, zipimport.zipimporter))
    yield sorted(m.__name__ for m in (sys.modules["pyspark"],) if ".zip" in (m.__file__ or ""))


def test_python_workers_import_nothing_from_archives(spark):
    assert spark.sparkContext.getConf().get("spark.python.daemon.module") == "pipelines.job.worker_daemon"
    importers, pyspark_from_zip = (spark.sparkContext.parallelize([0], 1)
                                   .mapPartitions(_worker_importers).collect())
    assert importers == []
    assert pyspark_from_zip == []

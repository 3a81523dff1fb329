"""What a Python task of this project's session pays for PySpark's per-task
importlib.invalidate_caches() (libs/runtime/worker_path.py): the zip importers left in a worker and
the milliseconds one call takes there (bench/README.md "Session 7"). Pass --conf K=V to try a
session setting, e.g. --conf spark.python.daemon.module=pyspark.daemon (Spark's default).

    .venv/bin/python bench/worker_imports.py [--conf spark.python.daemon.module=pyspark.daemon]
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from pipelines.job.spark_session import SessionOptions, build_session
extra = tuple(tuple(a.split("=", 1)) for a in sys.argv[2::2]) if sys.argv[1:2] == ["--conf"] else ()
spark = build_session(SessionOptions(app_name="worker-imports", extra_conf=extra))
def probe(_):
    import sys
    import time
    import importlib
    import zipimport
    import pandas  # noqa: F401  (imported only to load it into the worker, as a task would)
    import pyarrow  # noqa: F401  (imported only to load it into the worker, as a task would)
    zips = [(k, type(v).__name__) for k, v in sys.path_importer_cache.items()
            if isinstance(v, zipimport.zipimporter)]
    t = time.perf_counter()
    for _ in range(5):
        importlib.invalidate_caches()
    return [(sys.version, sys.path[:6], zips, (time.perf_counter() - t) / 5 * 1000)]
for r in spark.sparkContext.parallelize([1], 1).mapPartitions(probe).collect():
    print(r[0])
    print("sys.path head:", r[1])
    print(len(r[2]), "zip importers:", [k for k, _ in r[2]])
    print(f"invalidate_caches: {r[3]:.2f} ms per call")
spark.stop()

"""PySpark's worker daemon, started without the redundant archives on sys.path
(`spark.python.daemon.module`, set by pipelines/job/spark_session.py on local sessions).

Spark runs `python -m <this module> pyspark.worker`. Before pyspark is imported, the archives that
libs/runtime/worker_path.py finds redundant leave sys.path and the importer cache, so pyspark loads from
site-packages and the per-task `importlib.invalidate_caches()` has no zip directory to re-read.
Then PySpark's own daemon runs unchanged.
"""
from __future__ import annotations

import runpy
import sys

from libs.runtime.worker_path import importer_keys_under, redundant_archives


def main() -> None:
    drop = redundant_archives(sys.path)
    sys.path[:] = [p for p in sys.path if p not in drop]
    for key in importer_keys_under(drop, list(sys.path_importer_cache)):
        del sys.path_importer_cache[key]
    runpy.run_module("pyspark.daemon", run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()

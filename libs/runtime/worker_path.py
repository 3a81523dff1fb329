"""Which archives on a PySpark Python worker's sys.path are redundant (a per-task cost:
bench/README.md "Session 7").

Spark puts `$SPARK_HOME/python/lib/pyspark.zip`, the py4j zip and spark-core's jar at the head of
every Python worker's PYTHONPATH (PythonUtils.sparkPythonPath). PySpark's worker calls
`importlib.invalidate_caches()` at the start of every task (worker_util.setup_spark_files), and
before Python 3.13 a zip importer's invalidate_caches re-reads the archive's whole directory, in
pure Python, once per cached importer (one per imported package inside the zip): 126-180 ms of
CPU per task in a worker of this project's session (bench/worker_imports.py), more than many of
its tasks' own work.

With pyspark installed from PyPI these archives hold nothing the worker cannot import from
site-packages, the same files of the same release. An archive is redundant when every top-level
Python module it provides is found outside archives; spark-core's jar provides none.
"""
from __future__ import annotations

import os
import zipfile
from importlib.machinery import PathFinder
from typing import Iterable, Sequence

_SOURCE_SUFFIXES = (".py", ".pyc")


def top_level_modules(archive: str) -> set[str]:
    """Names importable from the root of a zip archive: its top-level modules and packages."""
    names = set()
    with zipfile.ZipFile(archive) as zf:
        for entry in zf.namelist():
            head, sep, rest = entry.partition("/")
            if not sep and head.endswith(_SOURCE_SUFFIXES):
                names.add(head.rsplit(".", 1)[0])
            elif sep and rest in ("__init__.py", "__init__.pyc"):
                names.add(head)
    return names


def is_archive(entry: str) -> bool:
    return os.path.isfile(entry) and zipfile.is_zipfile(entry)


def redundant_archives(path: Sequence[str]) -> list[str]:
    """Archive entries of `path` whose every top-level module is importable from its other,
    non-archive entries (in `path` order)."""
    archives = [p for p in path if is_archive(p)]
    plain = [p for p in path if p not in archives]
    return [a for a in archives
            if all(PathFinder.find_spec(name, plain) is not None for name in top_level_modules(a))]


def importer_keys_under(archives: Iterable[str], cached: Iterable[str]) -> list[str]:
    """Keys of sys.path_importer_cache that belong to one of `archives`: the archive itself and
    the `archive/package` importers made for packages imported from it."""
    roots = tuple(archives)
    return [k for k in cached
            if isinstance(k, str) and any(k == r or k.startswith(r + os.sep) for r in roots)]

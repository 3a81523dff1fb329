"""libs/runtime/worker_path.py: which archives on a Python worker's sys.path are redundant."""
from __future__ import annotations

import os
import zipfile

from libs.runtime.worker_path import importer_keys_under, redundant_archives, top_level_modules


def _zip(path, names):
    with zipfile.ZipFile(path, "w") as zf:
        for name in names:
            zf.writestr(name, "")
    return str(path)


def test_top_level_modules_are_root_modules_and_packages(tmp_path):
    archive = _zip(tmp_path / "a.zip", ["mod.py", "cached.pyc", "pkg/__init__.py", "pkg/sub.py",
                                        "pkg/inner/__init__.py", "data/readme.txt", "org/apache/X.class"])
    assert top_level_modules(archive) == {"mod", "cached", "pkg"}


def test_archive_whose_modules_are_installed_elsewhere_is_redundant(tmp_path):
    site = tmp_path / "site"
    (site / "pkg").mkdir(parents=True)
    (site / "pkg" / "__init__.py").write_text("")
    dup = _zip(tmp_path / "dup.zip", ["pkg/__init__.py", "pkg/sub.py"])
    only_here = _zip(tmp_path / "only.zip", ["pkg/__init__.py", "extra.py"])
    no_python = _zip(tmp_path / "core.jar", ["org/apache/spark/X.class"])
    path = [dup, only_here, no_python, str(site), str(tmp_path / "missing.zip")]
    assert redundant_archives(path) == [dup, no_python]


def test_an_archive_is_not_found_redundant_through_another_archive(tmp_path):
    first = _zip(tmp_path / "first.zip", ["pkg/__init__.py"])
    second = _zip(tmp_path / "second.zip", ["pkg/__init__.py"])
    assert redundant_archives([first, second]) == []


def test_importer_keys_under_an_archive_include_its_package_importers(tmp_path):
    archive = str(tmp_path / "pyspark.zip")
    cached = [archive, archive + os.sep + "pyspark", archive + os.sep + "pyspark" + os.sep + "sql",
              str(tmp_path / "pyspark.zip2"), str(tmp_path / "site"), None]
    assert importer_keys_under([archive], cached) == cached[:3]

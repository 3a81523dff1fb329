"""Project-local directories. Computed from this file's location, never from the environment."""
from __future__ import annotations

from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]  # libs/runtime/paths.py
CACHE_DIR = REPO_ROOT / ".cache"
SPARK_JARS_DIR = CACHE_DIR / "jars" / "spark"
KAFKA_JARS_DIR = CACHE_DIR / "jars" / "kafka"
# The local driver JVM's class-data archive (pipelines/jvm_archive.py, built by `scripts/dev setup`).
JVM_CLASS_ARCHIVE = CACHE_DIR / "jvm" / "spark-classes.jsa"
RUN_DIR = REPO_ROOT / ".run"  # broker data, embedded-default Delta tables and checkpoints
# The team workspace's shared/ sits beside the repository (the developers' checkout and CI's
# fresh clone alike); its corpus/ holds the real binlogs the tests compare against.
SHARED_DIR = REPO_ROOT.parent / "shared"
CORPUS_DIR = SHARED_DIR / "corpus"

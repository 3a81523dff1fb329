"""What a target's mode (pipelines/apply/modes/) hands the batch's writer for one target: the
write and the session whose txn confs it commits under (pipelines/delta/delta_txn.py)."""
from __future__ import annotations

from typing import Callable, NamedTuple

from pyspark.sql import SparkSession

from libs.apply.target_mirror import TargetMirror


class TargetWrite(NamedTuple):
    session: SparkSession  # a write's txn confs are its DataFrame's session's
    write: Callable  # write(path): ONE Delta commit
    mirror: TargetMirror | None = None  # its mirror with the batch applied: kept if the commit equals it
    base: int | None = None  # the Delta version the mirror was at before the batch

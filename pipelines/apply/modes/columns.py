"""The columns a target's mode keeps after `_lineage` (libs/apply/modes/), as Spark fields, and
what an existing table made in another mode lacks or has too much of."""
from __future__ import annotations

from pyspark.sql import types as T

from libs.apply.modes.scd2 import SCD2
from libs.apply.modes.select import mode_of
from libs.apply.modes.soft_delete import SOFT_DELETE
from libs.targets.model import Target
from pipelines.job.schemas import spark_schema


def soft_delete_fields(target: Target) -> list[T.StructField]:
    """The soft-delete columns of a `delete: soft` target (libs/apply/modes/soft_delete.py); none else."""
    return list(spark_schema("soft_delete").fields) if mode_of(target) is SOFT_DELETE else []


def history_fields(target: Target) -> list[T.StructField]:
    """The history columns of an SCD2 target (none for a current one)."""
    return spark_schema("history_columns").fields if mode_of(target) is SCD2 else []


def _soft_delete_mismatches(fields: dict, target: Target) -> list[str]:
    """A table made in the other `delete:` mode: its deleted rows would read as live, or the other way."""
    soft = [f.name for f in spark_schema("soft_delete").fields]
    has = [name for name in soft if name in fields]
    if mode_of(target) is SOFT_DELETE and has != soft:
        return [f"it was made with `delete: hard` (no {', '.join(n for n in soft if n not in has)}), "
                f"the target says `delete: soft`"]
    if mode_of(target) is not SOFT_DELETE and has:
        return [f"it was made with `delete: soft` ({', '.join(has)}), the target says `delete: hard`"]
    return []


def mode_mismatches(fields: dict, target: Target) -> list[str]:
    """What an existing table's columns (`fields`: lower-cased name -> field) lack of the
    target's mode, or have of another's."""
    problems = [f"column {f.name!r} is missing (a `history: scd2` target's, schemas/history_columns.avsc)"
                for f in history_fields(target) if f.name.lower() not in fields]
    if mode_of(target) is not SCD2:  # (an SCD2 target's own `_deleted` is a history column)
        problems += _soft_delete_mismatches(fields, target)
    return problems

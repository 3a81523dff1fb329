"""The working tables of online schema change tools in a batch (issue #39 item 1; which tables:
libs/apply/shadow_tables.py, config.shadow_tables), for the applier.

A working table that has ended by the batch's end (renamed onto its table, or dropped) is
replayed like any table, so its changes are in the change log as what they are (the tool's
copy, its triggers' writes), but its rows are not written: they reach its table through the
swap (a rename brings them, batch_ddl.py). Its Delta table, made by an earlier batch while the
tool ran, is removed once the batch's target writes are committed (after the table the swap
copies it into: a retried batch finds that table committed and the removal idempotent).
"""
from __future__ import annotations

from typing import Any, Iterable, Mapping, Sequence

from pyspark.sql import SparkSession

from libs.config.job import SHADOW_KEEP, JobConfig
from libs.schema_history.history import SchemaHistory
from libs.apply.shadow_tables import ends_as_shadow
from libs.tables.table_location import TableLocation
from libs.targets import TargetCatalog
from pipelines.apply.known_targets import KnownTargets
from pipelines.delta.delta_tables import located


def ended_shadows(config: JobConfig, history: SchemaHistory, catalog: TargetCatalog,
                  groups: Mapping[tuple[str, str], Sequence[Mapping[str, Any]]],
                  renames: Mapping[tuple[str, str], Any]) -> set[tuple[str, str]]:
    """The batch's tables (those with changes, and both names of each rename) that are a tool's
    working table and gone from the server at the batch's end."""
    if config.shadow_tables == SHADOW_KEEP:
        return set()
    named: dict[tuple[str, str], str] = {}  # (database, table) -> a source that logged it
    for name, changes in groups.items():
        named.setdefault(name, changes[0].source)
    for rename in renames.values():
        for name in ((rename.old.database, rename.old.table), (rename.new.database, rename.new.table)):
            named.setdefault(name, rename.change.source)
    followed: dict[str, set[str]] = {}
    for target in catalog.targets:
        followed.setdefault(target.database, set()).add(target.table)
    out = set()
    for (database, table), source in named.items():
        versions = history.versions(source, database, table)
        gone = bool(versions) and versions[-1].schema is None
        if (catalog.get(database, table) is not None
                and ends_as_shadow(table, followed.get(database, set()), gone)):
            out.add((database, table))
    return out


def remove_tables(spark: SparkSession, known: KnownTargets, paths: Iterable[TableLocation]) -> None:
    """Each Delta table removed (a path's directory, a catalog's table dropped); idempotent."""
    for path in paths:
        known.forget(path)
        table = located(path)
        if table.is_catalog:
            spark.sql(f"DROP TABLE IF EXISTS {table.sql_ref()}")
            continue
        jvm = spark.sparkContext._jvm
        where = jvm.org.apache.hadoop.fs.Path(table.path)
        fs = where.getFileSystem(spark._jsc.hadoopConfiguration())
        if fs.exists(where):
            fs.delete(where, True)

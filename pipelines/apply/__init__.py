"""Apply stage (DESIGN.md "Dataflow": apply): replay change records onto Delta tables.

    from pipelines.apply import DeltaApplier
    changes_df.writeStream.foreachBatch(DeltaApplier(catalog, config)).start()

applier.py: DeltaApplier (the batch: replay per table, then the writes in their order).
batch_ddl.py: the followed targets' Delta tables carried across the batch's DDL (what the DDL
means: libs/apply/ddl.py). batch_writes.py: the batch's writes, each idempotent per (app_id,
batch_id). known_targets.py: what the applier keeps of its targets from batch to batch. Why the
stage stops: libs/apply/stops.py. What the stage decides without Spark: libs/apply/.
touched_rows.py: the reads (rows a batch can touch, the whole-table mirror). target_writes.py:
one MERGE or overwrite per target. tables.py: target schemas and creation with Delta column
DEFAULTs. System table names: libs/tables/system_tables.py.
Lineage SQL: libs/reads/lineage_sql.py. The modules of this package never import the package itself
(its re-exports below would make that an import cycle).
"""
from pipelines.apply.applier import DeltaApplier
from libs.apply.stops import ApplyStopped

__all__ = ["ApplyStopped", "DeltaApplier"]

"""Apply stage (DESIGN.md "Dataflow": apply): replay change records onto Delta tables.

    from pipelines.apply import DeltaApplier
    changes_df.writeStream.foreachBatch(DeltaApplier(catalog, config)).start()

applier.py: DeltaApplier (read touched rows, libs.replay, one MERGE per table, change log,
quarantine, progress; idempotent per (app_id, batch_id)). tables.py: table names, schemas,
creation with Delta column DEFAULTs, txnAppId/txnVersion helpers. Lineage SQL: libs/lineage_sql.py.
"""
from pipelines.apply.applier import ApplyStopped, DeltaApplier
from pipelines.apply.tables import CHANGE_LOG, PROGRESS, QUARANTINE

__all__ = ["ApplyStopped", "CHANGE_LOG", "DeltaApplier", "PROGRESS", "QUARANTINE"]

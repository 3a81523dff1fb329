"""The job's own Delta tables and the app ids its writes carry: declared once, here.

The tables live next to the targets, under JobConfig.delta_root or in JobConfig.catalog_schema
(libs/tables/table_location.py) (DESIGN.md "Lineage": change log
and progress; "Bad input": quarantine). A target named like one would be mixed into it, so the
whole prefix is reserved for them (libs/targets/target_entry.py refuses it in declarations).

An app id names one writer of one table: Delta's txnAppId of a target write, or the commit mark
of an append (libs/tables/commit_marks.py). A write is idempotent per (app id, batch id) (DESIGN.md
"Exactly once"), so two writers of one table in one batch need two app ids: one's mark must not
make the other's write look done. The spellings below are those already in written tables'
histories; changing one would make a batch replayed across an upgrade write twice.
"""
from __future__ import annotations

SYSTEM_TABLE_PREFIX = "_cdc_"
CHANGE_LOG = "_cdc_change_log"  # every change applied or skipped: schemas/lineage.avsc ChangeLogEntry
PROGRESS = "_cdc_progress"  # per source and batch, the last applied transaction: progress_record.avsc
QUARANTINE = "_cdc_quarantine"  # frames and changes not applied: quarantine_record.avsc
CHANGES = "_cdc_changes"  # decoded change records, when no apply stage is configured
SOURCE_SCHEMAS = "_cdc_source_schemas"  # each snapshot table's schema and position: source_schema_record.avsc
SCHEMA_HISTORY = "_cdc_schema_history"  # each version a DDL gave a source table: schema_version_record.avsc
SYSTEM_TABLES = (CHANGE_LOG, PROGRESS, QUARANTINE, CHANGES, SOURCE_SCHEMAS, SCHEMA_HISTORY)

# Lineage views over CHANGE_LOG (libs/reads/lineage_sql.py LINEAGE_VIEWS holds their SQL; README
# "Lineage in SQL"): beside the tables in a catalog schema, the same prefix.
LAST_CHANGE = "_cdc_last_change"  # per row, the change that last wrote or deleted it
STATEMENT_ROWS = "_cdc_statement_rows"  # every row each statement changed
TRANSACTION_CHANGES = "_cdc_transaction_changes"  # per transaction, table and statement: what it changed
LINEAGE_VIEWS = (STATEMENT_ROWS, LAST_CHANGE, TRANSACTION_CHANGES)

APP_ID = "cdc-replicate"  # the replication job's app id (progress rows carry it too)

# The two writers of QUARANTINE in one batch (pipelines/delta/quarantine.py).
STREAM_STAGES = "stream"  # frames the decode/assemble/rows stages rejected
APPLY_STAGE = "apply"  # changes the apply stage's replay rejected


def table_app_id(app_id: str, table: str) -> str:
    """The app id of the job's writes to one table (a target, CHANGE_LOG, PROGRESS)."""
    return f"{app_id}:{table}"


def schema_app_id(app_id: str, table: str) -> str:
    """The app id of a target's schema rewrite committed on its own, before its rows, by
    releases before issue #39 (the rewrite is now in the rows' commit): a batch such a release
    half wrote is not carried again (pipelines/apply/schema_changes.py)."""
    return f"{table_app_id(app_id, table)}:schema"


def changes_app_id(app_id: str) -> str:
    """The app id of the CHANGES appends."""
    return f"{app_id}:changes"


def quarantine_app_id(app_id: str, stage: str) -> str:
    """The app id of one stage's QUARANTINE appends (STREAM_STAGES or APPLY_STAGE)."""
    if stage == STREAM_STAGES:
        return table_app_id(app_id, QUARANTINE)
    if stage == APPLY_STAGE:
        return f"{table_app_id(app_id, QUARANTINE)}:{APPLY_STAGE}"
    raise ValueError(f"no quarantine writer stage {stage!r}")  # a programmer error

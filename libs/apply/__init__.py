"""The apply stage decided without Spark (issue #37 item 6; DESIGN.md "Change record", "Cost
follows the changes", "Tables stay healthy unattended"). pipelines/apply/ reads and writes what
these modules decide:

    plan.py          a batch's changes per table, the rows they touch, progress, quarantine rows
    table_work.py    one table's part of a batch: skipped, quarantined, or what to replay
    group_summary.py what the driver knows of the changes it does not collect (GroupSummary)
    partition.py     which tables the executors replay where their changes are, and by which key
    fold.py          a table's row changes folded per row identity in Arrow (fold_values.py: its values)
    superseded.py    which changes a table's snapshot or last truncate made void, as columns
    modes/           what each kind of target decides: current, soft delete, SCD2 (modes/mode.py)
    write_op.py      a MERGE source row's op: upsert or delete
    shadow_tables.py the working tables of online schema change tools, which are never written
    merge_scope.py   which stored rows a batch's MERGE may match
    ddl.py           what the followed targets make of the batch's DDL (names, fills, renames)
    change_log.py    the batch's _cdc_change_log rows, copied from the collected batch
    target_mirror.py a small table's rows kept between batches, for the touched-row reads
    maintenance.py   when a table is compacted or vacuumed
    stops.py         why the stage stops the job, in one line
    lag.py           the replication's lag, and what a batch applied, for the job's metrics

The change record the stage holds (Change, Op) and its commit order: libs/contracts/. The
per-change replay (WL#5092, WL#3303, lineage) is libs/replay/.
"""

"""The lineage views (libs/reads/lineage_sql.py view_select; README "Lineage in SQL") made where a
job's tables live: in its catalog schema beside them (persistent, what analysts query), or over
path tables as temporary views of one session (a notebook's). CREATE OR REPLACE: idempotent.

    lineage_views(spark, cfg.table_root)
    spark.sql("SELECT * FROM main.cdc._cdc_last_change WHERE `table` = 'orders'")
"""
from __future__ import annotations

from pyspark.sql import SparkSession

from libs.reads.lineage_sql import create_view_sql, view_select
from libs.contracts.sql_names import quote_identifier
from libs.tables.system_tables import CHANGE_LOG, LINEAGE_VIEWS
from libs.tables.table_location import TableRoot, as_root
from pipelines.apply.tables import change_log_schema, ensure_table


def lineage_views(spark: SparkSession, root: TableRoot | str) -> dict[str, str]:
    """Create or replace every lineage view over `root`'s change log (created empty when absent:
    a view is analysed when made); returns view name -> its SQL reference."""
    root = as_root(root)
    change_log = root.table(CHANGE_LOG)
    ensure_table(spark, change_log, change_log_schema())
    refs = {}
    for view in LINEAGE_VIEWS:
        ref = root.table(view).sql_ref() if root.catalog_schema is not None else quote_identifier(view)
        spark.sql(create_view_sql(ref, view_select(view, change_log.sql_ref()),
                                  temporary=root.catalog_schema is None))
        refs[view] = ref
    return refs

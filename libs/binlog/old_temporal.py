"""MariaDB 5.3-format temporal columns (corpus mariadb/temporal_old).

TIME/DATETIME/TIMESTAMP created with mysql56_temporal_format=OFF keep the pre-5.6 type codes
(11/12/7) and log *no* metadata in the Table_map, yet with fsp > 0 MariaDB stores them in its
"hires" packed form whose width depends on the fsp (temporal.py make_*_hires). The fsp is
therefore configuration: DecodeContext.old_temporal_fsp {(db, table): {ordinal: fsp}}, taken from
the table's SHOW CREATE TABLE. Without it a row image does not fit its event, and the error
names the columns that need an entry (old_temporal_hint).
"""
from __future__ import annotations

from libs.binlog.constants import ColumnType as T
from libs.binlog.context import DecodeContext
from libs.binlog.tablemap import TableMap


def configured_fsp(ctx: DecodeContext, tm: TableMap) -> dict[int, int]:
    """{0-based ordinal: fsp} configured for this table (empty when none)."""
    return ctx.old_temporal_fsp.get((tm.database, tm.table), {})


OLD_TEMPORAL_TYPES = {T.TIME: "TIME", T.DATETIME: "DATETIME", T.TIMESTAMP: "TIMESTAMP"}


def old_temporal_hint(tm: TableMap, ctx: DecodeContext) -> str:
    """The unconfigured pre-5.6 TIME/DATETIME/TIMESTAMP columns of a MariaDB table, as text for
    an error message ("" when there are none): their fsp is not in the Table_map, so when a row
    image does not fit, these are the columns that need DecodeContext.old_temporal_fsp."""
    if ctx.flavour != "mariadb":
        return ""
    configured = configured_fsp(ctx, tm)
    cols = [f"@{i + 1} ({OLD_TEMPORAL_TYPES[t]}, ordinal {i})" for i, t in enumerate(tm.column_types)
            if t in OLD_TEMPORAL_TYPES and i not in configured]
    if not cols:
        return ""
    return (f"; {tm.database}.{tm.table} has old-format (MariaDB 5.3) temporal column(s) "
            f"{', '.join(cols)} whose fractional-second precision is not in the Table_map: "
            f"configure DecodeContext.old_temporal_fsp[({tm.database!r}, {tm.table!r})]"
            f"[ordinal] = fsp")

"""The working tables of online schema change tools (issue #39 item 1), no Spark.

pt-online-schema-change copies `t` into `_t_new` (more leading underscores when that name is
taken), swaps with `RENAME TABLE t TO _t_old, _t_new TO t` and drops `_t_old`. gh-ost copies
into `_t_gho`, keeps its changelog in `_t_ghc`, swaps with `RENAME TABLE t TO _t_del, _t_gho TO t`
(`_t_<timestamp>_del` with --timestamp-old-table) and drops `_t_ghc` (and `_t_del` with
--ok-to-drop-table). Such a table only carries `t`'s rows to the swap: once it ends on the
server (renamed away or dropped) its rows are in `t`, and its Delta table is removed
(config.shadow_tables "remove"); one made and ended within one batch is never written.
"""
from __future__ import annotations

import re

_PT_OSC = re.compile(r"^_+(?P<t>.+)_(?:new|old)$", re.DOTALL)
_GH_OST = re.compile(r"^_(?P<t>.+?)(?:_\d{14})?_(?:gho|ghc|del)$", re.DOTALL)


def shadow_of(table: str) -> str | None:
    """The table a tool's working table belongs to, by the tool's naming ("_t_new" -> "t"), or
    None for any other name."""
    for pattern in (_GH_OST, _PT_OSC):
        match = pattern.match(table)
        if match and match["t"]:
            return match["t"]
    return None


def ends_as_shadow(table: str, tables_in_database: set[str], gone_at_end: bool) -> bool:
    """Is `table` a tool's working table that has ended by the batch's end: named after a
    table the job follows in the same database (`tables_in_database`, folded as the server
    compares names) and gone from the server (renamed away or dropped)?"""
    owner = shadow_of(table)
    if owner is None or not gone_at_end:
        return False
    folded = {name.lower() for name in tables_in_database}
    return owner.lower() in folded or owner.lstrip("_").lower() in folded

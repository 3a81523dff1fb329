"""What `_cdc_progress` records of one batch for consistent reads (issue #40;
schemas/progress_record.avsc `table_versions`, `gtid_positions`), pure.

Delta has no multi-table commit: the tables of one batch become visible one after another
(DESIGN.md "What a reader sees"). The batch's progress rows, appended after all its other writes,
name the Delta version each table the batch wrote is at once its write committed; reading each
table `VERSION AS OF` its version at one batch gives them all at one point of the source
(pipelines/reads/consistent_read.py, libs/reads/consistent_read_sql.py). A table the batch did not write
is, at that batch, at the version recorded by the last batch before it that wrote it.

Why columns of `_cdc_progress` and not a table of their own: the progress append is already
the batch's last write, idempotent per (app_id, batch_id); another table would add a commit to
every batch (an append is ~0.3 s, bench/append_marks.py) for what one map column says.

GTID positions are kept per GTID domain: the GTIDs of one domain (a MariaDB domain id, a MySQL
server uuid) are in binlog order, so the first batch whose position in domain D is at or past
seq N is the batch that applied GTID D-...-N, with everything before it in D.

    >>> gtid_domain_seq("0-1-42"), gtid_domain_seq("3E11FA47-71CA-11E1-9E33-C80AA9429562:23")
    (('0', 42), ('3e11fa47-71ca-11e1-9e33-c80aa9429562', 23))
"""
from __future__ import annotations

from typing import Iterable, Mapping



class ConsistentReadError(ValueError):
    """No consistent point answers the request (one line naming the tables, GTID or time)."""


def versions_of(tables: Iterable[str], found: Mapping[str, int], batch_id: int, asked: str) -> dict[str, int]:
    """`found` (delta_table -> version at batch `batch_id`) for every table asked, in the asked
    order; ConsistentReadError naming the tables no batch up to `batch_id` wrote."""
    tables = list(dict.fromkeys(tables))
    missing = [t for t in tables if t not in found]
    if missing:
        raise ConsistentReadError(f"{asked}: no batch up to {batch_id} wrote {', '.join(missing)} "
                                  f"(_cdc_batch_versions): not replicated by this job, or not yet")
    return {t: int(found[t]) for t in tables}

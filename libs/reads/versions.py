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

import re
from typing import Any, Iterable, Mapping

from libs.contracts.change import Change, Commit
from libs.replay import commit_order

_MARIADB_GTID = re.compile(r"^(\d+)-(\d+)-(\d+)$")
_MYSQL_GTID = re.compile(r"^([0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"
                         r"(?::[A-Za-z_][A-Za-z0-9_]*)?):(\d+)$")


class GtidFormatError(ValueError):
    """A text that is neither a MariaDB nor a MySQL GTID."""


def gtid_domain_seq(gtid: str) -> tuple[str, int]:
    """(domain, seq) of a GTID: MariaDB 'domain-server-seq' -> (domain, seq) (the server id does
    not order: a domain's seq grows across servers); MySQL 'uuid[:tag]:n' -> (lowercase
    uuid[:tag], n). GtidFormatError naming the forms otherwise."""
    text = gtid.strip() if isinstance(gtid, str) else ""
    maria = _MARIADB_GTID.match(text)
    if maria:
        return maria[1], int(maria[3])
    mysql = _MYSQL_GTID.match(text)
    if mysql:
        return mysql[1].lower(), int(mysql[2])
    raise GtidFormatError(f"not a GTID (MariaDB domain-server-seq or MySQL uuid:n): {gtid!r}")


def _domain(gtid: str | None) -> tuple[str, int] | None:
    if not gtid:
        return None
    try:
        return gtid_domain_seq(gtid)
    except GtidFormatError:
        return None  # a source's own identity of another form: recorded, not indexed by domain


def gtid_positions(changes: Iterable[Change],
                   more: Mapping[str, tuple[Change | Commit, int]] | None = None) -> dict[str, list[dict[str, Any]]]:
    """source -> per GTID domain the batch's last GTID in commit order (GtidPosition rows,
    sorted by domain), over `changes` (the driver's) and `more` (per source, the last change of
    the executors' part: libs.apply.plan.last_changes). A change without a GTID adds nothing."""
    last: dict[tuple[str, str], tuple[int, Change | Commit]] = {}
    for change in [*changes, *(c for c, _ in (more or {}).values())]:
        parsed = _domain(change.gtid)
        if parsed is None:
            continue
        key = (change.source, parsed[0])
        if key not in last or commit_order(change) > commit_order(last[key][1]):
            last[key] = (parsed[1], change)
    out: dict[str, list[dict[str, Any]]] = {}
    for (source, domain), (seq, change) in sorted(last.items()):
        out.setdefault(source, []).append({"gtid_domain": domain, "gtid_seq": seq, "gtid": change.gtid})
    return out


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

"""Where a change stands in its source's stream, and the one commit order every stage uses.

A binlog position orders by file in the servers' order (binlog_sort_key: .1000000 after .999999,
a later epoch's files after an earlier one's), then by offset; a change by its transaction's
commit position, then its order inside the transaction. A GTID names a transaction on every
server of a replication topology; per domain (MariaDB) or server uuid (MySQL) its sequence
number grows."""
from __future__ import annotations

import re
from dataclasses import dataclass
from functools import total_ordering
from typing import Any, Iterable, Mapping

from libs.binlog.file_names import binlog_sort_key
from libs.contracts.change import Change, Commit
from libs.settings.errors import quoted


def position_key(file: str, pos: int) -> tuple:
    """The one order of binlog positions: the file in the servers' order (binlog_sort_key), then
    the byte offset. Every other order here extends it."""
    return (*binlog_sort_key(file), pos)


@total_ordering
@dataclass(frozen=True)
class BinlogPosition:
    """A place in a source's binlog: a file (`EPOCH/NAME` after a server move) and a byte offset,
    ordered by position_key."""

    file: str
    pos: int

    def key(self) -> tuple:
        return position_key(self.file, self.pos)

    def __lt__(self, other: "BinlogPosition") -> bool:
        return self.key() < other.key()

    @staticmethod
    def parse(text: str) -> "BinlogPosition":
        """'mdb-bin.000003:1234' -> the position; ValueError naming the expected form."""
        file, sep, pos = str(text).rpartition(":")
        if not sep or not file or not pos.isdigit():
            raise ValueError(f"must be FILE:POS (e.g. mdb-bin.000003:1234), got {quoted(text)}")
        return BinlogPosition(file, int(pos))

    def __str__(self) -> str:
        return f"{self.file}:{self.pos}"


def commit_order(change: Change | Commit) -> tuple:
    """Sort key of change records of one source: commit position, then change_seq. commit_ts
    only orders records at one position: a snapshot run and the run that resumed it, taken
    later, can be consistent with the same position (libs/snapshot/changes.py); one binlog
    transaction ends at each position. Files in the servers' order (binlog_sort_key: .1000000
    after .999999, a later epoch's files after an earlier one's), not as text."""
    return commit_key(change.trx_file, change.trx_end_pos, change.commit_ts, change.change_seq)


def commit_key(trx_file: str, trx_end_pos: int, commit_ts, change_seq: int) -> tuple:
    """commit_order from the fields themselves (a whole column's transaction heads:
    libs/apply/superseded.py)."""
    return (*position_key(trx_file, trx_end_pos), commit_ts, change_seq)


def change_sort_key(change: Change) -> tuple:
    """Commit order inside one source (commit_order); several sources feeding one
    table are applied source by source (no cross-source order exists)."""
    return (change.source, *commit_order(change))


def sort_key_of(source: str, trx_file: str, trx_end_pos: int, commit_ts, change_seq: int) -> tuple:
    """change_sort_key from the fields themselves (a change Spark summed up, not collected)."""
    return (source, *commit_key(trx_file, trx_end_pos, commit_ts, change_seq))


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


def gtid_positions(changes: Iterable[Change], more: Mapping[str, tuple[Change | Commit, int]] | None = None
                   ) -> dict[str, list[dict[str, Any]]]:
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

"""What the driver knows of a batch's changes it does not collect (issue #21 goal 1; the
executors' part, pipelines/apply/batch_split.py, and the snapshot chunks that skip the rows stage,
pipelines/apply/snapshot_fusion.py): one small aggregate row per (source, database, table, op,
binlog file), each a GroupSummary."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from libs.contracts.change import Commit

# The fields of a group's last change that its group does not hold, in commit order inside one
# binlog file (the aggregate's max of a struct of them is the group's last change).
LAST_FIELDS = ("trx_end_pos", "commit_ts", "change_seq", "trx_id", "gtid")


@dataclass(frozen=True)
class GroupSummary:
    source: str
    database: str
    table: str
    op: str
    trx_file: str
    n: int  # changes (a snapshot chunk group: rows)
    oldest: int  # the oldest commit_ts, epoch micros
    last: Commit  # the last change in commit order (commit_ts in epoch micros)
    trx_ids: frozenset[str] = frozenset()  # a snapshot chunk group's transactions; else not kept

    @property
    def name(self) -> tuple[str, str]:
        """The source table, (database, table)."""
        return self.database, self.table

    @classmethod
    def of(cls, row: Mapping[str, Any]) -> "GroupSummary":
        """From an aggregate row: the fields above, `last` a mapping of LAST_FIELDS."""
        last = Commit(source=row["source"], trx_file=row["trx_file"],
                      **{f: row["last"][f] for f in LAST_FIELDS})
        return cls(row["source"], row["database"], row["table"], row["op"], row["trx_file"], row["n"],
                   row["oldest"], last, frozenset(row.get("trx_ids") or ()))

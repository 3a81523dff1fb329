"""RENAME TABLE of a followed table inside one micro-batch (issue #17 item 3), no Spark.

`RENAME TABLE a TO b` (or `ALTER TABLE a RENAME TO b`) moves a's rows to b: b's Delta table
starts as a copy of a's (pipelines/apply/schema_changes.py), and the row changes of a logged
before the rename, in this batch, apply to b as well (they are in the rows b took over). a's
Delta table stays as it was at the rename (as after a DROP TABLE). A name renamed twice in one
batch (a swap through a temporary name) is not followed: RenameChainError names the DDL.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from libs.apply_plan import change_sort_key
from libs.schema_history import statements as S

Changes = Mapping[tuple[str, str], Sequence[Mapping[str, Any]]]


class RenameChainError(ValueError):
    pass


@dataclass(frozen=True)
class TableRename:
    old: S.TableName
    new: S.TableName
    earlier: tuple[Mapping[str, Any], ...]  # old's changes logged before the rename (DDL too), commit order
    change: Mapping[str, Any]  # the DDL's change record

    @property
    def inherited(self) -> tuple[Mapping[str, Any], ...]:
        """The row changes the new name takes over (the DDL stays the old name's)."""
        return tuple(c for c in self.earlier if c["op"] != "ddl")


def table_renames(groups: Changes) -> dict[tuple[str, str], TableRename]:
    """By new (database, table): each table renamed in the batch (groups: group_changes')."""
    out: dict[tuple[str, str], TableRename] = {}
    seen: dict[S.TableName, Mapping[str, Any]] = {}
    ddl = sorted((c for group in groups.values() for c in group if c["op"] == "ddl"), key=change_sort_key)
    for change in ddl:
        for old, new in _pairs(change["statement"] or "", change["database"]):
            for name in (old, new):
                if name in seen:
                    first = seen[name]
                    raise RenameChainError(
                        f"{name} is renamed twice in one batch ({first['binlog_file']}:{first['binlog_pos']}, "
                        f"{change['binlog_file']}:{change['binlog_pos']}): a swap through a temporary name "
                        f"is not followed")
                seen[name] = change
            before = change_sort_key(change)
            earlier = tuple(c for c in groups.get((old.database, old.table), ()) if change_sort_key(c) < before)
            out[(new.database, new.table)] = TableRename(old, new, earlier, change)
    return out


def _pairs(statement: str, default_db: str) -> list[tuple[S.TableName, S.TableName]]:
    try:
        changes = S.parse(statement, default_db)
    except S.DdlParseError:
        return []
    pairs = []
    for change in changes:
        if isinstance(change, S.RenameTables):
            pairs += change.pairs
        elif isinstance(change, S.AlterTable) and change.renamed_to not in (None, change.name):
            pairs.append((change.name, change.renamed_to))
    return pairs

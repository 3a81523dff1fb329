"""RENAME TABLE of a followed table inside one micro-batch (issue #17 item 3), no Spark.

`RENAME TABLE a TO b` (or `ALTER TABLE a RENAME TO b`) moves a's rows to b: b's Delta table
starts as a copy of a's (pipelines/apply/schema_changes.py), and the row changes of a logged
before the rename, in this batch, apply to b as well (they are in the rows b took over). a's
Delta table stays as it was at the rename (as after a DROP TABLE).

A name renamed away and then renamed to is followed: the swap online schema-change tools end
with (gh-ost, pt-online-schema-change: `RENAME TABLE t TO _t_old, _t_new TO t`). t's rows before
the swap go to _t_old, and t starts again as a copy of _t_new. A name renamed to and then renamed
away in the same batch (a chain a -> b -> c, or a swap of two tables through a temporary name)
is not followed: RenameChainError names both DDL.
"""
from __future__ import annotations

from operator import attrgetter

from dataclasses import dataclass
from typing import Callable, Mapping, Sequence

from libs.contracts.change import Change, Op
from libs.schema_history import statements as S

Changes = Mapping[tuple[str, str], Sequence[Change]]


class RenameChainError(ValueError):
    pass


@dataclass(frozen=True)
class TableRename:
    old: S.TableName
    new: S.TableName
    earlier: tuple[Change, ...]  # old's changes logged before the rename (DDL too), commit order
    change: Change  # the DDL's change record

    @property
    def inherited(self) -> tuple[Change, ...]:
        """The row changes the new name takes over (the DDL stays the old name's)."""
        return tuple(c for c in self.earlier if c.op != Op.DDL)


def table_renames(groups: Changes, server_version: Callable[[Change], str | None] = lambda change: None
                  ) -> dict[tuple[str, str], TableRename]:
    """By new (database, table): each table renamed in the batch (groups: group_changes').
    `server_version(ddl change)`: the source server's version its statement was read with
    (SchemaHistory.server_version), for its executable comments."""
    out: dict[tuple[str, str], TableRename] = {}
    arrived: dict[S.TableName, Change] = {}  # renamed to in the batch, by the DDL
    ddl = sorted((c for group in groups.values() for c in group if c.op == Op.DDL),
                 key=attrgetter("source_order"))
    for change in ddl:
        for old, new in _pairs(change.statement or "", change.database, server_version(change)):
            if old in arrived or new in arrived:
                first = arrived.get(old) or arrived[new]
                raise RenameChainError(
                    f"{old if old in arrived else new} is renamed to and then renamed again in one batch "
                    f"({first.binlog_file}:{first.binlog_pos}, {change.binlog_file}:{change.binlog_pos}): "
                    f"a chain of renames is not followed")
            arrived[new] = change
            before = change.source_order
            earlier = tuple(c for c in groups.get((old.database, old.table), ())
                            if c.source_order < before)
            out[(new.database, new.table)] = TableRename(old, new, earlier, change)
    return out


def _pairs(statement: str, default_db: str,
           server_version: str | None) -> list[tuple[S.TableName, S.TableName]]:
    try:
        changes = S.parse(statement, default_db, server_version)
    except S.DdlParseError:
        return []
    pairs = []
    for change in changes:
        if isinstance(change, S.RenameTables):
            pairs += change.pairs
        elif isinstance(change, S.AlterTable) and change.renamed_to not in (None, change.name):
            pairs.append((change.name, change.renamed_to))
    return pairs

"""One source table's part of a batch, decided without reading anything (issue #55 item 4): the
applier (pipelines/apply/applier.py) reads what the decision needs before it (the targets this
batch already committed: a retried batch) and replays and writes after it.

The decision, in this order (each outcome counted in the table's tally):
  * a table the job does not select (JobConfig.tables): `not_selected`, nothing replayed;
  * its changes already in its snapshot's rows (libs/snapshot/protocol.py): those are
    `superseded_by_snapshot`, the rest replayed (none left: nothing);
  * no target declared or derived: each change logged, a row change quarantined or refused by
    the undeclared-tables policy (libs/apply/plan.py undeclared);
  * a target this batch already committed: `already_applied`, nothing replayed (exactly once);
  * else the target, its location and the changes to replay: the group with each TRUNCATE TABLE
    at its place, or, for a target that follows the source's DDL across a rename or DDL in the
    batch, the changes carried to the batch's end schema (libs/apply/ddl.py DdlPlan.across_ddl).
    A table renamed in the batch with no change before or after the rename there has no changes
    to replay: its work is the carry alone (the new name's Delta table a copy of the old one's).
"""
from __future__ import annotations

import dataclasses
from collections import Counter
from typing import Callable, Collection, Mapping, Sequence

from libs.apply.ddl import DdlPlan, Evolve
from libs.apply.plan import undeclared, with_ddl_truncates
from libs.contracts.change import Change, Op
from libs.contracts.table_names import table_key
from libs.schema_history.table_renames import TableRename
from libs.tables.table_location import TableLocation
from libs.targets import TargetCatalog
from libs.targets.model import Target


@dataclasses.dataclass
class TableWork:
    """One table's part of a batch, before its replay runs."""

    tally: Counter
    logged: list  # its changes the change log keeps under this table, in order
    undeclared: list | None = None  # no target: (entry, error) per change
    target: Target | None = None  # else what the replay replays: the target, its path, the changes
    path: TableLocation | None = None
    changes: list | None = None
    evolve: Evolve | None = None  # carries a followed target to the batch's end schema first


@dataclasses.dataclass(frozen=True)
class BatchTables:
    """What the table work of one batch knows, all of it in memory."""

    catalog: TargetCatalog
    ddl: DdlPlan
    selects: Callable[[str, str], bool]  # JobConfig.tables.selects
    since_snapshot: Callable[[Sequence[Change], TableRename | None], list[Change]]
    located: Callable[[Target], tuple[Target, TableLocation]]  # the target in force and where it lives
    undeclared_policy: str  # JobConfig.undeclared_tables
    committed: Collection[TableLocation] = ()  # the targets this batch committed already (a retry)


def table_work(tables: BatchTables, name: tuple[str, str], groups: Mapping[tuple[str, str], list],
               renames: Mapping[tuple[str, str], TableRename],
               counts: dict[str, Counter]) -> TableWork | None:
    """The part of the batch of source table `name` (module docstring), counted in `counts`;
    None: nothing of it to replay."""
    database, table = name
    rename = renames.get(name)
    group = [*(rename.inherited if rename else ()), *groups.get(name, ())]
    tally = counts.setdefault(table_key(database, table), Counter(c.op for c in group))
    if not tables.selects(database, table):
        tally["not_selected"] = len(group)
        return None
    current = tables.since_snapshot(groups.get(name, ()), rename)
    if len(current) < len(group):
        tally["superseded_by_snapshot"] = len(group) - len(current)
        group = current
        if not group:
            return None
    declared = tables.catalog.get(database, table)
    if declared is None:
        entries = [undeclared(change, tables.undeclared_policy) for change in group]
        tally["quarantined"] += sum(error is not None for _, error in entries)
        return TableWork(tally, group, undeclared=entries)
    target, path = tables.located(declared)
    if path in tables.committed:
        tally["already_applied"] = 1
        return None
    # A renamed table's inherited changes lead the group; the change log keeps them
    # under the table that logged them (the rest as logged: `own`).
    inherited = {id(c) for c in rename.inherited} & {id(c) for c in group} if rename else set()
    own = [c for c in group if id(c) not in inherited]
    replayed, evolve = with_ddl_truncates(group, server_version=tables.ddl.server_version), None
    if tables.ddl.follows(target) and (rename or any(c.op in (Op.DDL, Op.TRUNCATE) for c in group)):
        replayed, evolve = tables.ddl.across_ddl(tables.catalog, database, table, own, rename, inherited)
    return TableWork(tally, own, target=target, path=path, changes=replayed, evolve=evolve)

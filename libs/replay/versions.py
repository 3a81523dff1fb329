"""SCD2 history targets (targets YAML `history: scd2`): the versions a batch's transactions made.

    replay_versions(target, current_rows, changes, *, mode) -> VersionedResult
    history_rows(result) -> HistoryRows       # what the MERGE of the batch closes and inserts

A version is a row as ONE committed source transaction left it (issue #40 item 1): the replay
(engine.py) runs the batch's changes in commit order as always, and after the last change of
each transaction every row that transaction wrote is looked at once. Several changes of one row
in one transaction give one version (what the transaction committed); a transaction that
wrote a row gives it a version even when it left the values as they were (changed and changed
back: its `_lineage` is the transaction's, as a current target's row's is). The row's identity
is `_row_id`, which key-changing updates keep.
A DELETE closes the row's open version and marks it `_deleted` (no tombstone version), so the
versions of a row never overlap and a row has no open version once deleted; a TRUNCATE TABLE
closes every open version of the table the same way (`truncated`: the batch's first one, for
the stored open versions the batch did not read). Values are the replay's full rows: MINIMAL
row images give whole versions too.

`current_rows` are the target's open versions (`_is_current`): the replay's state is the table
as the source holds it now, as for a `history: current` target.
"""
from __future__ import annotations

from dataclasses import dataclass, field, fields
from itertools import groupby
from typing import Any, Iterable, Mapping, NamedTuple, Sequence

import datetime as dt

from libs.contracts.change import Change, Op
from libs.replay.engine import STRICT, IDEMPOTENT, ReplayResult, _Replayer, result_of
from libs.replay.lineage import LINEAGE_COLUMN, ROW_ID_COLUMN, Lineage, to_utc_naive
from libs.replay.table_state import Row, TableState
from libs.targets.model import Target

# The columns an SCD2 target adds, declared once in schemas/history_columns.avsc.
VALID_FROM, VALID_TO = "_valid_from", "_valid_to"
FROM_GTID, TO_GTID = "_from_gtid", "_to_gtid"
FROM_POS, TO_POS = "_from_pos", "_to_pos"
IS_CURRENT, DELETED = "_is_current", "_deleted"
HISTORY_COLUMNS = (VALID_FROM, VALID_TO, FROM_GTID, TO_GTID, FROM_POS, TO_POS, IS_CURRENT, DELETED)
CLOSING_COLUMNS = (VALID_TO, TO_GTID, TO_POS, IS_CURRENT, DELETED)  # what closing a version sets


class Mark(NamedTuple):
    """Where a transaction committed: the opening or the closing of a version."""

    commit_ts: dt.datetime  # naive UTC
    gtid: str | None
    pos: str  # trx_file:trx_end_pos, the end of its commit event

    @classmethod
    def of_change(cls, change: Change) -> "Mark":
        return cls(to_utc_naive(change.commit_ts), change.gtid,
                   f"{change.trx_file}:{int(change.trx_end_pos)}")

    def opening(self) -> dict[str, Any]:
        return {VALID_FROM: self.commit_ts, FROM_GTID: self.gtid, FROM_POS: self.pos}

    def closing(self, deleted: bool) -> dict[str, Any]:
        return {VALID_TO: self.commit_ts, TO_GTID: self.gtid, TO_POS: self.pos, IS_CURRENT: False,
                DELETED: deleted}


@dataclass(frozen=True)
class Version:
    """A row as one transaction committed it; `values` None: the transaction deleted it."""

    row_id: str
    values: Mapping[str, Any] | None
    lineage: Lineage  # the transaction's last change of the row
    mark: Mark
    stored: bool  # the row's version before this one is a stored open version (in current_rows)


@dataclass(frozen=True)
class VersionedResult(ReplayResult):
    versions: tuple[Version, ...] = ()  # in commit order
    truncated: Mark | None = None  # the batch's first TRUNCATE TABLE (or snapshot start)


class HistoryRows(NamedTuple):
    """One batch's write of an SCD2 target (pipelines/apply/modes/scd2.py)."""

    closings: list[dict[str, Any]]  # _row_id + CLOSING_COLUMNS, per stored open version the batch closes
    openings: list[dict[str, Any]]  # whole version rows: target columns, _row_id, _lineage, HISTORY_COLUMNS
    truncated: Mark | None  # closes every other stored open version


@dataclass
class _TouchedState(TableState):
    """A TableState that remembers which rows changes wrote since it was last asked."""

    touched: dict[int, Row] = field(default_factory=dict)

    def add(self, row_id: str, values: dict[str, Any], *, existed: bool = False,
            lineage: Lineage | None = None) -> Row:
        row = super().add(row_id, values, existed=existed, lineage=lineage)
        if not existed:
            self.touched[id(row)] = row
        return row

    def update(self, row: Row, values: dict[str, Any], lineage: Lineage) -> None:
        super().update(row, values, lineage)
        self.touched[id(row)] = row

    def delete(self, row: Row, lineage: Lineage) -> None:
        super().delete(row, lineage)
        self.touched[id(row)] = row

    def take_touched(self) -> list[Row]:
        rows, self.touched = list(self.touched.values()), {}
        return rows


def transactions(changes: Sequence[Change]) -> Iterable[list[Change]]:
    """The changes (commit order) cut into their transactions: runs of one (source, trx_id)."""
    for _, run in groupby(changes, key=lambda c: (c.source, c.trx_id)):
        yield list(run)


def replay_versions(target: Target, current_rows: Iterable[Mapping[str, Any]],
                    changes: Sequence[Change], *, mode: str = STRICT) -> VersionedResult:
    """engine.replay, plus the versions its transactions made (module docstring)."""
    if mode not in (STRICT, IDEMPOTENT):
        raise ValueError(f"mode must be {STRICT!r} or {IDEMPOTENT!r}, got {mode!r}")
    state = _TouchedState.load(target, ((r[ROW_ID_COLUMN], r) for r in current_rows))
    stored = frozenset(row.row_id for row in state.rows)
    alive = set(stored)  # the rows with an open version
    replayer = _Replayer(target, state, mode)
    versions: list[Version] = []
    truncated = None
    for trx in transactions(changes):
        for change in trx:
            replayer.run(change)
            if truncated is None and change.op == Op.TRUNCATE:
                truncated = Mark.of_change(change)
        mark = Mark.of_change(trx[-1])
        for row in state.take_touched():
            if row.alive:
                versions.append(Version(row.row_id, dict(row.values), row.lineage, mark,
                                        row.row_id in stored))
                alive.add(row.row_id)
            elif row.row_id in alive:
                versions.append(Version(row.row_id, None, row.lineage, mark, row.row_id in stored))
                alive.discard(row.row_id)
    base = result_of(replayer)
    return VersionedResult(**{f.name: getattr(base, f.name) for f in fields(ReplayResult)},
                           versions=tuple(versions), truncated=truncated)


def history_rows(result: VersionedResult) -> HistoryRows:
    """The stored open versions the batch closes (each by its row's first version of the batch)
    and the versions it opens, chained: each closed by the row's next version of the batch."""
    closings, openings = [], []
    by_row: dict[str, list[Version]] = {}
    for version in result.versions:
        by_row.setdefault(version.row_id, []).append(version)
    for row_id, chain in by_row.items():
        if chain[0].stored:
            closings.append({ROW_ID_COLUMN: row_id, **chain[0].mark.closing(chain[0].values is None)})
        for version, after in zip(chain, [*chain[1:], None]):
            if version.values is None:
                continue
            closing = (after.mark.closing(after.values is None) if after is not None else
                       {VALID_TO: None, TO_GTID: None, TO_POS: None, IS_CURRENT: True, DELETED: False})
            openings.append({**version.values, ROW_ID_COLUMN: row_id,
                             LINEAGE_COLUMN: version.lineage.to_dict(), **version.mark.opening(), **closing})
    return HistoryRows(closings, openings, result.truncated)

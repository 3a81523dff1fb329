"""One table's part of a batch (libs/apply/table_work.py): each outcome of its docstring, as a table,
from in-memory inputs only (nothing read: the applier reads `committed` before the call)."""
from __future__ import annotations

from collections import Counter

import pytest

from libs.apply.plan import UNDECLARED_FAIL, UNDECLARED_QUARANTINE, UndeclaredTableError
from libs.apply.table_work import BatchTables, table_work
from libs.contracts.change import Op
from libs.tables.table_location import TableLocation
from libs.targets.model import Target
from tests.change_builders import change_of

TARGET = Target(database="d", table="t", delta_table="d_t", columns=(), primary_key=("id",))
PATH = TableLocation(path="/delta/d_t")


class _Catalog:
    def __init__(self, targets):
        self.targets = targets

    def get(self, database, table):
        return self.targets.get((database, table))


class _Ddl:
    """A DdlPlan that follows no target (its across_ddl has its own tests)."""

    server_version = staticmethod(lambda change: None)

    @staticmethod
    def follows(target):
        return False


def _tables(*, selected=True, declared=True, superseded=0, committed=(), policy=UNDECLARED_QUARANTINE):
    since = lambda own, rename: list(own)[superseded:]  # noqa: E731
    return BatchTables(_Catalog({("d", "t"): TARGET} if declared else {}), _Ddl(),
                       lambda database, table: selected, since, lambda target: (target, PATH), policy,
                       committed)


def _changes():
    return [change_of("insert", change_seq=0), change_of("ddl", statement="TRUNCATE TABLE t", change_seq=1),
            change_of("update", change_seq=2)]


@pytest.mark.parametrize("inputs, outcome, tally", [
    (dict(selected=False), None, {"not_selected": 3}),
    (dict(superseded=3), None, {"superseded_by_snapshot": 3}),
    (dict(committed={PATH}), None, {"already_applied": 1}),
    (dict(superseded=1), "replayed", {"superseded_by_snapshot": 1}),
    (dict(), "replayed", {}),
    (dict(declared=False), "undeclared", {"quarantined": 2}),  # the DDL is only logged
])
def test_each_outcome_and_its_count(inputs, outcome, tally):
    counts: dict[str, Counter] = {}
    work = table_work(_tables(**inputs), ("d", "t"), {("d", "t"): _changes()}, {}, counts)
    got = (None if work is None else "undeclared" if work.undeclared is not None else "replayed")
    assert got == outcome
    ops = Counter({Op.INSERT: 1, Op.DDL: 1, Op.UPDATE: 1})
    assert counts == {"d.t": ops + Counter(tally)}


def test_the_replayed_changes_have_the_truncate_at_its_place():
    work = table_work(_tables(superseded=0), ("d", "t"), {("d", "t"): _changes()}, {}, {})
    assert (work.target, work.path, work.evolve) == (TARGET, PATH, None)
    assert [c.op for c in work.changes] == [Op.INSERT, Op.TRUNCATE, Op.UPDATE]
    assert [c.op for c in work.logged] == [Op.INSERT, Op.DDL, Op.UPDATE]  # logged as they came


def test_an_undeclared_row_change_fails_under_the_default_policy():
    with pytest.raises(UndeclaredTableError):
        table_work(_tables(declared=False, policy=UNDECLARED_FAIL), ("d", "t"),
                   {("d", "t"): _changes()}, {}, {})

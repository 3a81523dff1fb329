"""libs/apply/group_summary.py: a batch's aggregate row as a GroupSummary, its last change a
Commit in the commit order every stage uses."""
from __future__ import annotations

from libs.apply.group_summary import LAST_FIELDS, GroupSummary
from libs.contracts.change import Commit


def _row(**last):
    return {"source": "s1", "database": "d", "table": "t", "op": "insert", "trx_file": "b.000002", "n": 3,
            "oldest": 10, "last": {"trx_end_pos": 900, "commit_ts": 20, "change_seq": 2, "trx_id": "0-1-5",
                                   "gtid": "0-1-5", **last}}


def test_an_aggregate_row_reads_as_its_fields():
    group = GroupSummary.of(_row())
    assert (group.name, group.op, group.n, group.oldest, group.trx_ids) == (("d", "t"), "insert", 3, 10,
                                                                           frozenset())
    assert group.last == Commit("s1", "0-1-5", "0-1-5", "b.000002", 900, 20, 2)


def test_the_last_fields_and_the_group_are_a_commit_s_fields():
    assert set(LAST_FIELDS) | {"source", "trx_file"} == set(Commit._fields)


def test_groups_order_by_their_last_change_as_changes_do():
    early = GroupSummary.of(_row(trx_end_pos=900))
    late = GroupSummary.of(_row(trx_end_pos=1200, change_seq=0))
    assert early.last.order < late.last.order
    assert GroupSummary.of({**_row(), "trx_ids": ["a", "b"]}).trx_ids == {"a", "b"}

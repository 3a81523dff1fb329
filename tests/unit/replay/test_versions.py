"""SCD2 versions (libs/replay/versions.py): one version per (row, transaction), as a table.

Each case: the stored open versions (id, name, qty; row ids r0, r1, ...), the batch's
transactions (lists of (op, before, after) on source test.t; transaction n commits at GTID
0-1-n), and what the batch's MERGE gets: the stored versions it closes (row, closing trx,
deleted) and the versions it opens (row, values, opening trx, closing trx or None, deleted)."""
import pytest

from libs.contracts.avro_schemas import field_names
from libs.replay import ROW_ID_COLUMN
from libs.replay.versions import (
    DELETED, FROM_GTID, FROM_POS, HISTORY_COLUMNS, IS_CURRENT, TO_GTID, TO_POS, VALID_FROM, VALID_TO,
    history_rows, replay_versions,
)
from replay_builders import Source, rows, target_from_ddl

PK = "CREATE TABLE test.t (id int NOT NULL, name varchar(10), qty int, PRIMARY KEY (id))"
NEW = "new"  # the row id of the batch's first insert, resolved below

CASES = [
    ("an insert opens a version",
     [], [[("insert", None, {"id": 1, "name": "a", "qty": 1})]],
     [], [(NEW, (1, "a", 1), 1, None, False)]),
    ("several changes of one row in one transaction: one version, the committed state",
     [], [[("insert", None, {"id": 1, "name": "a", "qty": 1}),
           ("update", {"id": 1}, {"qty": 2}),
           ("update", {"id": 1}, {"name": "b"})]],
     [], [(NEW, (1, "b", 2), 1, None, False)]),
    ("each transaction closes the open version: the stored one, then the batch's",
     [(1, "a", 1)], [[("update", {"id": 1}, {"qty": 2})], [("update", {"id": 1}, {"qty": 3})]],
     [("r0", 1, False)], [("r0", (1, "a", 2), 1, 2, False), ("r0", (1, "a", 3), 2, None, False)]),
    ("MINIMAL images: the version is the whole row",
     [(1, "a", 1)], [[("update", {"id": 1}, {"qty": 9})]],
     [("r0", 1, False)], [("r0", (1, "a", 9), 1, None, False)]),
    ("a key-changing update keeps the row's identity",
     [(1, "a", 1)], [[("update", {"id": 1}, {"id": 5})]],
     [("r0", 1, False)], [("r0", (5, "a", 1), 1, None, False)]),
    ("a delete closes the stored version as deleted, no tombstone",
     [(1, "a", 1), (2, "b", 2)], [[("delete", {"id": 1}, None)]],
     [("r0", 1, True)], []),
    ("a row inserted and deleted in one transaction was never committed",
     [], [[("insert", None, {"id": 1, "name": "a", "qty": 1}), ("delete", {"id": 1}, None)]],
     [], []),
    ("a row changed and changed back in one transaction: the transaction wrote it, a version",
     [(1, "a", 1)], [[("update", {"id": 1}, {"qty": 2}), ("update", {"id": 1}, {"qty": 1})]],
     [("r0", 1, False)], [("r0", (1, "a", 1), 1, None, False)]),
    ("the batch's version deleted by a later transaction is closed as deleted",
     [], [[("insert", None, {"id": 1, "name": "a", "qty": 1})], [("delete", {"id": 1}, None)]],
     [], [(NEW, (1, "a", 1), 1, 2, True)]),
    ("a TRUNCATE closes the rows it empties; the row inserted after it opens anew",
     [(1, "a", 1)], [[("update", {"id": 1}, {"qty": 2})], [("truncate", None, None)],
                     [("insert", None, {"id": 1, "name": "z", "qty": 0})]],
     [("r0", 1, False)], [("r0", (1, "a", 2), 1, 2, True), (NEW, (1, "z", 0), 3, None, False)]),
]


def _batch(src: Source, transactions):
    out = []
    for n, trx in enumerate(transactions, start=1):
        for seq, (op, before, after) in enumerate(trx):
            out.append(src.change(op, before, after, seq=seq, trx=n))
    return out


@pytest.mark.parametrize("current, transactions, closings, openings",
                         [case[1:] for case in CASES], ids=[case[0] for case in CASES])
def test_versions(current, transactions, closings, openings):
    target = target_from_ddl(PK)
    src = Source("test", "t", ["id", "name", "qty"])
    result = replay_versions(target, rows(target, *current), _batch(src, transactions))
    out = history_rows(result)
    inserted = {u.row_id for u in result.upserts} | {v.row_id for v in result.versions}
    new = sorted(inserted - {f"r{i}" for i in range(len(current))})
    name = lambda row_id: NEW if row_id in new else row_id  # noqa: E731
    gtid = lambda n: None if n is None else f"0-1-{n}"  # noqa: E731
    pos = lambda n: None if n is None else f"mdb-bin.000002:{1000 + n * 100}"  # noqa: E731
    assert [(name(c[ROW_ID_COLUMN]), c[TO_GTID], c[TO_POS], c[DELETED], c[IS_CURRENT])
            for c in out.closings] == [(row, gtid(n), pos(n), deleted, False) for row, n, deleted in closings]
    assert [(name(o[ROW_ID_COLUMN]), tuple(o[c] for c in target.column_names), o[FROM_GTID], o[FROM_POS],
             o[TO_GTID], o[TO_POS], o[IS_CURRENT], o[DELETED]) for o in out.openings] == [
        (row, values, gtid(n), pos(n), gtid(m), pos(m), m is None, deleted)
        for row, values, n, m, deleted in openings]
    for opening in out.openings:  # commit times of the transactions (Source: trx n at COMMIT_TS + n s)
        assert opening[VALID_FROM] < (opening[VALID_TO] or opening[VALID_FROM].replace(year=9999))


def test_versions_chain_commit_times_and_the_truncate_mark():
    target = target_from_ddl(PK)
    src = Source("test", "t", ["id", "name", "qty"])
    changes = _batch(src, [[("update", {"id": 1}, {"qty": 2})], [("truncate", None, None)]])
    out = history_rows(replay_versions(target, rows(target, (1, "a", 1), (2, "b", 2)), changes))
    first, truncate = (c.commit_ts.replace(tzinfo=None) for c in changes)
    assert out.closings[0][VALID_TO] == first
    assert [(o[VALID_FROM], o[VALID_TO]) for o in out.openings] == [(first, truncate)]
    assert out.truncated.commit_ts == truncate and out.truncated.gtid == "0-1-2"


def test_the_current_versions_are_the_replay_of_a_current_target():
    target = target_from_ddl(PK)
    src = Source("test", "t", ["id", "name", "qty"])
    changes = _batch(src, [[("update", {"id": 1}, {"qty": 2}),
                            ("insert", None, {"id": 3, "name": "c", "qty": 3})],
                           [("update", {"id": 3}, {"id": 4}), ("delete", {"id": 2}, None)]])
    result = replay_versions(target, rows(target, (1, "a", 1), (2, "b", 2)), changes)
    current = {o[ROW_ID_COLUMN]: {c: o[c] for c in target.column_names}
               for o in history_rows(result).openings if o[IS_CURRENT]}
    assert current == {u.row_id: dict(u.values) for u in result.upserts}


def test_the_history_columns_are_the_declared_ones():
    assert HISTORY_COLUMNS == field_names("history_columns")

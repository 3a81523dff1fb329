"""libs/apply/modes/soft_delete.py: what a replayed batch writes to a `delete: soft` target, as a
table of cases run through the real replay (libs/replay), against the hard target's writes.
Also the mirror's part (libs/apply/target_mirror.py) and the setting's validation."""
import dataclasses

import pytest

from libs.apply.modes.select import mode_of
from libs.apply.modes.soft_delete import DELETED, first_truncate, live
from libs.apply.plan import Lookups
from libs.config.job import ConfigError, JobConfig, TablesSettings
from libs.replay import LINEAGE_COLUMN, ROW_ID_COLUMN, Lineage, replay
from libs.apply.target_mirror import TargetMirror
from libs.targets import TargetConfigError, build_catalog, parse_ddl
from tests.change_builders import Source

HARD = build_catalog(None, "t.yaml", parse_ddl("CREATE TABLE d.t (id INT NOT NULL, v INT, PRIMARY KEY (id))",
                                               "t.sql")).get("d", "t")
SOFT = dataclasses.replace(HARD, delete="soft")
T = Source("d", "t", ["id", "v"])
STORED = [{"id": 1, "v": 10, ROW_ID_COLUMN: "r1"}, {"id": 2, "v": 20, ROW_ID_COLUMN: "r2"}]


def _by_id(rows):
    return {r.get("id", r[ROW_ID_COLUMN]): r for r in rows}


def _position(lineage: dict):
    return (True, lineage["commit_ts"], lineage["gtid"], lineage["binlog_file"], lineage["binlog_pos"])


def _soft(row):
    return (row[DELETED],
            *(row[c] for c in ("_deleted_at", "_deleted_gtid", "_deleted_file", "_deleted_pos")))


# (case, changes) -> for the soft target: {id or row id: ("live" | "flag" | "tombstone", v,
# index of the deleting change)}; what the hard target writes is asked of it, not written here.
CASES = [
    ("a stored row only deleted: its flags only", lambda: [T.delete({"id": 1})],
     {"r1": ("flag", None, 0)}),
    ("updated then deleted: its last values, flagged",
     lambda: [T.update({"id": 1}, {"v": 11}), T.delete({"id": 1})],
     {1: ("tombstone", 11, 1)}),
    ("inserted and deleted in the batch: kept, flagged",
     lambda: [T.insert({"id": 3, "v": 30}), T.delete({"id": 3})],
     {3: ("tombstone", 30, 1)}),
    ("deleted then inserted again: a new live row beside the flagged one",
     lambda: [T.delete({"id": 2}), T.insert({"id": 2, "v": 21})],
     {"r2": ("flag", None, 0), 2: ("live", 21, None)}),
    ("an update: live columns", lambda: [T.update({"id": 2}, {"v": 22})], {2: ("live", 22, None)}),
]


@pytest.mark.parametrize("case, changes, expected", CASES, ids=[c[0] for c in CASES])
def test_soft_writes_against_the_hard_ones(case, changes, expected):
    batch = changes()
    hard_upserts, hard_deletes = mode_of(HARD).table_writes(HARD, replay(HARD, STORED, batch))
    upserts, deletes = mode_of(SOFT).table_writes(SOFT, replay(SOFT, STORED, batch))
    got = {}
    for row in upserts:
        kind = "tombstone" if row[DELETED] else "live"
        got[row["id"]] = (kind, row["v"])
        if kind == "live":
            assert _soft(row) == (False, None, None, None, None)
    for row in deletes:
        got[row[ROW_ID_COLUMN]] = ("flag", None)
        assert set(row) == {ROW_ID_COLUMN, DELETED, "_deleted_at",
                            "_deleted_gtid", "_deleted_file", "_deleted_pos"}
    assert got == {k: v[:2] for k, v in expected.items()}
    for key, (kind, _, deleter) in expected.items():
        if deleter is None:
            continue
        row = _by_id(upserts + deletes)[key]
        assert _soft(row) == _position(Lineage.of_change(batch[deleter]).to_dict())
        if kind == "tombstone":  # the row's `_lineage`: the change that last wrote its values
            assert row[LINEAGE_COLUMN] == Lineage.of_change(batch[deleter - 1]).to_dict()
    # the live rows are the hard target's upserts; every stored row it deletes is flagged here
    assert [{k: v for k, v in u.items() if not k.startswith("_deleted")} for u in upserts if not u[DELETED]] \
        == hard_upserts
    assert {d[ROW_ID_COLUMN] for d in hard_deletes} == (
        {d[ROW_ID_COLUMN] for d in deletes}
        | {u[ROW_ID_COLUMN] for u in upserts if u[DELETED]} & {"r1", "r2"})


def test_a_hard_target_writes_as_before():
    batch = [T.insert({"id": 3, "v": 30}), T.delete({"id": 3}), T.delete({"id": 1})]
    upserts, deletes = mode_of(HARD).table_writes(HARD, replay(HARD, STORED, batch))
    assert upserts == [] and [set(d) for d in deletes] == [{ROW_ID_COLUMN, LINEAGE_COLUMN}]


def test_the_first_truncate_flags_the_rows_the_batch_did_not_read():
    truncate = [T.change("truncate"), T.change("truncate")]
    assert first_truncate([T.insert({"id": 1}), *truncate]) == dict(zip(
        (DELETED, "_deleted_at", "_deleted_gtid", "_deleted_file", "_deleted_pos"),
        _position(Lineage.of_change(truncate[0]).to_dict())))
    assert first_truncate([T.insert({"id": 1})]) is None


def test_the_mirror_keeps_deleted_rows_out_of_lookups_and_in_the_whole_table():
    lineage = {"trx_id": "x"}
    stored = [{**r, LINEAGE_COLUMN: lineage, **live()} for r in STORED]
    mirror = TargetMirror([*stored, {"id": 9, "v": 9, ROW_ID_COLUMN: "r0", LINEAGE_COLUMN: lineage,
                                     **live(), DELETED: True}], 3, 10)
    lookup = Lookups({("id",): {(1,), (2,), (9,)}})
    assert [r[ROW_ID_COLUMN] for r in mirror.select(lookup)] == ["r1", "r2"]
    mirror.apply([], (), None, soft={"r1": {**live(), DELETED: True}})
    assert [r[ROW_ID_COLUMN] for r in mirror.select(lookup)] == ["r2"]
    assert [(r[ROW_ID_COLUMN], r[DELETED], r[LINEAGE_COLUMN]) for r in mirror.whole_rows()] == [
        ("r0", True, lineage), ("r1", True, lineage), ("r2", False, lineage)]
    assert len(mirror) == 3


def test_the_setting_is_validated_where_it_is_declared():
    ddl = parse_ddl("CREATE TABLE d.t (id INT PRIMARY KEY)", "t.sql")
    assert build_catalog({"defaults": {"delete": "soft"}}, "t.yaml", ddl).get("d", "t").delete == "soft"
    assert build_catalog({"targets": {"d.t": {"delete": "hard"}}, "defaults": {"delete": "soft"}}, "t.yaml",
                         ddl).get("d", "t").delete == "hard"
    assert build_catalog(None, "t.yaml", ddl).get("d", "t").delete is None  # the job's tables.delete then
    with pytest.raises(TargetConfigError,
                       match=r"t.yaml.*targets.d.t.delete.*must be one of \['hard', 'soft'\]"):
        build_catalog({"targets": {"d.t": {"delete": "gone"}}}, "t.yaml", ddl)
    assert JobConfig().tables.delete == "hard"
    with pytest.raises(ConfigError, match="delete: must be one of"):
        TablesSettings(delete="archive")

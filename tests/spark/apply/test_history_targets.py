"""SCD2 history targets (`history: scd2`, libs/replay/versions.py, pipelines/apply/modes/scd2.py)
through DeltaApplier: a target derived from the source's SHOW CREATE TABLE (the job's
tables.history default), MINIMAL row images, several changes of one row in one transaction, a
key-changing update, a delete, an ADD COLUMN and a TRUNCATE TABLE. The versions are as the rule
says, and after every batch the open versions equal the table a `history: current` run of the
same batches leaves (values, _row_id and _lineage)."""
import datetime as dt
import re

import pytest

from libs.snapshot.record import ROWS, TABLE
from libs.stages.assembly import DdlEvent
from libs.targets import TargetCatalog
from pipelines.apply import DeltaApplier

from libs.runtime.paths import REPO_ROOT

from tests.change_builders import as_change, truncates_of

from .builders import COMMIT_TS, Source, changes_df, config, delta
from .test_snapshot_apply import EPOCH, snapshot

pytestmark = pytest.mark.spark
ADD = "ALTER TABLE a ADD COLUMN w int DEFAULT 7"


def _ddl(change) -> DdlEvent:
    micros = (change.commit_ts - EPOCH) // dt.timedelta(microseconds=1)
    return DdlEvent("src1", change.binlog_file, change.binlog_pos, "shop", change.statement, micros,
                    "10.11.6-MariaDB-log")


def _batches():
    a = Source("shop", "a", ["id", "v"])
    a3 = Source("shop", "a", ["id", "v", "w"])
    return [
        # the snapshot and binlog after it; trx 4: row 1 changed twice, row 4 inserted and changed
        # (one version each); trx 5: a key change (3 -> 30, the same row); trx 6: row 2 deleted;
        # trx 7: row 1 changed and changed back
        snapshot("r1", 1250, TABLE) + snapshot("r1", 1250, ROWS, [(1, "x"), (2, "y"), (3, None)])
        + [a.update({"id": 2}, {"v": "late"}, trx=3),
           a.update({"id": 1}, {"v": "a"}, trx=4), a.insert({"id": 4, "v": "n"}, trx=4, seq=1),
           a.update({"id": 1}, {"v": "b"}, trx=4, seq=2), a.update({"id": 4}, {"v": "m"}, trx=4, seq=3),
           a.update({"id": 3}, {"id": 30}, trx=5), a.delete({"id": 2}, trx=6),
           a.update({"id": 1}, {"v": "c"}, trx=7), a.update({"id": 1}, {"v": "b"}, trx=7, seq=1)],
        [a.change("ddl", statement=ADD, trx=8), a3.update({"id": 1}, {"w": 8}, trx=9)],  # the carried write
        # a MERGE closing stored versions (row 4; row 30, its key changed again) bounded by their keys
        [a3.update({"id": 4}, {"v": "k"}, trx=10), a3.update({"id": 30}, {"id": 31}, trx=10, seq=1)],
        # the TRUNCATE closes every open version; row 5 comes after it
        [a3.change("ddl", statement="TRUNCATE TABLE a", trx=11), a3.insert({"id": 5, "v": "t"}, trx=12)],
    ]


def _current(spark, cfg, history: bool) -> list[tuple]:
    table = delta(spark, cfg, "shop__a")
    if history:
        table = table.where("_is_current").drop("_valid_from", "_valid_to", "_from_gtid", "_to_gtid",
                                                "_from_pos", "_to_pos", "_is_current", "_deleted")
    return sorted((tuple(r) for r in table.collect()), key=repr)


def test_scd2_versions_and_their_current_state(spark, tmp_path):
    batches = _batches()
    runs = {h: (config(tmp_path / h, tables={"history": h}), ) for h in ("current", "scd2")}
    appliers = {h: DeltaApplier(TargetCatalog(()), cfg) for h, (cfg,) in runs.items()}
    for n, batch in enumerate(batches):
        for history, applier in appliers.items():
            applier.prepare_batch(spark, truncates_of(batch), n,
                                  [_ddl(c) for c in map(as_change, batch) if c.op == "ddl"])
            applier(changes_df(spark, batch), n)
        assert _current(spark, runs["scd2"][0], True) == _current(spark, runs["current"][0], False), n
    assert appliers["scd2"](changes_df(spark, batch), n)["shop.a"]["already_applied"] == 1  # a retried batch
    assert appliers["scd2"].catalog.get("shop", "a").history == "scd2"

    at = lambda trx: (COMMIT_TS + dt.timedelta(seconds=trx)).replace(tzinfo=None)  # noqa: E731
    snap = dt.datetime(2001, 9, 9, 1, 46, 40)  # the snapshot's time (10**15 us)
    got = sorted(((r["_row_id"], r["id"], r["v"], r["w"], r["_valid_from"], r["_valid_to"], r["_from_gtid"],
                  r["_to_pos"], r["_is_current"], r["_deleted"])
                  for r in delta(spark, runs["scd2"][0], "shop__a").collect()), key=repr)
    ids = {}
    for r in sorted(got, key=lambda r: r[4]):  # each key's first version
        ids.setdefault(r[1], r[0])
    ids[30] = ids[31] = ids[3]  # the key changes kept the row's identity
    pos = lambda trx: f"mdb-bin.000002:{1000 + trx * 100}"  # noqa: E731
    expected = sorted([
        (ids[1], 1, "x", None, snap, at(4), "0-1-9", pos(4), False, False),
        (ids[1], 1, "b", None, at(4), at(7), "0-1-4", pos(7), False, False),
        # trx 7 wrote it (the same values); open at the ADD COLUMN: w as the server filled it
        (ids[1], 1, "b", 7, at(7), at(9), "0-1-7", pos(9), False, False),
        (ids[1], 1, "b", 8, at(9), at(11), "0-1-9", pos(11), False, True),  # w: MINIMAL image, whole row
        (ids[2], 2, "y", None, snap, at(3), "0-1-9", pos(3), False, False),
        (ids[2], 2, "late", None, at(3), at(6), "0-1-3", pos(6), False, True),
        (ids[3], 3, None, None, snap, at(5), "0-1-9", pos(5), False, False),
        (ids[3], 30, None, 7, at(5), at(10), "0-1-5", pos(10), False, False),  # open at ADD COLUMN: its fill
        (ids[3], 31, None, 7, at(10), at(11), "0-1-10", pos(11), False, True),
        (ids[4], 4, "m", 7, at(4), at(10), "0-1-4", pos(10), False, False),
        (ids[4], 4, "k", 7, at(10), at(11), "0-1-10", pos(11), False, True),
        (ids[5], 5, "t", 7, at(12), None, "0-1-12", None, True, False),
    ], key=repr)
    assert got == expected

    # the README's queries, as written, over this table
    delta(spark, runs["scd2"][0], "shop__a").createOrReplaceTempView("shop__a")
    section = (REPO_ROOT / "README.md").read_text().split("## History targets", 1)[1].split("\n## ", 1)[0]
    queries = re.findall(r"```sql\n(.*?)```", section, re.S)
    assert [[tuple(r) for r in spark.sql(q).collect()] for q in queries] == [
        [(5, "t", 7)],
        [(1, "b", 7), (4, "m", 7), (30, None, 7)],  # at trx 8 (the ADD COLUMN)
        [("m", "0-1-4", "0-1-10", False), ("k", "0-1-10", "0-1-11", True)],
    ]

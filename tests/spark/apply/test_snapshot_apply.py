"""Snapshot records through the apply stage: a target derived from the source's SHOW CREATE
TABLE, snapshot rows inserted with lineage `snapshot`, binlog changes at or before the snapshot's
position superseded, later ones applied on top (MINIMAL images), a later chunk appended, a
re-snapshot replacing the table, and a restarted job that still knows the schema and position."""
import datetime as dt

import pytest

from libs.snapshot.changes import change_records
from libs.snapshot.record import ROWS, TABLE, SnapshotRecord
from libs.snapshot.values import SourceColumn
from libs.tables.system_tables import CHANGE_LOG, SOURCE_SCHEMAS
from libs.targets import TargetCatalog, build_catalog
from pipelines.apply import DeltaApplier
from libs.apply.stops import SourceTargetStopped

from .builders import Source, changes_df, config, delta, rows_of

pytestmark = pytest.mark.spark

CREATE = ("CREATE TABLE `a` (\n  `id` int(11) NOT NULL,\n  `v` varchar(10) DEFAULT 'dflt',\n"
          "  PRIMARY KEY (`id`)\n)")
EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)


COLUMNS = (SourceColumn(0, "id", "int", "int(11)", None),
           SourceColumn(1, "v", "varchar", "varchar(10)", "utf8mb4"))


def snapshot(run: str, pos: int, kind: str, rows=(), chunk=0, ts=10**15):
    head = dict(snapshot_id=run, binlog_file="mdb-bin.000002", binlog_pos=pos, server_id=1, snapshot_ts=ts,
                gtid="0-1-9", database="shop", table="a")
    if kind == ROWS:
        raw_rows = [(str(i).encode(), None if v is None else v.encode()) for i, v in rows]
        record = SnapshotRecord.chunk(COLUMNS, raw_rows, statement="SELECT `id`, `v` FROM `shop`.`a`",
                                      chunk_no=chunk, **head)
    else:
        record = SnapshotRecord(kind, create_table=CREATE if kind == TABLE else None, **head)
    return [{**c, "commit_ts": EPOCH + dt.timedelta(microseconds=c["commit_ts"])}
            for c in change_records("src1", record)]


def test_snapshot_then_binlog_then_resnapshot(spark, tmp_path):
    cfg = config(tmp_path)
    a = Source("shop", "a", ["id", "v"], names=False)  # NO_LOG metadata: names from the source schema
    # trx 1 ends at 1100 (before the snapshot at 1250: already in its rows), trx 3 at 1300 (after)
    early = a.update({"id": 2}, {"v": "early"}, trx=1)
    late = a.update({"id": 2}, {"v": "late"}, trx=3)
    batch0 = ([early] + snapshot("r1", 1250, TABLE)
              + snapshot("r1", 1250, ROWS, [(1, "x"), (2, "y"), (3, None)]) + [late])
    applier = DeltaApplier(TargetCatalog(()), cfg)
    counts = applier(changes_df(spark, batch0), 0)
    assert counts["shop.a"]["superseded_by_snapshot"] == 1
    assert rows_of(spark, cfg, "shop__a") == [(1, "x"), (2, "late"), (3, None)]

    # the next chunk of the same run, and a change after it: appended, then applied
    batch1 = snapshot("r1", 1250, ROWS, [(4, "p"), (5, "q")], chunk=1) + [a.delete({"id": 1}, trx=4)]
    applier(changes_df(spark, batch1), 1)
    assert rows_of(spark, cfg, "shop__a") == [(2, "late"), (3, None), (4, "p"), (5, "q")]
    lineage = {r["id"]: (r["_lineage"]["operation"], r["_lineage"]["statement"], r["_lineage"]["binlog_pos"])
               for r in delta(spark, cfg, "shop__a").collect()}
    assert lineage[4] == ("snapshot", "SELECT `id`, `v` FROM `shop`.`a`", 1250)
    assert lineage[2][0] == "update"

    # a restarted job: the source schema and the snapshot position come from _cdc_source_schemas
    restarted = DeltaApplier(TargetCatalog(()), cfg)
    stale = a.update({"id": 3}, {"v": "stale"}, trx=2)  # ends at 1200 <= 1250: already in the snapshot
    counts = restarted(changes_df(spark, [stale, a.insert({"id": 6, "v": "n"}, trx=5)]), 2)
    assert counts["shop.a"]["superseded_by_snapshot"] == 1
    assert rows_of(spark, cfg, "shop__a") == [(2, "late"), (3, None), (4, "p"), (5, "q"), (6, "n")]

    # a re-snapshot (a new run at 1700): the table's content is replaced
    batch3 = (snapshot("r2", 1700, TABLE, ts=2 * 10**15)
              + snapshot("r2", 1700, ROWS, [(7, "only")], ts=2 * 10**15))
    restarted(changes_df(spark, batch3), 3)
    assert rows_of(spark, cfg, "shop__a") == [(7, "only")]
    assert delta(spark, cfg, SOURCE_SCHEMAS).count() == 2
    outcomes = rows_of(spark, cfg, CHANGE_LOG, "op", "outcome")
    assert outcomes.count(("truncate", "table_replaced")) == 2
    assert outcomes.count(("snapshot", "applied")) == 6

    # batch 3 again (a replay after a crash): nothing changes
    restarted(changes_df(spark, batch3), 3)
    assert rows_of(spark, cfg, "shop__a") == [(7, "only")]
    assert delta(spark, cfg, SOURCE_SCHEMAS).count() == 2


def test_a_table_left_out_by_the_job_is_not_replicated(spark, tmp_path):
    cfg = config(tmp_path, tables={"exclude": [r"shop\.a"]})
    counts = DeltaApplier(TargetCatalog(()), cfg)(
        changes_df(spark, snapshot("r1", 1250, TABLE) + snapshot("r1", 1250, ROWS, [(1, "x")])), 0)
    assert counts["shop.a"]["not_selected"] == 2
    assert not (tmp_path / "delta" / "shop__a").exists()


def test_a_yaml_override_renames_the_derived_target_and_sets_a_replica_default(spark, tmp_path):
    """README "Onboarding": an entry without columns changes only its own fields of the target
    derived from SHOW CREATE TABLE; a MINIMAL insert without `v` takes the replica's DEFAULT."""
    cfg = config(tmp_path)
    catalog = build_catalog(
        {"targets": {"shop.a": {"delta_table": "customers", "defaults": {"v": "replica"}}}}, "t.yaml")
    a = Source("shop", "a", ["id", "v"], names=False)
    batch = (snapshot("r1", 1250, TABLE) + snapshot("r1", 1250, ROWS, [(1, "x")])
             + [a.insert({"id": 2}, trx=3)])
    DeltaApplier(catalog, cfg)(changes_df(spark, batch), 0)
    assert rows_of(spark, cfg, "customers") == [(1, "x"), (2, "replica")]
    assert not (tmp_path / "delta" / "shop__a").exists()


def test_an_override_the_source_contradicts_stops_the_batch_in_one_line(spark, tmp_path):
    cfg = config(tmp_path)
    catalog = build_catalog({"targets": {"shop.a": {"defaults": {"gone": 1}}}}, "t.yaml")
    with pytest.raises(SourceTargetStopped) as stop:
        DeltaApplier(catalog, cfg)(changes_df(spark, snapshot("r1", 1250, TABLE)), 0)
    assert str(stop.value) == ("batch 0: a target from the source schema: t.yaml: targets.shop.a.defaults: "
                               "unknown field(s) ['gone']; allowed: ['id', 'v']")
    assert not (tmp_path / "delta" / "shop__a").exists()

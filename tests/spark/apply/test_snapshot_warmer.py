"""After a committed batch, the Delta state of each target it wrote is rebuilt in the background
(pipelines/apply/snapshot_warmer.py), so the table's next write does not begin with it;
the tables hold the batches' rows as before."""

import pytest

from libs.tables.table_location import TableLocation
from pipelines.apply import DeltaApplier
from pipelines.apply import tables as D
from pipelines.delta.delta_tables import snapshot

from .builders import Source, catalog_from_ddl, changes_df, config, rows_of

pytestmark = pytest.mark.spark

DDL = ("CREATE TABLE shop.a (id int NOT NULL, v varchar(10), PRIMARY KEY (id));\n"
       "CREATE TABLE shop.b (id int NOT NULL, w int, PRIMARY KEY (id))")


def _batches():
    a, b = Source("shop", "a", ["id", "v"]), Source("shop", "b", ["id", "w"])
    b.trx = 100  # one source stream: transaction numbers must not repeat
    return [[a.insert({"id": 1, "v": "x"}), b.insert({"id": 1, "w": 1})],
            [a.update({"id": 1}, {"v": "y"}), a.delete({"id": 1}), b.insert({"id": 2, "w": 2})]]


def _state_built(spark, cfg, name: str) -> bool:
    """Has the table's latest Delta snapshot (the one its next write starts from) its state built?"""
    return bool(snapshot(spark, D.table_path(cfg.delta_root, name)).stateReconstructionTriggered())


def test_each_written_target_has_its_next_writes_state_built_after_the_batch(spark, tmp_path):
    cfg = config(tmp_path)
    applier = DeltaApplier(catalog_from_ddl(DDL), cfg)
    for batch_id, batch in enumerate(_batches()):
        applier(changes_df(spark, batch), batch_id)
        applier.writes.warmer.wait()
        assert _state_built(spark, cfg, "shop__a"), batch_id
    assert rows_of(spark, cfg, "shop__b") == [(1, 1), (2, 2)]
    assert rows_of(spark, cfg, "shop__a") == []


def test_a_warm_that_fails_is_only_a_lost_head_start(spark, tmp_path):
    from pipelines.apply.snapshot_warmer import SnapshotWarmer

    bad = tmp_path / "not-delta"
    (bad / "_delta_log").mkdir(parents=True)
    (bad / "_delta_log" / "00000000000000000000.json").write_text("not json\n")
    warmer = SnapshotWarmer()
    warmer.warm(spark, [TableLocation(path=str(bad))])
    warmer.wait()  # nothing raised

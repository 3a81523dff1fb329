"""Snapshot rows made target rows on the executors (pipelines/apply/snapshot_rows.py, issue #37
item 3) give what the driver's replay gives: the same batches through DeltaApplier with
executor_apply_min_changes None (driver) and 0 (executors) leave equal tables (_row_id and
lineage included), change logs and progress, each batch one commit of the target."""
import pytest

from libs.snapshot.record import ROWS, TABLE
from libs.tables.system_tables import CHANGE_LOG, PROGRESS
from libs.targets import TargetCatalog
from pipelines.apply import DeltaApplier
from pipelines.apply import executor_parts

from tests.change_builders import truncates_of

from .builders import Source, changes_df, config, delta, rows_of
from .test_snapshot_apply import snapshot

pytestmark = pytest.mark.spark


def _batches():
    a = Source("shop", "a", ["id", "v"], names=False)
    return [
        # a run's start and two chunks in one batch: the table made anew with them, one commit
        snapshot("r1", 1250, TABLE) + snapshot("r1", 1250, ROWS, [(1, "x"), (2, None), (3, "z")])
        + snapshot("r1", 1250, ROWS, [(4, "p")], chunk=1),
        snapshot("r1", 1250, ROWS, [(5, "q"), (6, "r")], chunk=2),  # a later chunk alone: appended
        [a.update({"id": 2}, {"v": "late"}, trx=3)],  # the binlog after the snapshot
        # two runs of the table in one batch: only the last one's rows stay
        snapshot("r2", 1700, TABLE, ts=2 * 10**15) + snapshot("r2", 1700, ROWS, [(7, "gone")], ts=2 * 10**15)
        + snapshot("r3", 1700, TABLE, ts=3 * 10**15)
        + snapshot("r3", 1700, ROWS, [(8, "s"), (9, "t")], ts=3 * 10**15),
    ]


def _run(spark, cfg, catalog, batches):
    applier = DeltaApplier(catalog, cfg)
    counts = []
    for n, batch in enumerate(batches):  # as pipelines/stages/sink.py: the run's start first
        applier.prepare_batch(spark, truncates_of(batch), n)
        counts.append(applier(changes_df(spark, batch), n))
    table = rows_of(spark, cfg, "shop__a", *delta(spark, cfg, "shop__a").columns)
    log = rows_of(spark, cfg, CHANGE_LOG, *delta(spark, cfg, CHANGE_LOG).columns)
    progress = rows_of(spark, cfg, PROGRESS, "source", "trx_id", "trx_file", "trx_end_pos", "batch_id",
                       "changes")
    return counts, table, log, progress


def test_snapshot_rows_on_the_executors_equal_the_driver_replay(spark, tmp_path, monkeypatch):
    batches, catalog = _batches(), TargetCatalog(())  # the target derived from SHOW CREATE TABLE
    made = []
    original = executor_parts.snapshot_rows_on_executors
    monkeypatch.setattr(executor_parts, "snapshot_rows_on_executors",
                        lambda *a, **k: made.append(a[1]) or original(*a, **k))
    driver = _run(spark, config(tmp_path / "driver", executor_apply_min_changes=None), catalog, batches)
    assert made == []
    cfg = config(tmp_path / "executors", executor_apply_min_changes=0)
    executors = _run(spark, cfg, catalog, batches)
    assert made == [("shop", "a")] * 3  # batches 0, 1 and 3: every snapshot row went there
    assert executors == driver
    counts, table, log, _ = driver
    assert [r[:2] for r in table] == [(8, "s"), (9, "t")]
    assert counts[0]["shop.a"]["rows_upserted"] == 4 and counts[3]["shop.a"]["superseded_by_snapshot"] == 2
    assert len(log) == sum(map(len, batches)) - 2  # r2 went with r3's start: not logged, as on the driver
    # one commit per batch after the table's creation: never an empty table between a run's
    # start and its rows (the binlog batch in between is the executors' MERGE: no mirror then)
    for root in ("driver", "executors"):
        operations = _operations(spark, tmp_path / root)
        assert len(operations) == 1 + len(batches)
        assert [operations[k] for k in (1, 2, 4)] == [("WRITE", "Overwrite"), ("WRITE", "Append"),
                                                     ("WRITE", "Overwrite")]


def _operations(spark, root) -> list[tuple]:
    history = spark.sql(f"DESCRIBE HISTORY delta.`{root / 'delta' / 'shop__a'}`").collect()
    return [(r["operation"], r["operationParameters"].get("mode"))
            for r in sorted(history, key=lambda r: r["version"])]

"""A heartbeat-only source's `_cdc_progress` row repeats its last one (pipelines/apply/last_progress.py).
After a restart that row is read once: by the prefetch beside the query's start when the job
made one, else by the first batch that needs it; either way the rows written are the same."""

import pytest

from libs.system_tables import PROGRESS
from pipelines.apply import DeltaApplier
from pipelines.apply import tables as D

from .builders import Source, catalog_from_ddl, changes_df, config

pytestmark = pytest.mark.spark

DDL = "CREATE TABLE shop.a (id int NOT NULL, v varchar(10), PRIMARY KEY (id))"
HEARTBEAT = 1_714_957_200_000_000  # epoch micros
ROW = ("source", "trx_id", "trx_end_pos", "batch_id", "changes", "caught_up_as_of")


def _first_run(spark, cfg) -> dict:
    """Two sources apply a transaction each, in batches 0 and 1; then the process ends. The
    changes, by source."""
    busy, idle = Source("shop", "a", ["id", "v"]), Source("shop", "a", ["id", "v"], source="src2")
    idle.trx = 100
    applier = DeltaApplier(catalog_from_ddl(DDL), cfg)
    changes = {"src1": busy.insert({"id": 1, "v": "x"}), "src2": idle.insert({"id": 2, "v": "y"})}
    applier(changes_df(spark, [changes["src1"]]), 0)
    applier(changes_df(spark, [changes["src2"]]), 1)
    return changes


def _reads(monkeypatch) -> list:
    """The sources argument of each read of the progress table's last rows."""
    calls, read = [], D.last_progress
    monkeypatch.setattr(D, "last_progress", lambda spark, table, app_id, sources: (
        calls.append(None if sources is None else sorted(sources)), read(spark, table, app_id, sources))[1])
    return calls


def _heartbeat_rows(spark, cfg, prefetch: bool) -> list[tuple]:
    """A restarted applier's two heartbeat-only batches; the progress rows they wrote."""
    applier = DeltaApplier(catalog_from_ddl(DDL), cfg)
    if prefetch:
        applier.writes.last_progress.prefetch(spark)
    applier.record_caught_up(spark, 2, {"src1": HEARTBEAT, "src2": HEARTBEAT})
    applier.record_caught_up(spark, 3, {"src2": HEARTBEAT + 1, "src3": HEARTBEAT})  # src3: never applied
    rows = D.read(spark, cfg.table_root.table(PROGRESS)).where("batch_id >= 2").select(*ROW).collect()
    return sorted(tuple(r) for r in rows)


def test_the_prefetched_rows_are_the_ones_the_first_batch_would_have_read(spark, tmp_path, monkeypatch):
    written = {}
    for prefetch in (False, True):
        cfg = config(tmp_path / str(prefetch))
        applied = _first_run(spark, cfg)
        reads = _reads(monkeypatch)
        written[prefetch] = _heartbeat_rows(spark, cfg, prefetch)
        # read once per process: all sources up front, or the batch's idle ones (src3 again after)
        assert reads == ([None] if prefetch else [["src1", "src2"], ["src3"]])
        monkeypatch.undo()
    assert written[True] == written[False]
    assert [(r[0], r[3], r[4]) for r in written[True]] == [("src1", 2, 0), ("src2", 2, 0), ("src2", 3, 0)]
    assert {r[:3] for r in written[True]} == {  # each source's last transaction, repeated
        (s, c["trx_id"], c["trx_end_pos"]) for s, c in applied.items()}


def test_a_failed_prefetch_leaves_the_read_to_the_batch(spark, tmp_path, monkeypatch):
    cfg = config(tmp_path)
    _first_run(spark, cfg)
    reads, read = [], D.last_progress

    def failing_prefetch(spark, table, app_id, sources):
        reads.append(sources)
        if sources is None:
            raise RuntimeError("the file system said no")
        return read(spark, table, app_id, sources)

    monkeypatch.setattr(D, "last_progress", failing_prefetch)
    rows = _heartbeat_rows(spark, cfg, prefetch=True)
    assert [None if r is None else sorted(r) for r in reads] == [None, ["src1", "src2"], ["src3"]]
    assert [(r[0], r[3]) for r in rows] == [("src1", 2), ("src2", 2), ("src2", 3)]


def test_a_row_appended_after_the_prefetch_started_is_kept(spark, tmp_path):
    cfg = config(tmp_path)
    _first_run(spark, cfg)
    last = DeltaApplier(catalog_from_ddl(DDL), cfg).writes.last_progress
    last.prefetch(spark)
    last.update([{"source": "src1", "batch_id": 9, "trx_id": "newer"}])  # before the prefetch settles
    rows = last.of(spark, ["src1", "src2"])
    assert (rows["src1"]["batch_id"], rows["src2"]["batch_id"]) == (9, 1)

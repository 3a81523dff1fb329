"""Snapshot chunks replayed from their bytes (pipelines/apply/snapshot_fusion.py, issue #37 goal
c): the same assembled batches through ReplicateBatch with executor_apply_min_changes None (the
rows stage decodes every chunk, the driver replays them) and 0 (the chunks skip the rows stage)
leave equal tables (_row_id and lineage included), change logs, progress and quarantine; an
undecodable chunk and a table with other changes in the batch go the rows stage's way."""
import datetime as dt

import pytest

from libs.snapshot.changes import assembled_record, change_records
from tests.change_builders import truncates_of
from libs.snapshot.record import ROWS, TABLE, SnapshotRecord
from libs.tables.system_tables import CHANGE_LOG, PROGRESS, QUARANTINE
from libs.targets import TargetCatalog
from pipelines.stages import sink as replicate_batch
from pipelines.apply import DeltaApplier, snapshot_fusion
from pipelines.apply.snapshot_rows import snapshot_chunks
from pipelines.stages.sink import BatchPaths, ReplicateBatch
from pipelines.job.schemas import spark_schema

from .builders import Source, changes_df, config, delta, rows_of
from .test_snapshot_apply import COLUMNS, CREATE, EPOCH
from .test_snapshot_rows import _operations

pytestmark = pytest.mark.spark


def _record(run, kind, rows=(), chunk=0, ts=10**15, values=None):
    head = dict(snapshot_id=run, binlog_file="mdb-bin.000002", binlog_pos=1250, server_id=1, snapshot_ts=ts,
                gtid="0-1-9", database="shop", table="a")
    if kind == TABLE:
        return SnapshotRecord(kind, create_table=CREATE, **head)
    raw_rows = [(str(i).encode(), None if v is None else v.encode()) for i, v in rows]
    record = SnapshotRecord.chunk(COLUMNS, raw_rows, statement="SELECT `id`, `v` FROM `shop`.`a`",
                                  chunk_no=chunk, **head)
    if values is not None:  # a chunk whose head reads and whose values do not
        record = SnapshotRecord(ROWS, columns=COLUMNS, values=values, row_count=len(rows), chunk_no=chunk,
                                statement=record.statement, **head)
    return record


def _assembled(spark, records, first_offset):
    schema = spark_schema("assembled_record")
    out = []
    for k, record in enumerate(records):
        row = assembled_record("src1", record.encode(), "mdb-bin.000002", 1250, 0, first_offset + k)
        row["commit_ts"] = EPOCH + dt.timedelta(microseconds=row["commit_ts"])
        out.append({f.name: row.get(f.name) for f in schema.fields})
    return spark.createDataFrame(out, schema)


def _batches():
    a = Source("shop", "a", ["id", "v"], names=False)
    return [
        [_record("r1", TABLE), _record("r1", ROWS, [(1, "x"), (2, None), (3, "z")]),
         _record("r1", ROWS, [(4, "p")], 1)],
        # a later chunk alone (appended), then the binlog after the snapshot (to the applier)
        [_record("r1", ROWS, [(5, "q"), (6, "r")], 2)], [a.update({"id": 2}, {"v": "late"}, trx=3)],
        # two runs in one batch: only the last one's rows stay
        [_record("r2", TABLE, ts=2 * 10**15), _record("r2", ROWS, [(7, "gone")], ts=2 * 10**15),
         _record("r3", TABLE, ts=3 * 10**15), _record("r3", ROWS, [(8, "s")], ts=3 * 10**15)],
        # a run with an undecodable chunk: its frames quarantined, the table as the batch before left it
        [_record("r4", TABLE, ts=4 * 10**15), _record("r4", ROWS, [(9, "t")], ts=4 * 10**15),
         _record("r4", ROWS, [(10, "u")], 1, ts=4 * 10**15, values=b"\x05\x00garbage")],
    ]


def _run(spark, tmp_path, name, min_changes):
    cfg = config(tmp_path / name, executor_apply_min_changes=min_changes)
    applier = DeltaApplier(TargetCatalog(()), cfg)
    stream = ReplicateBatch(BatchPaths(cfg.delta_root, str(tmp_path / name / "ckpt")), applier)
    offset = 0
    for n, batch in enumerate(_batches()):
        if isinstance(batch[0], SnapshotRecord):
            stream(_assembled(spark, batch, offset), n)
            offset += len(batch)
        else:
            applier(changes_df(spark, batch), n)
    table = rows_of(spark, cfg, "shop__a", *delta(spark, cfg, "shop__a").columns)
    log = rows_of(spark, cfg, CHANGE_LOG, *delta(spark, cfg, CHANGE_LOG).columns)
    progress = rows_of(spark, cfg, PROGRESS, "source", "trx_id", "trx_file", "trx_end_pos", "batch_id",
                       "changes")
    quarantine = rows_of(spark, cfg, QUARANTINE, "source", "kind", "reason", "kafka_offset", "raw")
    return table, log, progress, quarantine


def test_chunks_replayed_from_their_bytes_equal_the_rows_stage_and_the_driver(spark, tmp_path, monkeypatch):
    fused, decoded = [], []
    made, decode = snapshot_fusion.chunk_rows_on_executors, replicate_batch.decode_rows
    monkeypatch.setattr(snapshot_fusion, "chunk_rows_on_executors",
                        lambda *a, **k: fused.append(a[1]) or made(*a, **k))
    monkeypatch.setattr(replicate_batch, "decode_rows",  # the chunks the rows stage decodes
                        lambda segments, *a, **k: decoded.append(snapshot_chunks(segments).count()) or decode(
                            segments, *a, **k))
    driver = _run(spark, tmp_path, "driver", None)
    assert (fused, sum(decoded)) == ([], 7)
    decoded.clear()
    executors = _run(spark, tmp_path, "executors", 0)
    assert fused == [("shop", "a")] * 4  # batches 0, 1, 3 and 4 (refused: its undecodable chunk)
    assert sum(decoded) == 2  # batch 4's chunks, decoded after all
    assert executors == driver
    table, _, _, quarantine = driver
    assert [r[:2] for r in table] == [(8, "s")]  # r3's: r2's went with r3's start, r4's with its chunk
    # every version a reader can see: one commit of the target per batch that wrote it, never an
    # empty table between a run's start and its rows (batch 4 wrote nothing: its run failed)
    for root in ("driver", "executors"):
        operations = _operations(spark, tmp_path / root)
        assert len(operations) == 1 + 4  # the table's creation, then batches 0-3
        assert [operations[k] for k in (1, 2, 4)] == [("WRITE", "Overwrite"), ("WRITE", "Append"),
                                                     ("WRITE", "Overwrite")]
    runs = sorted((SnapshotRecord.decode(bytes(r[4]), head_only=True).snapshot_id, r[1]) for r in quarantine)
    assert runs == [("r4", "ValueError")] * 3  # every frame of run r4 (its table record, both chunks)


def test_a_table_with_other_changes_in_the_batch_is_refused(spark, tmp_path):
    cfg = config(tmp_path, executor_apply_min_changes=0)
    applier = DeltaApplier(TargetCatalog(()), cfg)
    batch = _assembled(spark, [_record("r1", TABLE), _record("r1", ROWS, [(1, "x")])], 0)
    applier.prepare_batch(spark, truncates_of(change_records("src1", _record("r1", TABLE))), 0)
    plan = applier.plan_fusion(spark, 0, snapshot_fusion.chunk_groups(batch), False)
    assert set(plan.planned) == {("shop", "a")}
    # DDL in the batch
    assert applier.plan_fusion(spark, 0, snapshot_fusion.chunk_groups(batch), True) is None
    later = Source("shop", "a", ["id", "v"], names=False).update({"id": 1}, {"v": "y"}, trx=3)
    refused = plan.run(spark, batch, changes_df(spark, [later]))
    assert plan.parts == [] and plan.refused == {("shop", "a")}
    assert [r["snapshot_rows"] for r in refused.collect()] == [1]


def test_chunks_are_dealt_over_the_cores_and_a_part_whose_run_failed_is_dropped(spark, tmp_path):
    """The assembler leaves a source's records in one partition: the chunks are dealt out. A part
    whose run the rows stage failed (its table record did not decode) is dropped: its frames,
    chunks included, are quarantined (failed_transaction_frames), so none of its rows is written."""
    applier = DeltaApplier(TargetCatalog(()), config(tmp_path, executor_apply_min_changes=0))
    records = [_record("r1", TABLE)] + [_record("r1", ROWS, [(k, "x")], k) for k in range(4)]
    batch = _assembled(spark, records, 0).repartition(2, "source")  # as assemble() leaves it: one partition
    assert sorted(batch.rdd.glom().map(len).collect()) == [0, 5]
    applier.prepare_batch(spark, truncates_of(change_records("src1", records[0])), 0)
    plan = applier.plan_fusion(spark, 0, snapshot_fusion.chunk_groups(batch), False)
    start = [{**c, "commit_ts": EPOCH + dt.timedelta(microseconds=c["commit_ts"])}
             for c in change_records("src1", records[0])]
    assert plan.run(spark, batch, changes_df(spark, start)) is None
    (part,) = plan.parts
    per_task = part.target_rows().rdd.glom().map(len).collect()
    assert sum(per_task) == 4 and sorted(per_task)[-1] < 4, per_task
    plan.drop_failed([{"source": "src1", "trx_id": "snapshot:other:shop.a"},
                      {"source": "src2", "trx_id": records[0].trx_id}])
    assert len(plan.parts) == 1  # another run, another source: not this part's
    plan.drop_failed([{"source": "src1", "trx_id": records[0].trx_id}])
    assert plan.parts == [] and plan.refused == {("shop", "a")}

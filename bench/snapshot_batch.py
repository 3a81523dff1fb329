"""A snapshot batch without server or broker (issue #37 goal c, where its seconds go): --rows
sysbench-shaped rows (id INT PK, k INT, c CHAR(120), pad CHAR(60)) as snapshot records of
--chunk-rows rows (the shipper's layout, libs/snapshot/record.py), handed to the job's foreachBatch
(pipelines/stages/sink.ReplicateBatch) as the assembler hands them over, and the seconds of
its steps (wrapped functions; threads overlap, so steps are sums, not walls):

  prepare   the run's start (its table record, the source schema)
  rows      the rows stage: the chunks the applier did not plan to replay from their bytes
            (pipelines/apply/snapshot_fusion.py), decoded and cached, their errors asked
  fusion    the planned chunks decoded and replayed in one pass (pipelines/apply/snapshot_rows.py)
  apply     the writes: change log, the target's one write, progress (an append: each marked
            append, change log, progress, the run's _cdc_source_schemas/_cdc_schema_history rows)
  append    a plain Spark append of the same rows to a new Delta table (goal c's yardstick)

One process, local[2]; the Kafka read and the assembler, which bench/oltp_bench.py includes, are
not here. --rows-stage: no plan (every chunk through the rows stage, the change records replayed
by the applier's executor part), the way before the fusion.

    .venv/bin/python bench/snapshot_batch.py [--rows 300000] [--chunk-rows 5000] [--rows-stage]
"""
from __future__ import annotations

import argparse
import datetime as dt
import random
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.apply_steady import PhaseTimer  # noqa: E402
from bench.bench_support import commit_hash, load_average  # noqa: E402

CREATE = ("CREATE TABLE `sbtest1` (\n  `id` int(11) NOT NULL AUTO_INCREMENT,\n"
          "  `k` int(11) NOT NULL DEFAULT 0,\n"
          "  `c` char(120) NOT NULL DEFAULT '',\n  `pad` char(60) NOT NULL DEFAULT '',\n"
          "  PRIMARY KEY (`id`),\n"
          "  KEY `k_1` (`k`)\n) ENGINE=InnoDB")
HEAD = dict(snapshot_id="run", binlog_file="mdb-bin.000002", binlog_pos=1250, server_id=1, snapshot_ts=10**15,
            gtid="0-1-9", database="sbtest", table="sbtest1")


def records(rows: int, chunk_rows: int) -> list:
    from libs.snapshot.record import TABLE, SnapshotRecord
    from libs.snapshot.values import SourceColumn

    columns = (SourceColumn(0, "id", "int", "int(11)", None), SourceColumn(1, "k", "int", "int(11)", None),
               SourceColumn(2, "c", "char", "char(120)", "latin1"),
               SourceColumn(3, "pad", "char", "char(60)", "latin1"))
    rng = random.Random(7)

    def text(n: int) -> bytes:
        return "-".join(f"{rng.randrange(10**11):011d}" for _ in range(n // 12)).encode()

    out = [SnapshotRecord(TABLE, create_table=CREATE, **HEAD)]
    for chunk, first in enumerate(range(1, rows + 1, chunk_rows)):
        values = [(str(i).encode(), str(rng.randrange(rows)).encode(), text(120), text(60))
                  for i in range(first, min(first + chunk_rows, rows + 1))]
        out.append(SnapshotRecord.chunk(columns, values, statement="SELECT id, k, c, pad FROM sbtest1",
                                        chunk_no=chunk, **HEAD))
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=300_000)
    parser.add_argument("--chunk-rows", type=int, default=5000)
    parser.add_argument("--rows-stage", action="store_true", help="every chunk through the rows stage")
    args = parser.parse_args()
    from libs.config.job import JobConfig
    from libs.snapshot.changes import assembled_record
    from libs.targets import TargetCatalog
    from pipelines.apply import DeltaApplier, batch_writes, snapshot_fusion
    from pipelines.delta.marked_appends import MarkedAppends
    from pipelines.stages.sink import BatchPaths, ReplicateBatch
    from pipelines.job.schemas import spark_schema
    from pipelines.job.spark_session import SessionOptions, build_session

    way = "every chunk through the rows stage" if args.rows_stage else "chunks replayed from their bytes"
    print(f"snapshot batch: HEAD {commit_hash()}, {args.rows:,} rows in chunks of {args.chunk_rows:,}, "
          f"{way}, "
          f"load {load_average()}", flush=True)
    made = records(args.rows, args.chunk_rows)
    work = Path(tempfile.mkdtemp(prefix="snapshot-batch-"))
    spark = build_session(SessionOptions(app_name="snapshot-batch", driver_memory="4g",
                                         warehouse_dir=str(work / "wh")))
    schema = spark_schema("assembled_record")
    epoch = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
    assembled = []
    for k, record in enumerate(made):
        row = assembled_record("src1", record.encode(), HEAD["binlog_file"], HEAD["binlog_pos"], 0, k)
        row["commit_ts"] = epoch + dt.timedelta(microseconds=row["commit_ts"])
        assembled.append({f.name: row.get(f.name) for f in schema.fields})
    # in one partition, as the assembler leaves one source's records (grouped by source)
    batch = spark.createDataFrame(assembled, schema).repartition(2, "source").persist()
    batch.count()

    apply = DeltaApplier(TargetCatalog(()), JobConfig(delta_root=str(work / "delta")))
    if args.rows_stage:
        apply.plan_fusion = lambda *a, **k: None
    stream = ReplicateBatch(BatchPaths(str(work / "delta"), str(work / "ckpt")), apply)
    timer = PhaseTimer((ReplicateBatch, ["_prepare", "_rows"]), (snapshot_fusion.SnapshotFusion, ["run"]),
                       (DeltaApplier, ["__call__"]), (MarkedAppends, ["append"]),
                       (batch_writes.BatchWrites, ["_write_snapshot_rows"]))
    started = time.monotonic()
    stream(batch, 0)
    applied = time.monotonic()
    steps = timer.take()
    target = spark.read.format("delta").load(str(work / "delta" / "sbtest__sbtest1"))
    rows = target.count()
    append_started = time.monotonic()
    target.select("id", "k", "c", "pad").write.format("delta").save(str(work / "plain"))
    append = time.monotonic() - append_started
    total = applied - started
    print(f"the batch: {total:.1f} s for {rows:,} rows")
    print("its steps (s): " + ", ".join(f"{k} {v:.1f}" for k, v in steps.items())
          + " (_rows holds run; __call__ holds _write_snapshot_rows and the appends after the first)")
    print(f"plain append of the same rows: {append:.1f} s; ratio {total / append:.2f}")
    return 0 if rows == args.rows else 1


if __name__ == "__main__":
    raise SystemExit(main())

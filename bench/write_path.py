"""What one apply batch writes to a big target, before and after the write path of issue #37
(bench/README.md "Write path"). Prints its figures; not a test.

    .venv/bin/python bench/write_path.py [--rows 1000000] [--files 16] [--batches 8] [--trx 50]
                                         [--compare history]

A sysbench `sbtest` table (id PK, k, c CHAR(120), pad CHAR(60)) of `--rows` rows, laid out in
`--files` files by id (as a snapshot in key order leaves it), in two delta roots; then
`--batches` batches of `--trx` oltp_read_write transactions each (UPDATE k by id, UPDATE c by
id, DELETE by id, INSERT of that id again: minimal row images), applied by DeltaApplier to both:

* before: no deletion vectors, the MERGE unbounded (merge_scope switched off here, as the code
  before this issue had no scope);
* after: the job's defaults (deletion vectors, the MERGE bounded by the keys read, compaction
  after `--optimize-commits` commits).

`--compare history` (issue #40: "the write-path goals measured again with an SCD2 table"):
"current" = the job's defaults, "scd2" = the same with `history: scd2` (README "History
targets"), whose open versions must equal the current table at the end.

The two alternate batch by batch so machine load hits both. Per batch and variant: wall time
of the applier call, and from the target's Delta history the MERGE's bytes and rows written,
rows copied, files added/removed, deletion vectors added. At the end: the table's files and
bytes on disk, and both targets compared row for row (they must be equal).
"""
from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

DDL = ("CREATE TABLE sbtest.sbtest1 (id INT NOT NULL, k INT NOT NULL DEFAULT '0', "
       "c CHAR(120) NOT NULL DEFAULT '', pad CHAR(60) NOT NULL DEFAULT '', PRIMARY KEY (id), KEY k_1 (k))")
METRICS = ("numTargetBytesAdded", "numTargetRowsCopied", "numTargetFilesAdded", "numTargetFilesRemoved",
           "numTargetDeletionVectorsAdded", "numOutputRows")


def sysbench_batches(rows: int, batches: int, trx: int, seed: int = 7) -> list[list[dict]]:
    """oltp_read_write's writes per transaction, as change records with minimal images."""
    from tests.change_builders import Source

    rng, src = random.Random(seed), Source("sbtest", "sbtest1", ["id", "k", "c", "pad"])
    out = []
    for _ in range(batches):
        batch = []
        for _ in range(trx):
            src.trx += 1
            n, (a, b, d) = src.trx, (rng.randint(1, rows) for _ in range(3))
            c = f"{rng.getrandbits(64):020d}" * 6
            batch += [src.update({"id": a}, {"k": rng.randint(1, rows)}, trx=n, seq=0,
                                 statement="UPDATE sbtest1 SET k=k+1 WHERE id=?"),
                      src.update({"id": b}, {"c": c}, trx=n, seq=1,
                                 statement="UPDATE sbtest1 SET c=? WHERE id=?"),
                      src.delete({"id": d}, trx=n, seq=2, statement="DELETE FROM sbtest1 WHERE id=?"),
                      src.insert({"id": d, "k": rng.randint(1, rows), "c": c, "pad": c[:60]}, trx=n, seq=3,
                                 statement="INSERT INTO sbtest1 (id, k, c, pad) VALUES (?, ?, ?, ?)")]
        out.append(batch)
    return out


def prepare(spark, path, target, rows: int, files: int, deletion_vectors: bool) -> None:
    """The table as a snapshot in key order leaves it: `files` files of consecutive ids (an SCD2
    target's: each row's one open version)."""
    from pyspark.sql import functions as F

    from pipelines.apply import tables as D

    D.ensure_target(spark, path, target, deletion_vectors)
    text = F.lpad(F.col("id").cast("string"), 11, "0")
    opened = {"_valid_from": F.lit("2026-01-01 00:00:00").cast("timestamp"), "_is_current": F.lit(True),
              "_deleted": F.lit(False), "_from_pos": F.lit("mdb-bin.000001:4")}
    extras = [opened.get(f.name, F.lit(None)).cast(f.dataType).alias(f.name) for f in D.extra_fields(target)]
    (spark.range(1, rows + 1, numPartitions=files).select(
        F.col("id").cast("int").alias("id"), (F.col("id") * 7 % rows).cast("int").alias("k"),
        F.concat(*[text] * 10, F.lit("-c")).alias("c"), F.concat(*[text] * 5, F.lit("-p")).alias("pad"),
        F.concat(F.lit("snap-"), F.col("id").cast("string")).alias("_row_id"),
        F.lit(None).cast(D.lineage_type()).alias("_lineage"), *extras)
     .write.format("delta").mode("append").save(path.path))


def last_metrics(spark, path) -> list[dict]:
    """The table's last two commits' metrics, newest first (a compaction may follow the write)."""
    from delta.tables import DeltaTable

    out = []
    for row in DeltaTable.forPath(spark, path.path).history(2).collect():
        metrics = row["operationMetrics"] or {}
        out.append({"operation": row["operation"], **{m: int(metrics.get(m, 0)) for m in METRICS}})
    return out


def on_disk(path: str) -> tuple[int, int]:
    files = [p for p in Path(path).rglob("*") if p.is_file() and "_delta_log" not in p.parts]
    return len(files), sum(p.stat().st_size for p in files)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--files", type=int, default=16)
    ap.add_argument("--batches", type=int, default=8)
    ap.add_argument("--trx", type=int, default=50)
    ap.add_argument("--optimize-commits", type=int, default=32)
    ap.add_argument("--compare", choices=("write-path", "history"), default="write-path",
                    help="write-path: before/after issue #37; history: current vs history: scd2 targets")
    args = ap.parse_args(argv)

    import pipelines.apply.applier as applier_module
    from bench.bench_support import load_average
    from libs.config.job import JobConfig
    from libs.targets import build_catalog, parse_ddl
    from pipelines.apply import DeltaApplier
    from pipelines.apply import tables as D
    from pipelines.job.schemas import spark_schema
    from pipelines.job.spark_session import SessionOptions, build_session

    spark = build_session(SessionOptions(app_name="write-path"))
    catalog = build_catalog(None, "bench.yaml", parse_ddl(DDL, "bench.sql"))
    root = Path(tempfile.mkdtemp(prefix="write-path-"))
    upkeep_on = {"optimize_after_commits": args.optimize_commits}
    if args.compare == "history":
        history = build_catalog({"defaults": {"history": "scd2"}}, "bench.yaml", parse_ddl(DDL, "bench.sql"))
        variants = {"current": (JobConfig(delta_root=str(root / "current"), writes=upkeep_on), catalog),
                    "scd2": (JobConfig(delta_root=str(root / "scd2"), writes=upkeep_on), history)}
    else:
        variants = {"before": (JobConfig(delta_root=str(root / "before"),
                                         writes={"deletion_vectors": False, "optimize_after_commits": 0}),
                               catalog),
                    "after": (JobConfig(delta_root=str(root / "after"), writes=upkeep_on), catalog)}
    appliers, paths = {}, {}
    t0 = time.perf_counter()
    for name, (cfg, variant_catalog) in variants.items():
        target = variant_catalog.get("sbtest", "sbtest1")
        paths[name] = cfg.table_root.table(target.delta_table)
        prepare(spark, paths[name], target, args.rows, args.files, cfg.writes.deletion_vectors)
        appliers[name] = DeltaApplier(variant_catalog, cfg)
    print(f"prepared 2 x {args.rows:,} rows in {args.files} files each: {time.perf_counter() - t0:.1f} s")
    real_scope = applier_module.merge_scope
    walls: dict[str, list[float]] = {name: [] for name in variants}
    written: dict[str, list[dict]] = {name: [] for name in variants}
    upkeep = {name: 0.0 for name in variants}  # maintenance seconds after batches, apart from their walls
    load_before = load_average()
    first, second = variants
    for batch_id, batch in enumerate(sysbench_batches(args.rows, args.batches, args.trx)):
        for name in ((first, second) if batch_id % 2 == 0 else (second, first)):
            applier_module.merge_scope = real_scope if name != "before" else (lambda target, rows: None)
            df = spark.createDataFrame(batch, spark_schema("change_record"))
            ran = len(appliers[name].writes.maintenance.ran)
            started = time.perf_counter()
            appliers[name](df, batch_id)
            kept = sum(s for _, _, s in appliers[name].writes.maintenance.ran[ran:])
            walls[name].append(time.perf_counter() - started - kept)
            upkeep[name] += kept
            written[name].append(next(m for m in last_metrics(spark, paths[name])
                                      if m["operation"] != "OPTIMIZE"))
            m = written[name][-1]
            print(f"batch {batch_id} {name:6s} {walls[name][-1]:6.2f} s (+{kept:5.2f} s upkeep)  "
                  f"{m['operation']:8s} "
                  f"bytes {m['numTargetBytesAdded']:>11,}  rows out {m['numOutputRows']:>9,}  "
                  f"copied {m['numTargetRowsCopied']:>9,}  files +{m['numTargetFilesAdded']} "
                  f"-{m['numTargetFilesRemoved']}  DVs +{m['numTargetDeletionVectorsAdded']}")
    applier_module.merge_scope = real_scope
    print(f"load average before {load_before}, after {load_average()}")
    changed_bytes = args.trx * 4 * 200  # ~200 bytes a sbtest row; 4 row changes a transaction
    for name in variants:
        steady = walls[name][1:]
        merges = [m for m in written[name][1:] if m["operation"] == "MERGE"]
        added = statistics.median(m["numTargetBytesAdded"] for m in merges) if merges else 0
        files, size = on_disk(paths[name].path)
        print(f"{name:6s} batch median {statistics.median(steady):.2f} s (min {min(steady):.2f}); "
              f"MERGE bytes written median {added:,.0f} = {added / changed_bytes:.1f}x "
              f"the ~{changed_bytes:,} bytes changed; "
              f"target on disk {files} files, {size / 1e6:.1f} MB; maintenance {upkeep[name]:.1f} s: "
              f"{[(Path(t).name, op, round(s, 1)) for t, op, s in appliers[name].writes.maintenance.ran]}")
    cols = [*target.column_names, "_row_id"]
    a, b = (D.read(spark, paths[name]) for name in variants)
    b = b.where("_is_current") if args.compare == "history" else b  # an SCD2 target's open versions
    differ = (a.select(*cols).exceptAll(b.select(*cols)).count()
              + b.select(*cols).exceptAll(a.select(*cols)).count())
    print(f"targets equal: {differ == 0} ({differ} rows differ)")
    spark.stop()
    return 0 if differ == 0 else 1


if __name__ == "__main__":
    sys.exit(main())

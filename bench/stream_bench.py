"""Issue #4 proof: one 1,000,000-row transaction through the real streaming pipeline.

    .venv/bin/python bench/stream_bench.py [--rows 1000000] [--batches 12] [--keep]

binlog (simulator framing + the codec's encoder: BEGIN, N-row INSERTs into sim.t_pk, COMMIT;
cached under .cache/bench/) -> cdc-ship --from-file -> the project's Kafka broker (own free port,
own data dir) -> cdc-replicate stages (pipelines.replicate.build_query: decode pandas_udf,
applyInPandasWithState assembler with spill, rows mapInPandas, foreachBatch sink) with
available-now and maxOffsetsPerTrigger = frames / --batches -> the `_cdc_changes` Delta table.

Prints: micro-batches, wall time and rows/s, the check (change records = N, ONE transaction,
(trx_id, change_seq) unique, every inserted id once, empty quarantine), peak memory (driver
JVM heap through py4j Runtime; RSS of the driver JVM, the driver Python and the Python workers
from /proc), and for the batch that decodes the rows: busy share of each core and the CPU
seconds of each Python worker (DESIGN.md "Dataflow": heavy row decoding must not serialise).
"""
from __future__ import annotations

import argparse
import json
import math
import shutil
import sys
import time
from decimal import Decimal
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.bench_support import Sampler, batch_windows, load_average, private_broker  # noqa: E402
from libs.runtime.paths import REPO_ROOT  # noqa: E402

CACHE = REPO_ROOT / ".cache" / "bench"
SOURCE = "bench-big"


def big_transaction_binlog(rows: int, per_statement: int = 1000) -> Path:
    """A MariaDB binlog holding ONE transaction of `rows` full-image INSERT rows on sim.t_pk
    (statements of `per_statement` rows, each split into <= 8 KiB rows events as a server does).
    Built with the simulator's Master framing (positions, log_pos, CRC32, Table_map per
    statement) but bypassing its reference model, whose duplicate-key check is O(rows)."""
    from libs.simulator.master import Master, Session
    from libs.simulator.schema import standard_tables
    from libs.simulator.sinks import FileSink

    path = CACHE / f"one_trx_{rows}.bin"
    if path.exists():
        return path
    sink = FileSink()
    master = Master([t for t in standard_tables("mariadb") if t.name == "t_pk"], sink,
                    session=Session("ROW", "full", False))  # no Rows_query: 1M copies of the text
    table = master.model.table("t_pk")
    master.begin()
    master._group.transactional = True
    for start in range(0, rows, per_statement):
        run = [("insert", "t_pk", None,
                {0: k, 1: b"name%d" % k, 2: k % 1000, 3: Decimal(k).scaleb(-2), 4: b"note %d" % k},
                frozenset(range(5))) for k in range(start, min(rows, start + per_statement))]
        master.log_rows_statement(table, run)
    master.commit()
    master.close()
    sink.write(path)
    return path


def ship(bootstrap: str, topic: str, path: Path) -> None:
    from pipelines.ship import main as cdc_ship

    if cdc_ship(["--from-file", str(path), "--bootstrap", bootstrap, "--topic", topic,
                 "--source", SOURCE]) != 0:
        raise RuntimeError("cdc-ship failed")


def _count(path: Path) -> int:
    """Events in a binlog file (event_size at header offset 9)."""
    data, pos, n = path.read_bytes(), 4, 0
    while pos < len(data):
        pos += int.from_bytes(data[pos + 9:pos + 13], "little")
        n += 1
    return n


def verify(spark, delta_root: str, rows: int) -> dict:
    from pyspark.sql import functions as F

    from libs.tables.system_tables import CHANGES, QUARANTINE

    every = spark.read.format("delta").load(f"{delta_root}/{CHANGES}")
    changes = every.filter(F.col("op").isin("insert", "update", "delete"))  # not the CREATE DDL
    got = changes.agg(
        F.count("*").alias("change_records"),
        F.countDistinct("trx_id").alias("transactions"),
        F.countDistinct("trx_id", "change_seq").alias("distinct_trx_change_seq"),
        F.countDistinct(F.col("after")[0]["text"]).alias("distinct_ids"),
        F.sum((F.col("op") != "insert").cast("int")).alias("not_insert"),
    ).first().asDict()
    got["ddl_records"] = every.count() - got["change_records"]
    got["quarantined"] = spark.read.format("delta").load(f"{delta_root}/{QUARANTINE}").count()
    got["ok"] = (got["change_records"] == rows and got["transactions"] == 1 and got["quarantined"] == 0
                 and got["distinct_trx_change_seq"] == rows and got["distinct_ids"] == rows
                 and got["not_insert"] == 0)
    return got


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--batches", type=int, default=12, help="aim for this many micro-batches (>= 10)")
    ap.add_argument("--work", default=str(REPO_ROOT / ".run" / "stream_bench"))
    ap.add_argument("--json", help="also write the figures to this file")
    ap.add_argument("--keep", action="store_true", help="keep the Delta/checkpoint directories")
    args = ap.parse_args(argv)

    from libs.config.job import JobConfig
    from pipelines.replicate import build_query
    from pipelines.job.spark_session import SessionOptions, build_session

    CACHE.mkdir(parents=True, exist_ok=True)
    t = time.perf_counter()
    path = big_transaction_binlog(args.rows)
    frames = _count(path)
    print(f"binlog {path.name}: {frames} events, {path.stat().st_size / 2**20:.1f} MiB, one transaction "
          f"of {args.rows} rows ({time.perf_counter() - t:.1f}s to build or load)", flush=True)
    work = Path(args.work)
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    figures: dict = {"rows": args.rows, "frames": frames, "load_before": load_average()}
    with private_broker(work / "kafka") as bootstrap:
        topic = f"bench-{int(time.time())}"
        ship(bootstrap, topic, path)
        spark = build_session(SessionOptions(app_name="stream-bench"))
        cfg = JobConfig(bootstrap=bootstrap, topic=topic, delta_root=str(work / "delta"),
                        checkpoint=str(work / "ckpt"), available_now=True,
                        max_offsets_per_trigger=math.ceil(frames / args.batches))
        sampler = Sampler(spark).start()
        t0 = time.time()
        query = build_query(spark, cfg)
        query.awaitTermination()
        t1 = time.time()
        sampler.stop()
        if query.exception() is not None:
            raise RuntimeError(f"streaming query failed: {query.exception()}")
        batches = batch_windows(query)
        figures.update(load_after=load_average(), wall_s=round(t1 - t0, 2), batches=len(batches),
                       max_offsets_per_trigger=cfg.max_offsets_per_trigger,
                       rows_per_s=round(args.rows / (t1 - t0)),
                       check=verify(spark, cfg.delta_root, args.rows),
                       memory=sampler.peaks(t0, t1))
        # the batch in which the transaction commits decodes and writes all its rows
        heavy = max(batches, key=lambda b: b["seconds"])
        figures["rows_batch"] = {
            "batch": heavy["batch"], "seconds": round(heavy["seconds"], 2),
            "core_busy": [round(x, 2) for x in sampler.core_busy(heavy["start"], heavy["end"])],
            "python_worker_cpu_s": sorted((round(v, 1) for v in sampler.worker_cpu(heavy["start"],
                                                                                   heavy["end"]).values()),
                                          reverse=True),
            "cpu_s_by_process": {k: round(v, 1)
                                 for k, v in sampler.kind_cpu(heavy["start"], heavy["end"]).items()},
        }
        figures["batch_seconds"] = [round(b["seconds"], 1) for b in batches]
        spark.stop()
    if not args.keep:
        shutil.rmtree(work / "delta", ignore_errors=True)
        shutil.rmtree(work / "ckpt", ignore_errors=True)
    report(figures)
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=2))
    return 0 if figures["check"]["ok"] and figures["batches"] >= 10 else 1


def report(f: dict) -> None:
    c, m, h = f["check"], f["memory"], f["rows_batch"]
    print(f"load average before/after: {f['load_before']} / {f['load_after']}")
    print(f"{f['rows']} rows, {f['frames']} events in {f['batches']} micro-batches "
          f"(maxOffsetsPerTrigger {f['max_offsets_per_trigger']}); batch seconds {f['batch_seconds']}")
    print(f"wall {f['wall_s']} s, {f['rows_per_s']} rows/s end to end (Kafka -> Delta change records)")
    print(f"check: {c['change_records']} change records, {c['transactions']} transaction(s), "
          f"{c['distinct_trx_change_seq']} distinct (trx_id, change_seq), {c['distinct_ids']} distinct ids, "
          f"(+{c['ddl_records']} CREATE DDL records), {c['quarantined']} quarantined -> "
          f"{'OK' if c['ok'] else 'FAILED'}")
    shown = ("driver JVM", "java", "python-driver", "python-worker")  # not chmod/rm helpers
    print("peak memory: " + ", ".join(f"{k} {v:.0f}" for k, v in sorted(m.items()) if k.startswith(shown)))
    print(f"rows batch {h['batch']} ({h['seconds']} s): core busy {h['core_busy']}, "
          f"Python worker CPU s {h['python_worker_cpu_s']}, CPU s by process {h['cpu_s_by_process']}")


if __name__ == "__main__":
    sys.exit(main())

"""The apply stage measured, not asserted (bench/README.md "Apply").

    .venv/bin/python bench/apply_bench.py [--transactions 60000] [--max-offsets N] [--rate 1000]
                                          [--only sustained,latency,scaling]

1. sustained: a minimal-image, update-heavy simulator workload without DDL (cdc-simulate's
   Master, row_image=minimal, ddl_rate=0; cached under .cache/bench/) shipped to the project's
   Kafka broker (own port) with cdc-ship; then, in ONE Spark session, the same topic read
   available-now by cdc-replicate's query three times: a warm-up, the plain sink (change
   records appended to Delta, no applier) and the DeltaApplier with the simulator's
   --target-ddl. Row changes/s of both, their ratio, and the target tables compared with the
   simulator's expected tables (the oracle).
2. latency: the same binlog produced at a steady --rate transactions/s (one group = GTID event
   .. commit, produced together; the send time of a group is its commit time) while the
   applier query runs with a --trigger s trigger, after a warm-up batch (the query's first
   batch pays one-off costs: Python workers, target tables, state store). A transaction is visible when the
   applier call of its micro-batch returned (target writes and progress committed); p50/p99 of
   visible - commit per transaction, over all paced transactions and over those committed in
   the second half of the input (after the catch-up of the first batches).
3. scaling: DeltaApplier called directly on one batch of N decoded change records (N = 10k,
   100k, 1M; 10 % inserts into sim.t_pk then minimal-image UPDATEs of those rows, codec-encoded
   and decoded by libs/stages/assembly), beside a plain Delta append of the same DataFrame:
   rows, seconds, us/row. The final table is checked against the generator's rows.
"""
from __future__ import annotations

import argparse
import bisect
import json
import shutil
import sys
import time
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.apply_workloads import (  # noqa: E402
    CACHE, SOURCE, frames_of, produce_groups, simulated_binlog, transaction_groups, update_heavy_changes,
)
from bench.bench_support import load_average, private_broker  # noqa: E402
from libs.runtime.paths import REPO_ROOT  # noqa: E402
from pipelines.stages.apply_stage import ForwardingApplyStage  # noqa: E402

ROW_OPS = ("insert", "update", "delete")


# -- workloads: bench/apply_workloads.py

# -- pieces ----------------------------------------------------------------------------------------
class Visible(ForwardingApplyStage):
    """The applier, noting when each batch's apply returned."""

    def __init__(self, apply):
        super().__init__(apply)
        self.at = {}

    def __call__(self, changes_df, batch_id: int, caught_up=None, fused=None):
        out = self.inner(changes_df, batch_id, caught_up, fused)
        self.at[batch_id] = time.time()
        return out


def run_available_now(spark, cfg, apply=None) -> float:
    from pipelines.replicate import build_query

    t0 = time.perf_counter()
    query = build_query(spark, cfg, apply)
    query.awaitTermination()
    if query.exception() is not None:
        raise RuntimeError(f"query failed: {query.exception()}")
    return time.perf_counter() - t0


def target_ddl(work: Path) -> Path:
    from libs.simulator.schema import replica_ddl, standard_tables

    ddl = work / "targets.sql"
    ddl.write_text(replica_ddl(standard_tables("mariadb"), "sim"))
    return ddl


def applier(cfg):
    from pipelines.replicate import make_applier

    return make_applier(cfg)


def compare_with_expected(spark, cfg, expected: Path) -> tuple[bool, list[str]]:
    from libs.simulator.compare import compare_table, load_expected
    from libs.targets import load_targets
    from pipelines.apply import tables as D

    catalog = load_targets(None, [cfg.target_ddl])
    manifest, rows = load_expected(expected)
    ok, lines = True, []
    for name, entry in sorted(manifest["tables"].items()):
        database, table = name.split(".", 1)
        path = D.table_path(cfg.delta_root, catalog.get(database, table).delta_table)
        result = compare_table(name, entry, rows[name], spark.read.format("delta").load(path).collect())
        lines.append(result.summary())
        ok &= result.equal
    return ok, lines


# -- 1. sustained -----------------------------------------------------------------------------
def sustained(spark, bootstrap: str, work: Path, binlog: Path, expected: Path, max_offsets: int,
              overwrite_max_rows: int) -> dict:
    from pyspark.sql import functions as F

    from libs.config.job import JobConfig
    from libs.tables.system_tables import CHANGES
    from pipelines.ship import main as cdc_ship

    topic = f"sustained-{int(time.time())}"
    if cdc_ship(["--from-file", str(binlog), "--bootstrap", bootstrap, "--topic", topic,
                 "--source", SOURCE]) != 0:
        raise RuntimeError("cdc-ship failed")
    base = JobConfig(bootstrap=bootstrap, topic=topic, available_now=True, target_ddl=str(target_ddl(work)),
                     max_offsets_per_trigger=max_offsets, target_overwrite_max_rows=overwrite_max_rows)

    def cfg(name: str, apply: bool) -> JobConfig:
        return replace(base, delta_root=str(work / name / "delta"), checkpoint=str(work / name / "ckpt"),
                       target_ddl=base.target_ddl if apply else None)

    run_available_now(spark, cfg("warmup", False))  # JIT, Delta/Kafka classes: neither timed run pays it
    plain_cfg, apply_cfg = cfg("plain", False), cfg("apply", True)
    load = load_average()
    plain_s = run_available_now(spark, plain_cfg)
    apply_s = run_available_now(spark, apply_cfg, applier(apply_cfg))
    changes = spark.read.format("delta").load(f"{plain_cfg.delta_root}/{CHANGES}")
    n = changes.filter(F.col("op").isin(*ROW_OPS)).count()
    ok, lines = compare_with_expected(spark, apply_cfg, expected)
    return {"load": load, "row_changes": n, "transactions": changes.select("trx_id").distinct().count(),
            "plain_s": round(plain_s, 2), "apply_s": round(apply_s, 2),
            "plain_rows_per_s": round(n / plain_s), "apply_rows_per_s": round(n / apply_s),
            "ratio": round(plain_s / apply_s, 3), "targets_equal_expected": ok, "compare": lines}


# -- 2. latency -------------------------------------------------------------------------------
def wait_until(predicate, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise RuntimeError(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(0.2)


def latency(spark, bootstrap: str, work: Path, binlog: Path, rate: float, trigger: float,
            overwrite_max_rows: int, warmup_groups: int = 200) -> dict:
    """Steady state only: the first `warmup_groups` groups go in first and the measurement starts
    once their batch is applied (a new query's first batch also starts the Python workers,
    creates the target tables, the state store ...: one-off costs, not latency)."""
    import numpy as np
    from pyspark.sql import functions as F

    from libs.config.job import JobConfig
    from libs.shipper.kafka_sink import ensure_topic
    from libs.tables.system_tables import CHANGE_LOG
    from pipelines.apply import tables as D
    from pipelines.replicate import build_query

    topic = f"latency-{int(time.time())}"
    ensure_topic(bootstrap, topic)
    cfg = JobConfig(bootstrap=bootstrap, topic=topic, delta_root=str(work / "latency" / "delta"),
                    checkpoint=str(work / "latency" / "ckpt"), target_ddl=str(target_ddl(work)),
                    trigger_seconds=trigger, target_overwrite_max_rows=overwrite_max_rows)
    visible = Visible(applier(cfg))
    query = build_query(spark, cfg, visible)
    frames = frames_of(binlog)
    groups = transaction_groups(frames)
    warm, paced = groups[:warmup_groups], groups[warmup_groups:]
    produce_groups(bootstrap, topic, warm, "sim-bin.000001", None, {})
    wait_until(lambda: visible.at, 600, "the warm-up batch")
    warm_batches = set(visible.at)
    commits: dict[int, float] = {}
    load = load_average()
    t0 = time.time()
    produce_groups(bootstrap, topic, paced, "sim-bin.000001", rate, commits)
    produce_s = time.time() - t0
    while query.isActive:  # until the query has read every record
        progress = query.lastProgress
        end = progress and progress["sources"][0]["endOffset"]
        end = json.loads(end) if isinstance(end, str) else end  # PySpark gives the offsets as JSON text
        if (end and sum(int(v) for v in end[topic].values()) >= len(frames)
                and not query.status["isTriggerActive"]):
            break
        time.sleep(0.5)
    query.stop()
    if query.exception() is not None:
        raise RuntimeError(f"query failed: {query.exception()}")
    starts = sorted(commits)
    log = spark.read.format("delta").load(D.table_path(cfg.delta_root, CHANGE_LOG))
    per_trx = (log.filter(F.col("op").isin(*ROW_OPS)).groupBy("lineage.trx_id")
               .agg(F.max("batch_id").alias("batch_id"), F.min("lineage.binlog_pos").alias("pos")).collect())
    lat, late = [], []  # late: transactions committed in the second half of the paced input
    half = t0 + produce_s / 2
    for row in per_trx:
        if row["pos"] < starts[0]:
            continue  # a warm-up transaction
        group_start = starts[bisect.bisect_right(starts, row["pos"]) - 1]
        lat.append(visible.at[row["batch_id"]] - commits[group_start])
        if commits[group_start] >= half:
            late.append(lat[-1])
    lat, late = np.array(lat), np.array(late)
    batches = [p for p in query.recentProgress if p["numInputRows"] and p["batchId"] not in warm_batches]
    return {"load": load, "rate": rate, "trigger_s": trigger, "groups": len(commits),
            "produce_s": round(produce_s, 1), "achieved_rate": round(len(commits) / produce_s),
            "transactions_measured": len(lat), "batches": len(batches),
            "median_batch_s": round(float(np.median([p["durationMs"]["triggerExecution"] / 1000
                                                     for p in batches])), 2),
            # in order: growing durations mean the job falls behind the rate (no steady state)
            "batch_s": [round(p["durationMs"]["triggerExecution"] / 1000, 1) for p in batches],
            "p50_s": round(float(np.percentile(lat, 50)), 2),
            "p99_s": round(float(np.percentile(lat, 99)), 2),
            "max_s": round(float(lat.max()), 2),
            # without the catch-up of the first paced batches (the query starts behind the rate)
            "second_half_p50_s": round(float(np.percentile(late, 50)), 2),
            "second_half_p99_s": round(float(np.percentile(late, 99)), 2)}


# -- 3. scaling ------------------------------------------------------------------------------
def scaling(spark, work: Path, sizes: list[int]) -> list[dict]:
    from libs.config.job import JobConfig
    from libs.targets import load_targets
    from pipelines.apply import DeltaApplier

    ddl = target_ddl(work)
    out = []
    warm = True
    for n in [sizes[0]] + sizes:  # the first size twice: once to warm up, not reported
        arrow, final = update_heavy_changes(n)
        df = spark.createDataFrame(arrow).cache()
        rows = df.count()
        root = work / f"scaling_{n}_{len(out)}_{int(warm)}"
        cfg = JobConfig(delta_root=str(root / "delta"), target_ddl=str(ddl))
        apply = DeltaApplier(load_targets(None, [str(ddl)]), cfg)
        load = load_average()
        t0 = time.perf_counter()
        apply(df, 0)
        apply_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        df.write.format("delta").mode("append").save(str(root / "plain"))
        plain_s = time.perf_counter() - t0
        got = {r["id"]: r["qty"] for r in spark.read.format("delta").load(str(root / "delta" / "sim__t_pk"))
               .select("id", "qty").collect()}
        df.unpersist()
        if not warm:
            out.append({"rows": rows, "load": load, "apply_s": round(apply_s, 2),
                        "apply_us_per_row": round(apply_s / rows * 1e6, 1), "plain_s": round(plain_s, 2),
                        "plain_us_per_row": round(plain_s / rows * 1e6, 1),
                        "table_equals_oracle": got == final})
            print(f"scaling: {out[-1]}", flush=True)
        warm = False
        shutil.rmtree(root, ignore_errors=True)
    return out


def main(argv=None) -> int:
    from libs.config.job import JobConfig, load_config

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--transactions", type=int, default=60000, help="simulated units of work")
    ap.add_argument("--seed", type=int, default=11)
    ap.add_argument("--max-offsets", type=int,
                    default=load_config(REPO_ROOT / "conf" / "job.yaml").max_offsets_per_trigger,
                    help="sustained: Kafka records per micro-batch (default: the job's own, conf/job.yaml)")
    ap.add_argument("--rate", type=float, default=1000.0, help="latency: transactions per second")
    ap.add_argument("--trigger", type=float, default=1.0, help="latency: trigger interval, seconds")
    ap.add_argument("--overwrite-max-rows", type=int, default=JobConfig.target_overwrite_max_rows,
                    help="sustained/latency: JobConfig.target_overwrite_max_rows "
                         "(0: every target write a MERGE)")
    ap.add_argument("--sizes", default="10000,100000,1000000", help="scaling: rows per batch")
    ap.add_argument("--only", default="sustained,latency,scaling")
    ap.add_argument("--work", default=str(REPO_ROOT / ".run" / "apply_bench"))
    ap.add_argument("--json")
    args = ap.parse_args(argv)
    parts = set(args.only.split(","))

    from pipelines.job.spark_session import SessionOptions, build_session

    CACHE.mkdir(parents=True, exist_ok=True)
    work = Path(args.work).resolve()  # Delta path identifiers (delta.`...`) must be absolute
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    t = time.perf_counter()
    binlog, expected = simulated_binlog(args.transactions, args.seed)
    print(f"workload {binlog.name}: {len(frames_of(binlog))} events "
          f"({time.perf_counter() - t:.0f}s to build or load)",
          flush=True)
    figures: dict = {"load_start": load_average(), "target_overwrite_max_rows": args.overwrite_max_rows}
    print(f"target_overwrite_max_rows {args.overwrite_max_rows}", flush=True)
    spark = build_session(SessionOptions(app_name="apply-bench"))
    try:
        if parts & {"sustained", "latency"}:
            with private_broker(work / "kafka") as bootstrap:
                if "sustained" in parts:
                    figures["sustained"] = sustained(spark, bootstrap, work, binlog, expected,
                                                     args.max_offsets, args.overwrite_max_rows)
                    print(f"sustained: {figures['sustained']}", flush=True)
                if "latency" in parts:
                    figures["latency"] = latency(spark, bootstrap, work, binlog, args.rate, args.trigger,
                                                 args.overwrite_max_rows)
                    print(f"latency: {figures['latency']}", flush=True)
        if "scaling" in parts:
            figures["scaling"] = scaling(spark, work, [int(x) for x in args.sizes.split(",")])
    finally:
        spark.stop()
    figures["load_end"] = load_average()
    report(figures)
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=2, default=str))
    return 0


def report(f: dict) -> None:
    print(f"load average at start/end: {f['load_start']} / {f['load_end']}")
    if "sustained" in f:
        s = f["sustained"]
        print(f"sustained (load {s['load']}): {s['row_changes']} row changes in "
              f"{s['transactions']} transactions; "
              f"plain append {s['plain_rows_per_s']} rows/s ({s['plain_s']} s), DeltaApplier "
              f"{s['apply_rows_per_s']} rows/s ({s['apply_s']} s); ratio {s['ratio']} (target >= 0.5); "
              f"targets equal the simulator's tables: {s['targets_equal_expected']}")
    if "latency" in f:
        lt = f["latency"]
        print(f"latency (load {lt['load']}): {lt['achieved_rate']} trx/s produced for {lt['produce_s']} s, "
              f"trigger {lt['trigger_s']} s, {lt['batches']} batches (median {lt['median_batch_s']} s): "
              f"commit->visible p50 {lt['p50_s']} s, p99 {lt['p99_s']} s, max {lt['max_s']} s "
              f"over {lt['transactions_measured']} transactions (second half of the input: p50 "
              f"{lt['second_half_p50_s']} s, p99 {lt['second_half_p99_s']} s); "
              f"batch durations in order {lt['batch_s']} s")
    for s in f.get("scaling", []):
        print(f"scaling (load {s['load']}): {s['rows']} rows/batch: apply {s['apply_s']} s = "
              f"{s['apply_us_per_row']} us/row; plain append {s['plain_s']} s = "
              f"{s['plain_us_per_row']} us/row; "
              f"table equals oracle: {s['table_equals_oracle']}")


if __name__ == "__main__":
    sys.exit(main())

"""cdc-embedded: the README's main job on one machine, with nothing to set up (`scripts/dev run`).

    local Kafka broker -> cdc-simulate at a steady rate -> cdc-replicate (decode, assemble,
    rows, apply) -> Delta tables under .run/embedded/delta

The simulated master writes minimal row images with Annotate_rows (the product's hardest case:
absent columns take the target's DEFAULT, WL#5092). It starts a new binlog on every run, so
every run starts fresh: a new topic, an empty Delta directory and checkpoint. Progress is printed
per micro-batch until Ctrl-C / SIGTERM (or --duration); then the simulator stops, the job drains
the topic (available-now on the same checkpoint) and every Delta table is compared with the
simulator's expected table. Exit status 0 only when they are all equal.
"""
from __future__ import annotations

import argparse
import dataclasses
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from libs.config.job import ConfigError, JobConfig, load_config
from libs.local.kafka_broker import DEFAULT_PORT, BrokerError, start
from libs.runtime.paths import REPO_ROOT, RUN_DIR
from libs.shipper.kafka_sink import ensure_topic
from libs.simulator.compare import compare_table, load_expected
from libs.simulator.schema import replica_ddl, standard_tables
from libs.targets import load_targets
from pipelines.apply import tables as D
from pipelines.kafka import broker_config
from pipelines.replicate import build_query, make_applier, stop_between_batches
from pipelines.stages.apply_stage import ApplyStage, ForwardingApplyStage
from pipelines.job.spark_session import SessionOptions, build_session

SOURCE = "sim"
DATABASE = "sim"
OPS = ("insert", "update", "delete")


@dataclass(frozen=True)
class EmbeddedOptions:
    rate: float = 20.0  # simulated transactions per second
    duration: float | None = None  # seconds until the run stops by itself (None: until stopped)
    seed: int = 1
    root: Path = RUN_DIR / "embedded"


class _Tally(ForwardingApplyStage):
    """The applier, counting what each batch applied."""

    def __init__(self, apply: ApplyStage):
        super().__init__(apply)
        self.total, self.last = Counter(), Counter()

    def __call__(self, changes_df, batch_id: int, caught_up=None, fused=None) -> dict:
        counts = self.inner(changes_df, batch_id, caught_up, fused)
        self.last = Counter({op: sum(c.get(op, 0) for c in counts.values()) for op in OPS})
        self.total.update(self.last)
        return counts


def _log(message: str) -> None:
    print(f"cdc-embedded: {message}", flush=True)


def _start_simulator(bootstrap: str, topic: str, opts: EmbeddedOptions, expected: Path) -> subprocess.Popen:
    argv = [sys.executable, "-m", "pipelines.simulate", "--bootstrap", bootstrap, "--topic", topic,
            "--source", SOURCE, "--rate", str(opts.rate), "--seed", str(opts.seed),
            # DDL does not change the targets' columns yet (issue #17): none is simulated
            "--row-image", "minimal", "--ddl-rate", "0",
            "--expected", str(expected)]
    return subprocess.Popen(argv)


def _stop_simulator(sim: subprocess.Popen) -> None:
    if sim.poll() is None:
        sim.send_signal(signal.SIGTERM)  # it flushes the producer and writes the expected tables
    if sim.wait(timeout=120) != 0:
        raise RuntimeError(f"cdc-simulate exited with status {sim.returncode}")


def _print_progress(query, tally: _Tally, seen: int) -> int:
    progress = query.lastProgress
    if not progress or progress["batchId"] == seen:
        return seen
    seconds = progress["durationMs"].get("triggerExecution", 0) / 1000
    last = ", ".join(f"{tally.last[op]} {op}s" for op in OPS)
    _log(f"batch {progress['batchId']}: {progress['numInputRows']} binlog events in {seconds:.1f}s; "
         f"applied {last}; {sum(tally.total.values())} row changes in all")
    return progress["batchId"]


def _wait(query, tally: _Tally, opts: EmbeddedOptions, stop: dict) -> None:
    start, seen = time.monotonic(), -1
    while not stop["flag"] and query.isActive:
        if opts.duration is not None and time.monotonic() - start >= opts.duration:
            break
        seen = _print_progress(query, tally, seen)
        time.sleep(0.5)
    if query.exception() is not None:
        raise RuntimeError(f"the streaming query failed: {query.exception()}")


def _verify(spark, cfg: JobConfig, expected: Path) -> bool:
    catalog = load_targets(None, [cfg.target_ddl])
    manifest, rows = load_expected(expected)
    equal = True
    for name, entry in sorted(manifest["tables"].items()):
        database, table = name.split(".", 1)
        path = D.table_path(cfg.delta_root, catalog.get(database, table).delta_table)
        result = compare_table(name, entry, rows[name], spark.read.format("delta").load(path).collect())
        _log(f"{result.summary()} ({path})")
        equal &= result.equal
    return equal


def run_embedded(cfg: JobConfig, opts: EmbeddedOptions) -> int:
    port = int(cfg.bootstrap.rsplit(":", 1)[1])
    broker = start(broker_config(port))
    shutil.rmtree(opts.root, ignore_errors=True)  # a new simulated binlog: start fresh (module doc)
    opts.root.mkdir(parents=True)
    ddl = opts.root / "targets.sql"
    ddl.write_text(replica_ddl(standard_tables("mariadb"), DATABASE))
    topic, expected = f"embedded-{int(time.time())}", opts.root / "expected"
    cfg = dataclasses.replace(cfg, bootstrap=broker["bootstrap"], topic=topic, target_ddl=str(ddl),
                              targets=None, delta_root=str(opts.root / "delta"),
                              checkpoint=str(opts.root / "checkpoint"), available_now=False,
                              kafka_security=JobConfig().kafka_security)  # the local broker: PLAINTEXT
    _log(f"Kafka broker {cfg.bootstrap}, topic {topic}; simulator at {opts.rate:g} transactions/s; "
         f"Delta tables under {cfg.delta_root}. Ctrl-C stops, drains and verifies.")
    stop = {"flag": False}
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.update(flag=True))
    ensure_topic(cfg.bootstrap, topic)  # before the query subscribes: one partition, the shipper's way
    # the session first: a checkout without the Spark jars stops here with one line (main),
    # before a simulator is left running
    spark = build_session(SessionOptions(app_name="cdc-replicate-embedded"))
    sim = _start_simulator(cfg.bootstrap, topic, opts, expected)
    try:
        tally = _Tally(make_applier(cfg))
        query = build_query(spark, cfg, tally)
        try:
            _wait(query, tally, opts, stop)
        finally:
            _stop_simulator(sim)
            stop_between_batches(query)
        _log("simulator stopped; draining the topic")
        drain = build_query(spark, dataclasses.replace(cfg, available_now=True), tally)
        _wait(drain, tally, EmbeddedOptions(), {"flag": False})  # progress lines while draining
        drain.awaitTermination()
        if drain.exception() is not None:
            raise RuntimeError(f"the draining query failed: {drain.exception()}")
        _log(f"{sum(tally.total.values())} row changes applied; comparing with the simulator's tables")
        return 0 if _verify(spark, cfg, expected) else 1
    finally:
        if sim.poll() is None:
            sim.kill()
        spark.stop()


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="cdc-embedded", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--conf", help="YAML job configuration (default conf/job.yaml); its broker port is used, "
                                   "its topic, targets and paths are the embedded ones")
    ap.add_argument("--rate", type=float, default=EmbeddedOptions.rate,
                    help="simulated transactions per second")
    ap.add_argument("--duration", type=float, help="stop, drain and verify after this many seconds")
    ap.add_argument("--seed", type=int, default=EmbeddedOptions.seed, help="the simulated workload's seed")
    ap.add_argument("--port", type=int, help="the local broker's client port on 127.0.0.1 (its controller: "
                                             "PORT+1); default: the port of the configuration's bootstrap, "
                                             f"{DEFAULT_PORT} in conf/job.yaml")
    return ap.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:  # a configuration error before any broker or Spark session: one line
        cfg = load_config(args.conf or REPO_ROOT / "conf" / "job.yaml")
    except ConfigError as e:
        print(f"cdc-embedded: {e}", file=sys.stderr)
        return 2
    if args.port is not None:  # the broker is taken elsewhere: `scripts/dev run --port P`
        cfg = dataclasses.replace(cfg, bootstrap=f"127.0.0.1:{args.port}")
    try:
        return run_embedded(cfg, EmbeddedOptions(rate=args.rate, duration=args.duration, seed=args.seed))
    except (BrokerError, RuntimeError) as e:
        print(f"cdc-embedded: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())

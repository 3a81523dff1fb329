"""cdc-replicate: Kafka topic of raw binlog frames -> Delta tables (DESIGN.md "Dataflow").

Command-line contract (issue #5):
  cdc-replicate --bootstrap HOST:PORT --topic T --target-ddl FILE.sql --delta-root DIR
                --checkpoint DIR [--conf FILE] [--available-now]
  cdc-replicate --embedded [--rate TPS] [--duration S]
                local broker -> simulator -> this job -> Delta under .run/embedded (README)
"""
from __future__ import annotations

import argparse
import dataclasses
import faulthandler
import signal
import sys
from pathlib import Path

from pyspark.errors import StreamingQueryException

from libs.config import ConfigError, JobConfig, load_config, one_line
from libs.paths import REPO_ROOT


STREAM_LOGGER = "org.apache.spark.sql.execution.streaming.MicroBatchExecution"  # logs a query's end


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="cdc-replicate", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--conf", help="YAML job configuration (default conf/job.yaml)")
    ap.add_argument("--bootstrap")
    ap.add_argument("--topic")
    ap.add_argument("--target-ddl", dest="target_ddl")
    ap.add_argument("--targets", help="YAML target declarations")
    ap.add_argument("--delta-root", dest="delta_root")
    ap.add_argument("--checkpoint")
    ap.add_argument("--available-now", dest="available_now", action="store_true", default=None)
    ap.add_argument("--embedded", action="store_true",
                    help="local broker + simulator + Delta under .run/embedded (README; pipelines/embedded.py)")
    ap.add_argument("--rate", type=float, default=20.0, help="--embedded: simulated transactions per second")
    ap.add_argument("--duration", type=float, help="--embedded: stop, drain and verify after this many seconds")
    ap.add_argument("--seed", type=int, default=1, help="--embedded: the simulated workload's seed")
    ap.add_argument("--on-cluster", action="store_true", help="use the cluster's Spark session (Databricks)")
    return ap.parse_args(argv)


def job_config(args: argparse.Namespace) -> JobConfig:
    overrides = {k: getattr(args, k) for k in
                 ("bootstrap", "topic", "target_ddl", "targets", "delta_root", "checkpoint", "available_now")}
    cfg = load_config(args.conf or REPO_ROOT / "conf" / "job.yaml", overrides)
    # Delta path identifiers (delta.`path`) need absolute local paths: a relative delta_root made
    # target creation fail with SCHEMA_NOT_FOUND (found by bench/apply_bench.py).
    return dataclasses.replace(cfg, delta_root=_absolute(cfg.delta_root), checkpoint=_absolute(cfg.checkpoint))


def _absolute(path: str) -> str:
    return path if "://" in path else str(Path(path).resolve())


def make_sink(cfg: JobConfig, apply=None):
    """The foreachBatch sink (rows -> apply -> Delta). The apply stage's target declarations
    (its `decode_hints`) also tell the rows stage what the binlog may not say: UNSIGNED,
    charsets, ENUM/SET labels (libs/targets/decoding.py)."""
    from pipelines.replicate_batch import BatchPaths, ReplicateBatch

    return ReplicateBatch(BatchPaths(cfg.delta_root, cfg.checkpoint), apply, limits=cfg.decode_limits,
                          hints=getattr(apply, "decode_hints", None), bad_input=cfg.bad_input)


def build_query(spark, cfg: JobConfig, apply=None, sink=None):
    """The dataflow, top to bottom (DESIGN.md "Dataflow"); returns the started StreamingQuery."""
    from libs.assembler import AssemblerConfig, UnknownEventPolicy
    from libs.stream_assembly import StageConfig
    from pipelines.replicate_batch import BatchPaths
    from pipelines.stages.assemble import assemble
    from pipelines.stages.decode import frames

    paths = BatchPaths(cfg.delta_root, cfg.checkpoint)
    sink = sink if sink is not None else make_sink(cfg, apply)
    # The assembler's processing-time timeout would otherwise make Spark run no-data batches
    # forever (an available-now query never ends); idle sources time out on the next batch with data.
    spark.conf.set("spark.sql.streaming.noDataMicroBatches.enabled", "false")
    kafka = (spark.readStream.format("kafka")                      # key, value, headers, partition, offset
             .option("kafka.bootstrap.servers", cfg.bootstrap)
             .option("subscribe", cfg.topic)
             .option("startingOffsets", "earliest")
             .option("failOnDataLoss", "true")
             .option("includeHeaders", "true")
             .option("maxOffsetsPerTrigger", cfg.max_offsets_per_trigger)
             .load())
    decoded = frames(kafka)                                          # source, file, pos, offsets, raw, header
    # Unknown events are quarantined like other bad input; the sink stops the stream when
    # unknown_event_policy says fail (libs/bad_input.py), after the frame is kept.
    stage = StageConfig(AssemblerConfig(unknown_event_policy=UnknownEventPolicy.QUARANTINE),
                        limits=cfg.decode_limits)
    assembled = assemble(decoded, paths.spill_root, stage,           # segments | quarantine | release
                         idle_timeout_ms=cfg.idle_source_timeout_s * 1000)
    writer = (assembled.writeStream
              .foreachBatch(sink)                                    # rows -> apply -> Delta
              .option("checkpointLocation", f"{cfg.checkpoint.rstrip('/')}/query")
              .queryName("cdc-replicate"))
    writer = writer.trigger(availableNow=True) if cfg.available_now else \
        writer.trigger(processingTime=f"{cfg.trigger_seconds} seconds")
    return writer.start()


def load_catalog(cfg: JobConfig):
    """The declared targets (plain Python, no Spark), or None when none are declared. Loaded
    before the Spark session so a bad declaration is one line and no JVM was started for it."""
    if not (cfg.target_ddl or cfg.targets):
        return None
    from libs.targets import load_targets

    return load_targets(cfg.targets, [cfg.target_ddl] if cfg.target_ddl else [])


def make_applier(cfg: JobConfig, catalog=None):
    """The Delta apply stage (issue #5) when targets are declared; None writes change records."""
    catalog = catalog if catalog is not None else load_catalog(cfg)
    if catalog is None:
        return None
    try:
        from pipelines.apply import DeltaApplier
    except ImportError as e:  # the apply stage lands with issue #5
        raise ConfigError(f"target declarations given but the apply stage is unavailable: {e}") from e
    return DeltaApplier(catalog, cfg)


def run(cfg: JobConfig, on_cluster: bool = False, catalog=None) -> int:
    from pipelines.spark_session import SessionOptions, build_session, logger_off

    spark = build_session(SessionOptions(app_name="cdc-replicate", on_cluster=on_cluster))
    sink = make_sink(cfg, make_applier(cfg, catalog))
    query = build_query(spark, cfg, sink=sink)
    print(f"cdc-replicate: reading {cfg.topic} at {cfg.bootstrap} into {cfg.delta_root}", file=sys.stderr)
    try:
        # A stop on purpose is printed below as one line; Spark would log it first with its Java
        # and Python traces. A defect still shows its traces: it is raised again here.
        with logger_off(spark, STREAM_LOGGER):
            query.awaitTermination()
    except StreamingQueryException:
        if sink.stopped is None:
            raise  # not a stop on purpose: a defect, whose trace is wanted
        print(f"cdc-replicate: {one_line(str(sink.stopped))}", file=sys.stderr)
        return 1
    return 0


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if not args.on_cluster:  # a cluster's driver process is the platform's (it has its own thread dumps)
        # `kill -USR1 <pid>` prints every Python thread's stack to stderr: where a stuck
        # micro-batch (foreachBatch runs in this driver process) waits, without stopping the job.
        faulthandler.register(signal.SIGUSR1, all_threads=True)
    try:  # every configuration and declaration error, before any Spark session: one line
        cfg = job_config(args)
        catalog = None if args.embedded else load_catalog(cfg)
    except ConfigError as e:
        print(f"cdc-replicate: {e}", file=sys.stderr)
        return 2
    if args.embedded:
        from libs.kafka_broker import BrokerError

        from pipelines.embedded import EmbeddedOptions, run_embedded

        try:
            return run_embedded(cfg, EmbeddedOptions(rate=args.rate, duration=args.duration, seed=args.seed))
        except (BrokerError, RuntimeError) as e:
            print(f"cdc-replicate --embedded: {e}", file=sys.stderr)
            return 1
    try:
        return run(cfg, on_cluster=args.on_cluster, catalog=catalog)
    except ConfigError as e:
        print(f"cdc-replicate: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())

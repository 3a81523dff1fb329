"""cdc-replicate: Kafka topic of raw binlog frames -> Delta tables (DESIGN.md "Dataflow").

  Usage: USAGE below (--help prints it; README "Commands" has the same line). Every flag
  overrides conf/job.yaml, and every setting has a default (libs/config/job.py). No declaration is
  needed: a table's target comes from the source's schema; --target-ddl / --targets declare or
  override targets (README "Commands").

The embedded default (local broker -> simulator -> this job) is its own entry point:
cdc-embedded (pipelines/embedded.py). Every configuration and declaration error is reported as
one line before any Spark session is built (libs/config/job.py ConfigError).
"""
from __future__ import annotations

import argparse
import dataclasses
import os
import signal
import sys
import time
import traceback
from contextlib import nullcontext
from pathlib import Path

from pyspark.errors import StreamingQueryException
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.streaming import DataStreamWriter, StreamingQuery

from libs.config.job import ConfigError, JobConfig, load_config, one_line
from libs.settings.errors import cause_line
from libs.settings.kafka_security import KafkaAuth, KafkaSecurityError
from libs.settings.topic_secret import read_topic_secrets
from libs.contracts.topic_tag import TopicKeys
from libs.runtime.metrics import serve
from libs.runtime.paths import REPO_ROOT, SPARK_JARS_DIR
from libs.targets import TargetCatalog, TargetConfigError, load_targets
from libs.runtime.thread_dump import dump_on_signal
from pipelines.apply import DeltaApplier
from pipelines.delta.delta_tables import CatalogSchemaStopped, ensure_schema
from pipelines.job.job_metrics import JobMetrics, ProgressListener, observe_input
from pipelines.reads.lineage_views import lineage_views
from pipelines.stages.apply_stage import ApplyStage
from pipelines.stages.sink import BatchPaths, ReplicateBatch
from pipelines.job.spark_session import (SessionOptions, SparkJarsMissing, build_session, kafka_class_prefix,
                                         logger_off)
from pipelines.job.stopping import (StopRequested, StopSignals, await_query, last_committed_batch,
                                    stopped_line, wait_listener_done)
from pipelines.stages.assemble import assemble
from pipelines.stages.decode import frames

QUERY_NAME = "cdc-replicate"
USAGE = ("cdc-replicate [--bootstrap H:P] [--topic T] [--delta-root DIR] [--catalog-schema C.S] "
         "[--checkpoint DIR] [--target-ddl F.sql] [--targets F.yaml] [--conf F] [--available-now] "
         "[--on-cluster] [--verbose]")
# What one fetch returns of a topic partition. Kafka's default, 1 MiB, is one snapshot chunk per
# round trip to the broker; with 16 MiB a 200,000-record backlog read took 2.8 s instead of 3.6 s
# (bench/README.md "Issue #37 goal a, session 29").
FETCH_PARTITION_BYTES = 16 * 1024 * 1024
STREAM_LOGGER = "org.apache.spark.sql.execution.streaming.MicroBatchExecution"  # logs a query's end


# -- the dataflow (DESIGN.md "Dataflow"), one function per stage ----------------------------------
def build_query(spark: SparkSession, cfg: JobConfig, apply=None, sink=None,
                kafka: KafkaAuth | None = None, keys: TopicKeys | None = None) -> StreamingQuery:
    """kafka -> decode -> assemble -> foreachBatch(rows -> quarantine -> apply -> releases);
    returns the started StreamingQuery. `kafka`: cfg.kafka_security with its secrets read
    (kafka_auth; read here from this process's environment when not given); `keys`: the topic
    secrets (topic_keys, read likewise when not given)."""
    sink = sink if sink is not None else make_sink(cfg, apply, rows_partitions(spark, cfg))
    kafka = kafka if kafka is not None else kafka_auth(cfg)
    # The assembler's processing-time timeout would otherwise make Spark run no-data batches
    # forever (an available-now query never ends); idle sources time out on the next batch with data.
    spark.conf.set("spark.sql.streaming.noDataMicroBatches.enabled", "false")
    keys = keys if keys is not None else topic_keys(cfg)  # with a topic secret: every tag verified
    records = observe_input(read_topic(spark, cfg, kafka))  # key, value, headers, partition, offset
                                                            # (+ counted, timed)
    decoded = frames(records, tagged=keys is not None)      # source, file, pos, kind, offsets, raw
    assembled = assemble_transactions(decoded, cfg, keys)   # kind: segment | quarantine | release
    return write_batches(assembled, sink, cfg).start()  # rows -> quarantine -> apply -> Delta


def kafka_auth(cfg: JobConfig, env=None) -> KafkaAuth:
    """cfg.kafka_security with its secrets and PEM texts read (files, else `env`: this process's
    environment); a problem is one ConfigError naming kafka_security.SETTING."""
    try:
        return cfg.kafka_security.resolve(os.environ if env is None else env)
    except KafkaSecurityError as exc:
        raise ConfigError(f"kafka_security.{exc}") from None


def topic_keys(cfg: JobConfig, env=None) -> TopicKeys | None:
    """The topic secrets (topic_secret_file, topic_previous_secret_file, else the environment: this
    process's when `env` is None) the job verifies every record's tag with; None: no secret, no
    record checked. A problem is one ConfigError naming the setting (never the secret)."""
    secrets = read_topic_secrets(cfg.topic_secret_file, cfg.topic_previous_secret_file,
                                 os.environ if env is None else env,
                                 ("topic_secret_file", "topic_previous_secret_file"))
    return TopicKeys(secrets) if secrets else None


def read_topic(spark: SparkSession, cfg: JobConfig, kafka: KafkaAuth | None = None) -> DataFrame:
    """The topic from its start (DESIGN.md "Kafka record"); a lost offset fails the query. A
    source's records are in one topic partition, which Spark reads as one task unless minPartitions
    splits its offsets: a backlog batch's read uses every core. `kafka`: how the source connects
    (README "Security"; the options holding secrets are redacted: spark_session.REDACTION_REGEX)."""
    kafka = kafka if kafka is not None else kafka_auth(cfg)
    prefix = kafka_class_prefix(spark) if kafka.security.sasl else ""
    return (spark.readStream.format("kafka")
            .options(**kafka.spark_options(prefix))
            .option("minPartitions", cfg.kafka_read_tasks or spark.sparkContext.defaultParallelism)
            .option("kafka.max.partition.fetch.bytes", FETCH_PARTITION_BYTES)
            .option("kafka.bootstrap.servers", cfg.bootstrap)
            .option("subscribe", cfg.topic)
            .option("startingOffsets", "earliest")
            .option("failOnDataLoss", "true")
            .option("includeHeaders", "true")
            .option("maxOffsetsPerTrigger", cfg.max_offsets_per_trigger)
            .load())


def assemble_transactions(decoded: DataFrame, cfg: JobConfig, keys: TopicKeys | None = None) -> DataFrame:
    """Per source: boundary parser (WL#4162), open-transaction buffer spilled under the
    checkpoint, complete transactions out as segments (pipelines/stages/assemble.py); with `keys`,
    records whose tag does not verify quarantined first."""
    paths = BatchPaths(cfg.delta_root, cfg.checkpoint)
    return assemble(decoded, paths.spill_root, cfg.assembly.stage_config(cfg.decode_limits),
                    idle_timeout_ms=cfg.idle_source_timeout_s * 1000, keys=keys)


def write_batches(assembled: DataFrame, sink, cfg: JobConfig) -> DataStreamWriter:
    """Each micro-batch to the sink, exactly once per checkpoint (DESIGN.md "Exactly once")."""
    writer = (assembled.writeStream
              .foreachBatch(sink)
              .option("checkpointLocation", f"{cfg.checkpoint.rstrip('/')}/query")
              .queryName(QUERY_NAME))
    if cfg.available_now:
        return writer.trigger(availableNow=True)
    return writer.trigger(processingTime=f"{cfg.trigger_seconds} seconds")


def stop_between_batches(query: StreamingQuery, timeout: float = 300.0, poll_s: float = 0.02) -> None:
    """Stop the query when no trigger is running (or after `timeout`). stop() during a batch
    interrupts foreachBatch inside a Py4J call; Spark then matches the long Py4J error message
    against StreamExecution.PROXY_ERROR, `...((.|\\r\\n|\\r|\\n)*)(InterruptedException|...)`,
    whose repeated alternation recurses once per character in java.util.regex, and prints a
    StackOverflowError (SPARK-39218 added the regex). Harmless to the checkpoint (exactly once),
    but noise. Between triggers the stream thread sleeps and stop() only wakes it. A trigger can
    still start between the check and stop(): a short poll keeps that window small."""
    deadline = time.monotonic() + timeout
    while query.isActive and query.status["isTriggerActive"] and time.monotonic() < deadline:
        time.sleep(poll_s)
    query.stop()


# -- the foreachBatch sink and the apply stage ------------------------------------------------------
def make_sink(cfg: JobConfig, apply: ApplyStage | None = None, partitions: int | None = None,
              metrics: JobMetrics | None = None) -> ReplicateBatch:
    """The foreachBatch sink (rows -> quarantine -> apply -> releases). The apply stage's target
    declarations (its `decode_hints`) also tell the rows stage what the binlog may not say:
    UNSIGNED, charsets, ENUM/SET labels (libs/targets/decoding.py). `partitions`: the rows
    stage's tasks (rows_partitions; 2 when no session is at hand)."""
    return ReplicateBatch(BatchPaths(cfg.delta_root, cfg.checkpoint, cfg.catalog_schema), apply,
                          partitions=partitions or cfg.rows.partitions or 2, limits=cfg.decode_limits,
                          hints=apply.decode_hints if apply is not None else None, bad_input=cfg.bad_input,
                          metrics=metrics)


def rows_partitions(spark: SparkSession, cfg: JobConfig) -> int:
    """JobConfig.rows.partitions, else the context's defaultParallelism (its cores)."""
    return cfg.rows.partitions or spark.sparkContext.defaultParallelism


def load_catalog(cfg: JobConfig) -> TargetCatalog | None:
    """The declared targets (plain Python, no Spark), or None when none are declared. Loaded
    before the Spark session so a bad declaration is one line and no JVM was started for it."""
    if not (cfg.target_ddl or cfg.targets):
        return None
    catalog = load_targets(cfg.targets, [cfg.target_ddl] if cfg.target_ddl else [])
    if catalog.overrides and not cfg.tables.from_source:
        first = catalog.overrides[0]
        raise TargetConfigError(first.path, f"targets.{first.name.key()}",
                                "no columns: add `columns:`, declare the table in a DDL file, or let the "
                                "job derive it from the source (tables.from_source: true)")
    return catalog


def make_applier(cfg: JobConfig, catalog: TargetCatalog | None = None,
                 metrics: JobMetrics | None = None) -> DeltaApplier | None:
    """The Delta apply stage when targets are declared or may come from the source
    (JobConfig.tables.from_source, the default); None writes change records. `metrics`: told
    which tables each batch is about to write (the lag gauge), and the clock of the batch's steps."""
    catalog = catalog if catalog is not None else load_catalog(cfg)
    if catalog is None and not cfg.tables.from_source:
        return None
    if metrics is None:
        return DeltaApplier(catalog or TargetCatalog(()), cfg)
    return DeltaApplier(catalog or TargetCatalog(()), cfg, tables_read=metrics.tables_read,
                        steps=metrics.steps)


def prepare_tables(spark: SparkSession, cfg: JobConfig) -> None:
    """With catalog_schema: its schema (created when missing; on Unity Catalog the catalog must
    exist) and the lineage views in it (README "Lineage in SQL"), before the stream starts.
    Path tables need neither: a table is created by its first write."""
    if cfg.catalog_schema is None:
        return
    ensure_schema(spark, cfg.table_root)
    lineage_views(spark, cfg.table_root)


# -- the entry point -------------------------------------------------------------------------------
def parse_args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="cdc-replicate", usage=USAGE, description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--conf", metavar="F", help="YAML job configuration (default conf/job.yaml)")
    ap.add_argument("--bootstrap", metavar="H:P", help="Kafka bootstrap servers")
    ap.add_argument("--topic", metavar="T", help="Kafka topic of the shipper's records")
    ap.add_argument("--target-ddl", dest="target_ddl", metavar="F.sql",
                    help="CREATE TABLE statements declaring targets (optional: targets come from the source)")
    ap.add_argument("--targets", metavar="F.yaml", help="YAML target declarations (optional)")
    ap.add_argument("--delta-root", dest="delta_root", metavar="DIR", help="directory of the Delta tables")
    ap.add_argument("--catalog-schema", dest="catalog_schema", metavar="C.S",
                    help="CATALOG.SCHEMA: catalog tables by name instead of paths under --delta-root")
    ap.add_argument("--checkpoint", metavar="DIR", help="Spark checkpoint directory")
    ap.add_argument("--available-now", dest="available_now", action="store_true", default=None,
                    help="replicate what the topic holds, then end")
    ap.add_argument("--on-cluster", action="store_true", help="use the cluster's Spark session (Databricks)")
    ap.add_argument("--verbose", action="store_true",
                    help="Spark's own warnings, and when the job stops, the Java and Python traces "
                         "before its one line")
    return ap.parse_args(argv)


def job_config(args: argparse.Namespace) -> JobConfig:
    """conf/job.yaml (or --conf) <- command-line flags."""
    overrides = {k: getattr(args, k, None) for k in
                 ("bootstrap", "topic", "target_ddl", "targets", "delta_root", "catalog_schema", "checkpoint",
                  "available_now")}
    cfg = load_config(args.conf or REPO_ROOT / "conf" / "job.yaml", overrides)
    # Delta path identifiers (delta.`path`) need absolute local paths: with a relative
    # delta_root, target creation fails with SCHEMA_NOT_FOUND.
    return dataclasses.replace(cfg, delta_root=_absolute(cfg.delta_root),
                               checkpoint=_absolute(cfg.checkpoint))


def _absolute(path: str) -> str:
    return path if "://" in path else str(Path(path).resolve())


def watch_metrics(spark: SparkSession, cfg: JobConfig, out=None) -> JobMetrics:
    """Lag and counts per batch: a progress line on `out`, and Prometheus metrics on
    cfg.metrics_port (pipelines/job/job_metrics.py)."""
    metrics = JobMetrics(out)
    metrics.listener = ProgressListener(metrics, QUERY_NAME)  # spark.streams.removeListener takes it
    spark.streams.addListener(metrics.listener)
    if cfg.metrics_port is not None:
        try:
            serve(metrics.families, cfg.metrics_port)
        except OSError as exc:
            raise ConfigError(f"metrics_port {cfg.metrics_port}: cannot serve metrics "
                              f"({exc.strerror or exc})") from None
    return metrics


def run(cfg: JobConfig, on_cluster: bool = False, catalog: TargetCatalog | None = None,
        verbose: bool = False, jars_dir: Path = SPARK_JARS_DIR, kafka: KafkaAuth | None = None) -> int:
    """The job until it ends: 0 at its end (available_now) or when stopped by SIGINT/SIGTERM
    (pipelines/job/stopping.py), 1 when it stops on a problem. Every end prints one line (a stop on
    a problem: the stop's own message, or the innermost error of a failure); `verbose` also
    brings back Spark's own warnings, lets it log the query's end and prints the traces.
    `jars_dir`: where the local session finds the Delta and Kafka-source jars. `kafka`: the Kafka
    source's security with its secrets read (kafka_auth(cfg) when not given)."""
    kafka = kafka if kafka is not None else kafka_auth(cfg)
    signals = StopSignals(QUERY_NAME).install()  # a signal during start-up: stopped before any batch
    try:
        return _run(cfg, signals, on_cluster, catalog, verbose, jars_dir, kafka)
    finally:
        signals.restore()


def _run(cfg: JobConfig, signals: StopSignals, on_cluster: bool, catalog: TargetCatalog | None,
         verbose: bool, jars_dir: Path, kafka: KafkaAuth) -> int:
    # Catalog tables on this machine: a metastore under delta_root, so they outlive the job (on a
    # cluster, the cluster's catalog: Unity Catalog).
    metastore = cfg.delta_root if cfg.catalog_schema is not None and not on_cluster else None
    spark = build_session(SessionOptions(app_name="cdc-replicate", on_cluster=on_cluster,
                                         metastore_dir=metastore, jars_dir=jars_dir, verbose=verbose))
    signals.install()  # the SparkContext put its own SIGINT handler in place
    try:
        prepare_tables(spark, cfg)
    except CatalogSchemaStopped as stop:
        print(f"cdc-replicate: {stop}", file=sys.stderr)
        return 1
    metrics = watch_metrics(spark, cfg)
    sink = make_sink(cfg, make_applier(cfg, catalog, metrics), rows_partitions(spark, cfg), metrics)
    sink.before_batch, signals.running = signals.check, lambda: sink.running
    keys = topic_keys(cfg)
    query = build_query(spark, cfg, sink=sink, kafka=kafka, keys=keys)
    security = "" if kafka.security.security_protocol == "PLAINTEXT" else f" ({kafka.describe()})"
    tags = "" if keys is None else f", every record's tag verified (key id {', '.join(keys.key_ids)})"
    print(f"cdc-replicate: reading {cfg.topic} at {cfg.bootstrap}{security} into {cfg.table_root}{tags}",
          file=sys.stderr)
    try:
        # Spark would log the query's end with its Java and Python traces, before the one line.
        with (nullcontext() if verbose else logger_off(spark, STREAM_LOGGER)):
            await_query(query, signals)
    except StreamingQueryException as exc:
        if not isinstance(sink.stopped, StopRequested):
            if verbose:
                traceback.print_exc()
            cause = one_line(str(sink.stopped)) if sink.stopped is not None else (
                f"failed: {cause_line(str(exc))}" + ("" if verbose else " (--verbose prints its traces)"))
            _unwatch(spark, metrics)
            print(f"cdc-replicate: {cause}", file=sys.stderr)
            return 1
    _unwatch(spark, metrics)  # the last batch's line printed before the closing one
    last = last_committed_batch(query)
    if signals.requested.is_set():
        print(stopped_line(QUERY_NAME, last), file=sys.stderr)
    else:
        print(f"cdc-replicate: done after batch {last} (--available-now: the topic read to where it ended "
              f"at the start)" if last is not None
              else "cdc-replicate: done: nothing to read (--available-now)",
              file=sys.stderr)
    return 0


def _unwatch(spark: SparkSession, metrics: JobMetrics) -> None:
    """The progress listener removed once it has seen the query end (wait_listener_done)."""
    wait_listener_done(metrics.listener.terminated)
    spark.streams.removeListener(metrics.listener)


def main(argv: list[str] | None = None, jars_dir: Path = SPARK_JARS_DIR) -> int:
    args = parse_args(argv)
    if not args.on_cluster:  # a cluster's driver process is the platform's (it has its own thread dumps)
        # `kill -USR1 <pid>`: every Python thread's stack (libs/runtime/thread_dump.py)
        dump_on_signal(signal.SIGUSR1)
    try:  # every configuration and declaration error, before any Spark session: one line
        cfg = job_config(args)
        kafka = kafka_auth(cfg)  # the secrets: read here, before any Spark session
        topic_keys(cfg)  # the topic secret's problems too (read again where the query is built)
        catalog = load_catalog(cfg)
        return run(cfg, on_cluster=args.on_cluster, catalog=catalog, verbose=args.verbose, jars_dir=jars_dir,
                   kafka=kafka)
    except ConfigError as e:
        print(f"cdc-replicate: {e}", file=sys.stderr)
        return 2
    except SparkJarsMissing as e:  # this checkout is not set up: the command that does it
        print(f"cdc-replicate: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())

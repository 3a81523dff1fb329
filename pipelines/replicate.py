"""cdc-replicate: Kafka topic of raw binlog frames -> Delta tables (DESIGN.md "Dataflow").

Command-line contract (issue #5):
  cdc-replicate --bootstrap HOST:PORT --topic T --target-ddl FILE.sql --delta-root DIR
                --checkpoint DIR [--conf FILE] [--available-now]
  cdc-replicate --embedded     local broker + local Delta directory under .run/ (README)
"""
from __future__ import annotations

import argparse
import sys

from libs.config import ConfigError, JobConfig, load_config
from libs.paths import REPO_ROOT, RUN_DIR


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
    ap.add_argument("--embedded", action="store_true", help="run against the local broker and .run/ (README)")
    ap.add_argument("--on-cluster", action="store_true", help="use the cluster's Spark session (Databricks)")
    return ap.parse_args(argv)


def job_config(args: argparse.Namespace) -> JobConfig:
    overrides = {k: getattr(args, k) for k in
                 ("bootstrap", "topic", "target_ddl", "targets", "delta_root", "checkpoint", "available_now")}
    return load_config(args.conf or REPO_ROOT / "conf" / "job.yaml", overrides)


def run_embedded(cfg: JobConfig) -> int:
    """Until the full pipeline is wired (issues #4-#6), the embedded default runs the smoke path:
    local broker -> frames -> Spark -> pandas_udf -> Delta, and says so."""
    from pipelines.kafka import broker_config
    from libs.kafka_broker import start
    from pipelines.smoke import produce, run_smoke
    from pipelines.spark_session import SessionOptions, build_session

    broker = start(broker_config())
    print(f"cdc-replicate --embedded: local Kafka broker at {broker['bootstrap']}", file=sys.stderr)
    print("cdc-replicate --embedded: the replication pipeline is not wired yet; running the smoke path "
          "(frames -> Kafka -> Spark pandas_udf -> Delta)", file=sys.stderr)
    topic = "smoke"
    produce(broker["bootstrap"], topic, 300)
    spark = build_session(SessionOptions(app_name="cdc-replicate-embedded"))
    delta = str(RUN_DIR / "delta" / "smoke")
    rows = run_smoke(spark, broker["bootstrap"], topic, delta, str(RUN_DIR / "checkpoint" / "smoke"))
    print(f"cdc-replicate --embedded: Delta table {delta} holds {rows} decoded frames")
    spark.stop()
    return 0


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        cfg = job_config(args)
    except ConfigError as e:
        print(f"cdc-replicate: {e}", file=sys.stderr)
        return 2
    if args.embedded:
        from libs.kafka_broker import BrokerError

        try:
            return run_embedded(cfg)
        except BrokerError as e:
            print(f"cdc-replicate: {e}", file=sys.stderr)
            return 1
    print("cdc-replicate: the Kafka -> Delta replication stages are not implemented yet (issues #4, #5)",
          file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())

"""The local driver JVM's class-data archive (AppCDS): `scripts/dev setup` builds it once.

A local job's JVM loads and verifies some 20,000 classes (Spark, Delta, Parquet, Arrow, Kafka)
before its first batch is written. With an archive of them the JVM maps them instead: on this
project's 2-core machines a cold `cdc-replicate` reached its query in 9.5 s instead of 13.5 s
(medians; bench/jvm_start.py, bench/README.md "A cold job's start"); its first batch's JIT and
generated code stay what they cost.

The archive is trained by the real job: a private broker, the simulator's minimal-image
transactions, one `--available-now` replication into a scratch directory, so the classes of
every stage (decode, assemble, rows, MERGE with deletion vectors, appends) are in it. The JVM
writes it at exit (-XX:ArchiveClassesAtExit); it is moved into place only when whole.
A JVM that cannot use it (another JDK, other jars) ignores it (spark_session.class_archive_options);
`scripts/dev setup` builds it again when the jars, the venv or the JDK change.

    python -m pipelines.jvm_archive [ARCHIVE]     (default libs.runtime.paths.JVM_CLASS_ARCHIVE)
"""
from __future__ import annotations

import dataclasses
import subprocess
import sys
import tempfile
from pathlib import Path

from libs.config.job import JobConfig
from libs.local.kafka_broker import free_port_pair, start, stop
from libs.runtime.paths import JVM_CLASS_ARCHIVE
from pipelines.kafka import broker_config
from pipelines.replicate import build_query, make_applier
from pipelines.job.spark_session import SessionOptions, build_session

TRAINING_TRANSACTIONS = 200  # every simulated table and operation; the classes, not the rows, matter
TOPIC, SOURCE = "jvm-archive-training", "training"


def _simulate(bootstrap: str) -> None:
    subprocess.run([sys.executable, "-m", "pipelines.simulate", "--bootstrap", bootstrap, "--topic", TOPIC,
                    "--source", SOURCE, "--transactions", str(TRAINING_TRANSACTIONS), "--seed", "1",
                    "--row-image", "minimal", "--ddl-rate", "0"], check=True, stdout=subprocess.DEVNULL)


def _replicate_once(bootstrap: str, work: Path, archive: Path) -> None:
    """One available-now run of the job in a JVM that writes `archive` when it exits; returns
    after that JVM has exited (the archive is written by then)."""
    spark = build_session(SessionOptions(app_name="cdc-jvm-archive", dump_classes_to=archive,
                                         class_archive=None, warehouse_dir=str(work / "warehouse")))
    jvm = spark.sparkContext._gateway.proc  # PySpark's spark-submit process of the local JVM
    cfg = dataclasses.replace(JobConfig(), bootstrap=bootstrap, topic=TOPIC, available_now=True,
                              delta_root=str(work / "delta"), checkpoint=str(work / "checkpoint"))
    query = build_query(spark, cfg, make_applier(cfg))
    query.awaitTermination()
    failure = query.exception()
    spark.stop()
    jvm.stdin.close()  # PySpark's gateway exits when its stdin closes: a normal exit, which dumps
    jvm.wait(timeout=300)
    if failure is not None:
        raise RuntimeError(f"the training run failed: {failure}")


def build(archive: Path = JVM_CLASS_ARCHIVE) -> None:
    archive.parent.mkdir(parents=True, exist_ok=True)
    partial = archive.with_name(archive.name + ".partial")
    partial.unlink(missing_ok=True)
    with tempfile.TemporaryDirectory(prefix="cdc-jvm-archive-") as tmp:
        work = Path(tmp)
        broker = broker_config(free_port_pair(), str(work / "kafka"))
        start(broker)
        try:
            _simulate(broker.bootstrap)
            _replicate_once(broker.bootstrap, work, partial)
        finally:
            stop(broker)
    if not partial.is_file():
        raise RuntimeError(f"the JVM wrote no class archive at {partial}")
    partial.replace(archive)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    target = Path(argv[0]) if argv else JVM_CLASS_ARCHIVE
    try:
        build(target)
    except Exception as exc:  # noqa: BLE001 - set-up prints one line; jobs run without an archive
        print(f"jvm_archive: no class archive ({type(exc).__name__}: {exc})", file=sys.stderr)
        return 1
    print(f"jvm_archive: {target} ({target.stat().st_size // 2**20} MiB)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())

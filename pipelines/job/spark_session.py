"""The one SparkSession factory (STYLE.md: sessions are built only here and in tests/conftest.py).

Local: `local[2]`, Delta's SQL extension and catalog, the Delta and Kafka-source jars that
`scripts/dev setup` resolved from Maven Central into .cache/jars/spark. On a cluster
(Databricks) the runtime already has Delta and the Kafka source: no local jars are added.
"""
from __future__ import annotations

import os
import sys
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from libs.runtime.log4j_conf import logger_settings
from libs.runtime.paths import JVM_CLASS_ARCHIVE, REPO_ROOT, SPARK_JARS_DIR
from pipelines.job.driver_tie import halt_when_driver_dies

LOG4J_CONF = REPO_ROOT / "conf" / "log4j2.properties"  # the local driver's logging: WARN, no noise


CODEGEN_CACHE_ENTRIES = 2000  # static conf, also set on the Databricks cluster (databricks.yml)
# Spark shows an option or setting whose name (or value) matches these as *********(redacted): in
# its UI, event log, `explain`. Spark's default, `(?i)secret|password|token|access[.]?key`, misses
# the Kafka source's options that hold secrets (README "Security"): the JAAS line with the SASL
# password (kafka.sasl.jaas.config) and the client's private key (kafka.ssl.keystore.key). The
# regex is a static conf, also set on the Databricks cluster (databricks.yml); the options one is
# set at run time too, on a cluster's session (build_session).
REDACTION_REGEX = r"(?i)secret|password|token|access[.]?key|sasl[.]jaas[.]config|ssl[.]keystore[.]key"
OPTIONS_REDACTION_REGEX = r"(?i)url|sasl[.]jaas[.]config|ssl[.]keystore[.]key|password|secret"
# Parts of plan texts (`explain`, the UI's and event log's plan descriptions) replaced by Spark: an
# unstarted Kafka stream's plan also prints its options unredacted (the v1 StreamingRelation's
# DataSource), so the secrets themselves: a JAAS password or client secret, a PEM private key, the
# key's passphrase (up to the next option).
STRING_REDACTION_REGEX = (r'(?i)(?:password|clientSecret)="(?:[^"\\]|\\.)*"'
                          r"|-----BEGIN (?:ENCRYPTED )?PRIVATE KEY-----[^-]*"
                          r"-----END (?:ENCRYPTED )?PRIVATE KEY-----"
                          r"|ssl[.]key[.]password -> (?:(?!, [\w.]+ -> ).)*")
REDACTION_CONFS = {"spark.sql.redaction.options.regex": OPTIONS_REDACTION_REGEX,
                   "spark.sql.redaction.string.regex": STRING_REDACTION_REGEX}  # settable at run time


@dataclass(frozen=True)
class SessionOptions:
    app_name: str = "binlog-cdc"
    master: str = "local[2]"  # the CI machine has 2 cores
    on_cluster: bool = False  # True on Databricks: use the cluster's session and jars as they are
    ui: bool = False
    shuffle_partitions: int = 2
    driver_memory: str = "4g"
    warehouse_dir: str | None = None
    # A local Hive metastore (embedded Derby) and the warehouse of its managed tables in this
    # directory: catalog tables (JobConfig.catalog_schema) that outlive the process. Spark's
    # default catalog is in memory: a restarted job would find its schema and tables gone.
    metastore_dir: str | None = None
    extra_conf: tuple[tuple[str, str], ...] = ()  # applied last, e.g. a benchmark's trial setting
    jars_dir: Path = SPARK_JARS_DIR  # the Delta and Kafka-source jars of a local session
    verbose: bool = False  # Spark's own warnings too (spark_warnings_on)
    # The driver JVM maps the classes it loads from this archive when it is there (AppCDS,
    # pipelines/jvm_archive.py): a local job reads its topic ~4 s sooner (bench/jvm_start.py).
    class_archive: Path | None = JVM_CLASS_ARCHIVE
    dump_classes_to: Path | None = None  # write an archive of the classes loaded, at JVM exit


class SparkJarsMissing(RuntimeError):
    """The local session's jars are not there: the entry points print it as their one line."""


def local_jars(jars_dir: Path = SPARK_JARS_DIR) -> list[str]:
    jars = sorted(str(p) for p in jars_dir.glob("*.jar"))
    if not any("delta-spark" in j for j in jars) or not any("spark-sql-kafka" in j for j in jars):
        raise SparkJarsMissing(f"Delta/Kafka jars missing in {jars_dir}: run `scripts/dev setup`")
    return jars


@contextmanager
def logger_off(spark, name: str) -> Iterator[None]:
    """Silence one JVM logger (log4j2) for the duration, then restore its level."""
    jvm = spark.sparkContext._jvm
    configurator, level = (jvm.org.apache.logging.log4j.core.config.Configurator,
                           jvm.org.apache.logging.log4j.Level)
    before = jvm.org.apache.logging.log4j.LogManager.getLogger(name).getLevel()
    configurator.setLevel(name, level.OFF)
    try:
        yield
    finally:
        configurator.setLevel(name, before)


def build_session(opts: SessionOptions = SessionOptions()):
    from pyspark.sql import SparkSession

    if opts.on_cluster:
        spark = SparkSession.builder.appName(opts.app_name).getOrCreate()
        try:
            for key, value in REDACTION_CONFS.items():
                spark.conf.set(key, value)
        except Exception:  # noqa: BLE001 - a platform that fixes them: the cluster's spark.redaction.regex holds
            pass
        return spark
    # Python workers must run this interpreter (the project venv), not whatever `python3` is on
    # PATH; Spark's launcher reads this from the environment of the driver process.
    os.environ["PYSPARK_PYTHON"] = sys.executable
    builder = SparkSession.builder.appName(opts.app_name).master(opts.master)
    for key, value in [*local_confs(opts).items(), *storage_confs(opts).items(), *opts.extra_conf]:
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    halt_when_driver_dies(spark)  # no write of a dead driver's JVM (issue #39 item 3)
    spark.sparkContext.setLogLevel("WARN")
    if opts.verbose:
        spark_warnings_on(spark)
    return spark


def local_confs(opts: SessionOptions) -> dict[str, str]:
    """A local session's Delta, Python worker and performance settings."""
    return {
        "spark.jars": ",".join(local_jars(opts.jars_dir)),
        "spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension",
        "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
        "spark.ui.enabled": str(opts.ui).lower(),
        "spark.ui.showConsoleProgress": "false",
        "spark.redaction.regex": REDACTION_REGEX,
        **REDACTION_CONFS,
        "spark.sql.shuffle.partitions": str(opts.shuffle_partitions),
        # Delta rebuilds a table's state (files, txn versions) in `snapshotPartitions` tasks,
        # default 50: on 2 cores that was ~1,150 of the ~1,370 tasks of one apply batch over 5
        # small tables (bench/README.md "Apply", per-batch jobs and tasks).
        "spark.databricks.delta.snapshotPartitions": str(opts.shuffle_partitions),
        # Generated classes are cached by their code, 100 by default: an apply batch over five
        # tables makes more than that (each table's projections, MERGE, Delta's per-file
        # statistics), so every batch compiled them again. With 2,000 they stayed cached; steady batches
        # of ~2,900 changes 9.5-15.5 s -> 7.3-8.7 s (bench/README.md "Session 6").
        "spark.sql.codegen.cache.maxEntries": str(CODEGEN_CACHE_ENTRIES),
        # Python workers start without the pyspark/py4j zips and spark-core's jar on sys.path:
        # re-reading their directories cost 126-180 ms of CPU per Python task (libs/runtime/worker_path.py).
        "spark.python.daemon.module": "pipelines.job.worker_daemon",
        "spark.driver.memory": opts.driver_memory,
        # The executor is the driver's own JVM here. After a pause longer than the heartbeat
        # timeout (120 s: a VM snapshot, a laptop's sleep) the driver expired it, its heartbeats
        # then failed, and 60 failures later it exited the JVM, ending the job ~10 minutes after
        # the pause ("Exit as unable to send heartbeats to driver"; bench/vm_pause.py).
        "spark.storage.blockManagerHeartbeatTimeoutMs": str(24 * 3600 * 1000),
        "spark.sql.session.timeZone": "UTC",
        "spark.sql.execution.arrow.pyspark.enabled": "true",
        # Column DEFAULTs on Delta tables carry the replica-side defaults (WL#5092 R1).
        "spark.databricks.delta.properties.defaults.feature.allowColumnDefaults": "supported",
        # The assemble stage's state is one small row per source: Spark's in-memory store (its
        # default) commits it ~250 ms a micro-batch faster than RocksDB's checkpointing did
        # (bench/README.md, issue #21 goal 3). A checkpoint keeps the provider it started with
        # (Spark persists it in the offset log), so existing RocksDB checkpoints go on as they are.
        "spark.sql.streaming.stateStore.providerClass":
            "org.apache.spark.sql.execution.streaming.state.HDFSBackedStateStoreProvider",
    }


def storage_confs(opts: SessionOptions) -> dict[str, str]:
    """Where a local session keeps catalog tables (a warehouse, or a Derby metastore with Hive
    support), and the driver JVM's options (the log4j configuration of a checkout)."""
    confs, java_options = {}, []
    if LOG4J_CONF.exists():  # a checkout (scripts/dev); an installed wheel keeps Spark's default
        java_options.append(f"-Dlog4j2.configurationFile={LOG4J_CONF.as_uri()}")
    java_options += class_archive_options(opts)
    if opts.warehouse_dir:
        confs["spark.sql.warehouse.dir"] = opts.warehouse_dir
    if opts.metastore_dir:
        root = opts.metastore_dir.rstrip("/")
        confs.update({"spark.sql.catalogImplementation": "hive", "spark.sql.warehouse.dir": root,
                      "spark.hadoop.javax.jdo.option.ConnectionURL":
                          f"jdbc:derby:;databaseName={root}/_metastore_db;create=true"})
        java_options.append(f"-Dderby.system.home={root}")
    if java_options:
        confs["spark.driver.extraJavaOptions"] = " ".join(java_options)
    return confs


def class_archive_options(opts: SessionOptions) -> list[str]:
    """The driver JVM's class-data sharing flags. An archive the JVM cannot use (another JDK, other
    jars) is ignored, silently: its CDS warnings would be lines on a job's stderr, whose stop is
    one line (README "Errors")."""
    quiet = "-Xlog:cds=off,cds+dynamic=off"
    if opts.dump_classes_to is not None:
        return [f"-XX:ArchiveClassesAtExit={opts.dump_classes_to}", quiet]
    if opts.class_archive is not None and opts.class_archive.is_file():
        return [f"-XX:SharedArchiveFile={opts.class_archive}", quiet]
    return []


def kafka_class_prefix(spark) -> str:
    """The package prefix of the Kafka client classes Spark's Kafka source uses, for the class names
    a JAAS line names: "kafkashaded." where they are shaded (Databricks Runtime), else ""."""
    try:
        spark.sparkContext._jvm.java.lang.Class.forName(
            "kafkashaded.org.apache.kafka.common.security.plain.PlainLoginModule")
        return "kafkashaded."
    except Exception:  # noqa: BLE001 - Py4JJavaError (not shaded), or no JVM at hand (Spark Connect)
        return ""


def spark_warnings_on(spark) -> None:
    """Every logger conf/log4j2.properties quiets back at WARN, its filters removed: Spark's own
    warnings, for `--verbose`."""
    if not LOG4J_CONF.exists():
        return
    jvm = spark.sparkContext._jvm
    context = jvm.org.apache.logging.log4j.LogManager.getContext(False)
    config = context.getConfiguration()
    for name in logger_settings(LOG4J_CONF.read_text()):
        logger = config.getLoggerConfig(name)
        if logger.getFilter() is not None:
            logger.removeFilter(logger.getFilter())
        logger.setLevel(jvm.org.apache.logging.log4j.Level.WARN)
    context.updateLoggers()

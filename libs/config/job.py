"""Job configuration: one frozen dataclass, loaded once (file, then command-line overrides),
validated, with a doc line per field (STYLE.md practice 11). Libraries receive it as an argument;
nothing here reads the environment.
"""
from __future__ import annotations

from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any

from libs.settings.errors import ConfigError, one_line, quoted  # noqa: F401  (one_line: entry points)
from libs.settings.fields import check_fields, setting
from libs.config.sections import AssemblySettings, RowsSettings, TablesSettings, WritesSettings  # noqa: F401
from libs.settings.kafka_security import KafkaSecurity
from libs.settings.yaml_files import YamlFileError, read_yaml_file
from libs.config.bad_input import BadInputPolicy, accepted_positions
from libs.contracts.position import BinlogPosition, KafkaPosition
from libs.binlog.limits import DEFAULT_LIMITS, DecodeLimits
from libs.tables.table_location import TableRoot, parse_catalog_schema

POLICIES = ("fail", "quarantine")
EXEC_MODES = ("strict", "idempotent")
SCHEMA_CHANGES_EVOLVE, SCHEMA_CHANGES_FAIL, SCHEMA_CHANGES_IGNORE = "evolve", "fail", "ignore"
# README "Schema changes"
SCHEMA_CHANGES = (SCHEMA_CHANGES_EVOLVE, SCHEMA_CHANGES_FAIL, SCHEMA_CHANGES_IGNORE)
SHADOW_REMOVE, SHADOW_KEEP = "remove", "keep"  # shadow_tables (libs/apply/shadow_tables.py)
SHADOW_POLICIES = (SHADOW_REMOVE, SHADOW_KEEP)


@dataclass(frozen=True)
class JobConfig:
    bootstrap: str = setting("Kafka bootstrap servers, host:port[,host:port]", "127.0.0.1:19092")
    topic: str = setting("Kafka topic of raw binlog frames (key = source id)", "binlog")
    kafka_security: KafkaSecurity = setting(
        "How the job's Kafka source connects: TLS, SASL login, certificates (a mapping of some fields of "
        "libs/settings/kafka_security.py KafkaSecurity, the same settings as cdc-ship's --kafka-* options; "
        "secrets from files or the environment only; README \"Security\")", default_factory=KafkaSecurity)
    topic_secret_file: str | None = setting(
        "File holding the topic secret shared with cdc-ship (--topic-secret-file; at least 32 bytes, "
        "readable by its owner only): every record's cdc_tag is verified and one that does not verify is "
        "quarantined (kind kafka_record); unset: the environment variable CDC_TOPIC_SECRET, else no record "
        "is checked (libs/contracts/topic_tag.py; README \"Who may write the topic\")")
    topic_previous_secret_file: str | None = setting(
        "While the topic secret is rotated: the previous secret's file, whose tags are still taken; unset: "
        "the environment variable CDC_TOPIC_PREVIOUS_SECRET, else none")
    delta_root: str = setting("Directory (or cloud URI) under which target Delta tables live", ".run/delta")
    catalog_schema: str | None = setting(
        "'catalog.schema': every target and _cdc_* table is the managed catalog table catalog.schema.<name> "
        "(the name of its directory under delta_root otherwise) of the session's catalog: Unity Catalog on "
        "Databricks, spark_catalog locally (the schema is created if missing); the lineage views live beside "
        "them (libs/tables/table_location.py). null: Delta tables at paths under delta_root", None)
    checkpoint: str = setting("Spark checkpoint directory: Kafka offsets and assembler state",
                              ".run/checkpoint")
    target_ddl: str | None = setting("File of CREATE TABLE statements declaring the replica's tables")
    targets: str | None = setting("YAML file of target declarations (names, keys, defaults, capabilities)")
    available_now: bool = setting("Process everything currently in the topic, then exit", False)
    trigger_seconds: float = setting("Micro-batch trigger interval when running continuously", 1.0,
                                  minimum=0.001)
    max_offsets_per_trigger: int = setting(
        "Upper bound of Kafka records per micro-batch. A backlog drains in batches this large: each pays a "
        "batch's fixed cost once (a target's MERGE scans its table whatever the batch holds)", 500_000,
        minimum=1)
    kafka_read_tasks: int | None = setting(
        "Spark tasks that read a micro-batch's Kafka records: a topic partition's offsets are split over "
        "them (the Kafka source's minPartitions; the assemble stage puts each source's records back in "
        "offset order); null: the Spark context's defaultParallelism (its cores), read when the query starts",
        None, minimum=1)
    metrics_port: int | None = setting("Serve Prometheus metrics (lag, counts; libs/runtime/metrics.py) on "
                                    "http://127.0.0.1:PORT/metrics; null: none", None, minimum=1)
    unknown_event_policy: str = setting("Unknown non-ignorable event (WL#4033): fail | quarantine", "fail",
                                     choices=POLICIES)
    bad_input_policy: str = setting("A frame the job cannot decode or place (truncated, bad checksum, over a "
                                 "decode limit, a row image not matching its table map, a cut "
                                 "transaction): quarantine (go on with the transactions after it) | fail "
                                 "(stop before applying the batch; libs/config/bad_input.py)", "quarantine",
                                 choices=POLICIES)
    accept_bad_input_through: tuple[tuple[str, BinlogPosition | KafkaPosition], ...] = setting(
        "Per source, the binlog position (FILE:POS) through which bad input already looked at is "
        "quarantined without stopping, whatever the policies say: {source: 'mdb-bin.000003:1234'}; per "
        "topic partition, the Kafka offset through which records that are not the pipeline's (kind "
        "kafka_record, bad_snapshot_record, bad_heartbeat_record; libs/stages/kafka_input.py) are: "
        "{'kafka:TOPIC:PARTITION': OFFSET}", ())
    accept_schema_changes_through: tuple[tuple[str, BinlogPosition], ...] = setting(
        "Per source, the binlog position (FILE:POS) through which DDL the job stopped at is accepted and "
        "followed, each DDL looked at once: one that schema_changes: fail stopped at, or an added GENERATED "
        "/ AUTO_INCREMENT column (its batch writes the DEFAULT): {source: 'mdb-bin.000003:1234'}", ())
    statement_format_policy: str = setting("Statement DML for a rows-only target (WL#3303): fail | "
                                        "quarantine", "fail", choices=POLICIES)
    undeclared_tables: str = setting("A row or statement change for a selected table "
                                  "(tables.include/exclude) without a target (declared, or from the source's "
                                  "schema): fail (stop the batch) | quarantine (change log + "
                                  "_cdc_quarantine) | ignore (change log only); DDL of such tables is only "
                                  "recorded (pipelines/apply/applier.py)",
                                  "fail", choices=(*POLICIES, "ignore"))
    schema_changes: str = setting("DDL of a replicated table (a declared target follows it as a replica's "
                               "table does, libs/schema_history/declared_schemas.py): evolve (the Delta "
                               "table follows: ADD / DROP / RENAME / widening MODIFY COLUMN, new tables) | "
                               "fail (stop before the batch holding it writes anything, naming the DDL and "
                               "its position) | ignore (the target keeps the snapshot's columns; rows are "
                               "still read with the schema at their position)", "evolve",
                               choices=SCHEMA_CHANGES)
    shadow_tables: str = setting("The working tables of online schema change tools (pt-online-schema-change "
                              "_t_new/_t_old, gh-ost _t_gho/_t_ghc/_t_del, of a followed t): remove (their "
                              "Delta table goes once the server renamed them away or dropped them: their "
                              "rows are in t; libs/apply/shadow_tables.py) | keep (as any table)",
                              SHADOW_REMOVE, choices=SHADOW_POLICIES)
    exec_mode: str = setting("Row not found / duplicate key: strict (stop) | idempotent (skip+quarantine)",
                          "strict", choices=EXEC_MODES)
    target_mirror_max_rows: int = setting("Target tables up to this many rows are kept on the driver between "
                                       "batches, sparing a Delta read per batch (0: never)", 100_000,
                                       minimum=0)
    target_copy_max_rows: int = setting(
        "Bigger target tables up to this many rows, keyed by one integer primary key (their only unique "
        "key), current rows with hard deletes, are kept on the driver as a columnar copy (Arrow, sorted by "
        "the key: ~250 MB per million sysbench rows) that answers each batch's touched-row read in "
        "milliseconds instead of a Delta scan; loaded again after a commit not the job's "
        "(libs/apply/keyed_copy.py; 0: never)", 0, minimum=0)
    target_overwrite_max_rows: int = setting("Mirrored target tables of at most this many rows are written "
                                          "by replacing the whole table (one write) instead of a MERGE "
                                          "(0: always MERGE)", 10_000, minimum=0)
    executor_apply_min_changes: int | None = setting(
        "A target table with at least this many row changes in a micro-batch is replayed on the executors, "
        "split by its key where the rules allow (libs/apply/partition.py), and MERGEd from there: nothing of "
        "it is collected to the driver; a table's snapshot rows, as many or more, are made target rows there "
        "and written as new rows (pipelines/apply/snapshot_rows.py). Smaller parts, and row changes in a "
        "batch holding DDL, truncate, snapshot or statement changes, replay on the driver (0: every table "
        "that can; null: never)", 20_000, minimum=0)
    executor_fold: bool = setting(
        "On the executors, fold a table's row changes per primary key in Arrow (libs/apply/fold.py: the "
        "replay's rules, per row instead of per change) and replay change by change only what the fold "
        "cannot prove safe (false: replay every change)", True)
    idle_source_timeout_s: int = setting("Seconds after which an idle source's state times out", 3600,
                                      minimum=1)
    decode_limits: DecodeLimits = setting("What one frame may cost to decode (a mapping, each key a field "
                                       "of libs/binlog/limits.py DecodeLimits); beyond it the frame is "
                                       "quarantined", DEFAULT_LIMITS)
    assembly: AssemblySettings = setting("Open-transaction buffering and segment sizes (a mapping of some "
                                      "fields of AssemblySettings)", default_factory=AssemblySettings)
    rows: RowsSettings = setting("The rows stage (a mapping of some fields of RowsSettings)",
                              default_factory=RowsSettings)
    tables: TablesSettings = setting("Which tables are replicated and whether targets come from the source "
                                  "(a mapping of some fields of TablesSettings)",
                                  default_factory=TablesSettings)
    writes: WritesSettings = setting("Deletion vectors, compaction and vacuum (a mapping of some fields of "
                                  "WritesSettings)", default_factory=WritesSettings)

    def __post_init__(self) -> None:
        object.__setattr__(self, "decode_limits", _section("decode_limits", DecodeLimits, self.decode_limits))
        object.__setattr__(self, "kafka_security", _section("kafka_security", KafkaSecurity,
                                                            self.kafka_security))
        for name in ("accept_bad_input_through", "accept_schema_changes_through"):
            object.__setattr__(self, name, _accepted(name, getattr(self, name),
                                                     kafka=name == "accept_bad_input_through"))
        object.__setattr__(self, "assembly", _section("assembly", AssemblySettings, self.assembly))
        object.__setattr__(self, "rows", _section("rows", RowsSettings, self.rows))
        object.__setattr__(self, "tables", _section("tables", TablesSettings, self.tables))
        object.__setattr__(self, "writes", _section("writes", WritesSettings, self.writes))
        check_fields(self, skip=_SECTIONS)
        if ":" not in self.bootstrap:
            raise ConfigError(f"bootstrap: must be host:port, got {quoted(self.bootstrap)}")
        if self.catalog_schema is not None:
            try:
                parse_catalog_schema(self.catalog_schema)
            except ValueError as e:
                raise ConfigError(f"catalog_schema: {e}") from None

    @property
    def table_root(self) -> TableRoot:
        """Where the job's tables live: paths under delta_root, or catalog_schema's tables."""
        return TableRoot.of(self.delta_root, self.catalog_schema)

    @property
    def bad_input(self) -> BadInputPolicy:
        return BadInputPolicy(self.unknown_event_policy, self.bad_input_policy, self.accept_bad_input_through)


# fields converted and checked by their own function
_SECTIONS = ("decode_limits", "accept_bad_input_through", "accept_schema_changes_through", "assembly", "rows",
             "tables", "writes", "kafka_security")


def _section(name: str, kind: type, value: Any) -> Any:
    """A nested section: an instance of `kind`, or a mapping of some of its fields (the others
    keep their defaults); an unknown key or a bad value is one line naming `name.field`."""
    if isinstance(value, kind):
        return value
    if value is None:
        return kind()
    known = sorted(f.name for f in fields(kind))
    if not isinstance(value, dict):
        raise ConfigError(f"{name} must be a mapping of {known}, got {quoted(value)}")
    unknown = sorted(map(str, set(value) - set(known)))
    if unknown:
        raise ConfigError(f"{name}: unknown setting(s) {quoted(unknown)}; known: {known}")
    try:
        return kind(**value)
    except ValueError as e:  # ConfigError is one; DecodeLimits raises plain ValueError
        raise ConfigError(f"{name}.{e}") from None


def _accepted(name: str, value: Any,
              kafka: bool = False) -> tuple[tuple[str, BinlogPosition | KafkaPosition], ...]:
    """An accept setting; `kafka`: it may also name Kafka offsets (libs/config/bad_input.py)."""
    kinds = (BinlogPosition, KafkaPosition) if kafka else (BinlogPosition,)
    if isinstance(value, tuple) and all(isinstance(p, kinds) for _, p in value):
        return value
    try:
        return accepted_positions(value, kafka=kafka)
    except ValueError as e:
        raise ConfigError(f"{name}: {e}") from None


def field_docs(kind: type = JobConfig) -> dict[str, str]:
    return {f.name: f.metadata["doc"] for f in fields(kind)}


def _read_yaml(path: str | Path) -> dict[str, Any]:
    try:
        raw = read_yaml_file(path)
    except OSError as e:
        raise ConfigError(f"{path}: cannot read configuration: {e.strerror}") from None
    except YamlFileError as e:
        raise ConfigError(f"{path}: {e}") from None
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise ConfigError(f"{path}: top level must be a mapping")
    return raw


def _apply(base: JobConfig, values: dict[str, Any], origin: str) -> JobConfig:
    """`base` with `values` set; every error names `origin` (the file, or the command line)."""
    known = {f.name for f in fields(JobConfig)}
    unknown = sorted(map(str, set(values) - known))
    if unknown:
        raise ConfigError(f"{origin}: unknown setting(s) {quoted(unknown)}; known: {sorted(known)}")
    try:
        return replace(base, **values)
    except ConfigError as e:
        raise ConfigError(f"{origin}: {e}") from None


def load_config(path: str | Path | None = None, overrides: dict[str, Any] | None = None) -> JobConfig:
    """Defaults <- YAML file <- overrides (command-line flags; None values are ignored)."""
    cfg = JobConfig()
    if path is not None:
        cfg = _apply(cfg, _read_yaml(path), str(path))
    flags = {k: v for k, v in (overrides or {}).items() if v is not None}
    return _apply(cfg, flags, "command line") if flags else cfg

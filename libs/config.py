"""Job configuration: one frozen dataclass, loaded once (file, then command-line overrides),
validated, with a doc line per field (STYLE.md practice 11). Libraries receive it as an argument;
nothing here reads the environment.
"""
from __future__ import annotations

import math
import sys
import typing
from dataclasses import Field, dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from libs.assembler.model import AssemblerConfig, UnknownEventPolicy
from libs.config_errors import ConfigError, one_line, quoted  # noqa: F401  (one_line: entry points)
from libs.config_yaml import YamlFileError, read_yaml_file
from libs.bad_input import BadInputPolicy, BinlogPosition, KafkaPosition, accepted_positions
from libs.binlog.limits import DEFAULT_LIMITS, DecodeLimits
from libs.schema_history.shadow_tables import SHADOW_POLICIES, SHADOW_REMOVE
from libs.targets.model import DELETE_HARD, DELETE_MODES
from libs.snapshot.table_filter import TableFilter
from libs.stream_assembly import StageConfig
from libs.table_location import TableRoot, parse_catalog_schema
from libs.targets.model import HISTORIES

POLICIES = ("fail", "quarantine")
EXEC_MODES = ("strict", "idempotent")
SCHEMA_CHANGES_EVOLVE, SCHEMA_CHANGES_FAIL, SCHEMA_CHANGES_IGNORE = "evolve", "fail", "ignore"
SCHEMA_CHANGES = (SCHEMA_CHANGES_EVOLVE, SCHEMA_CHANGES_FAIL, SCHEMA_CHANGES_IGNORE)  # README "Schema changes"


def _doc(text: str, default: Any = None, *, minimum: float | None = None,
         choices: tuple[str, ...] = (), **kw) -> Any:
    """A field declared once: doc line, default and the bounds its type does not say."""
    if "default_factory" not in kw:
        kw["default"] = default
    return field(metadata={"doc": text, "minimum": minimum, "choices": choices}, **kw)


def _check_fields(obj: Any, skip: tuple[str, ...] = ()) -> None:
    """Every field of a config dataclass checked against its type and metadata."""
    hints = typing.get_type_hints(type(obj))
    for f in fields(obj):
        if f.name not in skip:
            _check_field(f, hints[f.name], getattr(obj, f.name))


@dataclass(frozen=True)
class AssemblySettings:
    """The `assembly` section: how the assemble stage buffers open transactions and cuts
    complete ones into segments (libs/assembler/model.py AssemblerConfig, libs/stream_assembly.py
    StageConfig; their defaults are these defaults)."""

    open_trx_timeout_seconds: int | None = _doc(
        "Quarantine a source's open transaction once the source was idle this long (checked when "
        "its state times out, idle_source_timeout_s); null: keep it until its commit arrives",
        AssemblerConfig.open_trx_timeout_seconds, minimum=1)
    chunk_max_events: int = _doc("Frames of an open transaction buffered in memory before a chunk is "
                                 "spilled to the checkpoint", AssemblerConfig.chunk_max_events, minimum=1)
    chunk_max_bytes: int = _doc("Raw bytes of an open transaction buffered in memory before a chunk is "
                                "spilled", AssemblerConfig.chunk_max_bytes, minimum=1)
    segment_max_frames: int = _doc("Frames per segment of a complete transaction: the unit of parallel "
                                   "row decoding", StageConfig.segment_max_frames, minimum=1)
    segment_max_bytes: int = _doc("Raw bytes per segment of a complete transaction",
                                  StageConfig.segment_max_bytes, minimum=1)

    def __post_init__(self) -> None:
        _check_fields(self)

    def stage_config(self, limits: DecodeLimits) -> StageConfig:
        """The assemble stage's configuration. Unknown events are always quarantined there like
        other bad input; the sink stops the stream after keeping the frame when
        unknown_event_policy says fail (libs/bad_input.py)."""
        assembler = AssemblerConfig(unknown_event_policy=UnknownEventPolicy.QUARANTINE,
                                    chunk_max_events=self.chunk_max_events,
                                    chunk_max_bytes=self.chunk_max_bytes,
                                    open_trx_timeout_seconds=self.open_trx_timeout_seconds)
        return StageConfig(assembler, segment_max_frames=self.segment_max_frames,
                           segment_max_bytes=self.segment_max_bytes, limits=limits)


@dataclass(frozen=True)
class RowsSettings:
    """The `rows` section: the rows stage (pipelines/stages/rows.py)."""

    partitions: int | None = _doc(
        "Tasks that decode row images, a transaction's segments dealt round-robin over them; null: the "
        "Spark context's defaultParallelism (its cores: local[2] gives 2, a cluster all its executors' "
        "cores), read when the query starts", None, minimum=1)

    def __post_init__(self) -> None:
        _check_fields(self)


@dataclass(frozen=True)
class WritesSettings:
    """The `writes` section: how the apply stage writes and keeps its Delta tables
    (libs/apply/maintenance.py, README "Deletion vectors, compaction and vacuum")."""

    deletion_vectors: bool = _doc(
        "Targets use Delta deletion vectors: a MERGE marks the rows it changes instead of rewriting their "
        "files. New targets are created with them, existing ones upgraded when the job first writes them "
        "(their readers then need Delta's deletionVectors reader feature); false: neither", True)
    optimize_after_commits: int = _doc("Compact a table (OPTIMIZE) once it has this many commits since its "
                                       "last compaction; each write of the job adds a file or a few "
                                       "(0: never)", 32, minimum=0)
    optimize_new_file_mb: int = _doc("Most compactions take only files under this size: what the batches wrote "
                                     "since the last one, so the table's big files are not rewritten each time "
                                     "(libs/apply/maintenance.py)", 2, minimum=1)
    optimize_wide_every: int = _doc("Every this-many-th compaction of a table takes every file under "
                                    "optimize_small_file_mb instead (1: every one)", 8, minimum=1)
    optimize_small_file_mb: int = _doc("Files under this size are compacted by a wide compaction", 32, minimum=1)
    optimize_target_file_mb: int = _doc("Size of the files a compaction writes", 128, minimum=1)
    vacuum_every_minutes: int | None = _doc("VACUUM each table this often (null: never)", 60, minimum=1)
    vacuum_retention_hours: int = _doc(
        "VACUUM deletes files that left a table more than this long ago: time travel and queries running "
        "longer than this can fail; below 168 (Delta's own floor) only when set here on purpose", 168,
        minimum=0)
    maintenance_per_batch: int = _doc("Compactions and vacuums run after one batch (the rest wait for the "
                                      "next ones)", 1, minimum=0)

    def __post_init__(self) -> None:
        _check_fields(self)
        if self.optimize_new_file_mb > self.optimize_small_file_mb:
            raise ConfigError(f"writes.optimize_new_file_mb ({self.optimize_new_file_mb}) must be at most "
                              f"writes.optimize_small_file_mb ({self.optimize_small_file_mb})")


@dataclass(frozen=True)
class TablesSettings:
    """The `tables` section: which source tables the job replicates, and where their targets
    come from (README "Onboarding")."""

    include: tuple[str, ...] = _doc("Regexes of 'db.table' (re.fullmatch) the job replicates; empty: every "
                                    "table", ())
    exclude: tuple[str, ...] = _doc("Regexes of 'db.table' the job leaves out, even when included; their "
                                    "changes are dropped before the apply stage", ())
    from_source: bool = _doc("A table without a declaration gets its target from the source's schema as a "
                             "snapshot publishes it (SHOW CREATE TABLE); a declaration always wins", True)
    history: str = _doc("What a target derived from the source keeps when the targets YAML sets no `history`: "
                        "current (each row's current state) | scd2 (one row per committed version of each "
                        "row; README \"History targets\")", "current", choices=HISTORIES)
    delete: str = _doc("What a source DELETE / TRUNCATE does to a target's Delta rows, for every target whose "
                       "declarations (targets YAML `delete:`, its `defaults:`) leave it unset: hard (the row goes) "
                       "| soft (it stays with _deleted = true and the deleting change's time and position; README "
                       "'Soft deletes'; not for `history: scd2` targets: they keep a delete as a closed version)", DELETE_HARD,
                       choices=DELETE_MODES)

    def __post_init__(self) -> None:
        for name in ("include", "exclude"):
            value = getattr(self, name)
            if isinstance(value, str):
                value = (value,)
            if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
                raise ConfigError(f"{name}: must be a list of regexes, got {quoted(value)}")
            object.__setattr__(self, name, tuple(value))
        _check_fields(self, skip=("include", "exclude"))
        try:  # the shipper's --include / --exclude rule, compiled once
            object.__setattr__(self, "_filter", TableFilter.compile(self.include, self.exclude,
                                                                    names=("include:", "exclude:")))
        except ValueError as e:
            raise ConfigError(str(e)) from None

    def selects(self, database: str, table: str) -> bool:
        """Does the job replicate source table database.table?"""
        return self._filter(f"{database}.{table}")


@dataclass(frozen=True)
class JobConfig:
    bootstrap: str = _doc("Kafka bootstrap servers, host:port[,host:port]", "127.0.0.1:19092")
    topic: str = _doc("Kafka topic of raw binlog frames (key = source id)", "binlog")
    delta_root: str = _doc("Directory (or cloud URI) under which target Delta tables live", ".run/delta")
    catalog_schema: str | None = _doc(
        "'catalog.schema': every target and _cdc_* table is the managed catalog table catalog.schema.<name> "
        "(the name of its directory under delta_root otherwise) of the session's catalog: Unity Catalog on "
        "Databricks, spark_catalog locally (the schema is created if missing); the lineage views live beside "
        "them (libs/table_location.py). null: Delta tables at paths under delta_root", None)
    checkpoint: str = _doc("Spark checkpoint directory: Kafka offsets and assembler state", ".run/checkpoint")
    target_ddl: str | None = _doc("File of CREATE TABLE statements declaring the replica's tables")
    targets: str | None = _doc("YAML file of target declarations (names, keys, defaults, capabilities)")
    available_now: bool = _doc("Process everything currently in the topic, then exit", False)
    trigger_seconds: float = _doc("Micro-batch trigger interval when running continuously", 1.0,
                                  minimum=0.001)
    max_offsets_per_trigger: int = _doc("Upper bound of Kafka records per micro-batch", 200_000, minimum=1)
    metrics_port: int | None = _doc("Serve Prometheus metrics (lag, counts; libs/metrics.py) on "
                                    "http://127.0.0.1:PORT/metrics; null: none", None, minimum=1)
    unknown_event_policy: str = _doc("Unknown non-ignorable event (WL#4033): fail | quarantine", "fail",
                                     choices=POLICIES)
    bad_input_policy: str = _doc("A frame the job cannot decode or place (truncated, bad checksum, over a "
                                 "decode limit, a row image not matching its table map, a cut "
                                 "transaction): quarantine (go on with the transactions after it) | fail "
                                 "(stop before applying the batch; libs/bad_input.py)", "quarantine",
                                 choices=POLICIES)
    accept_bad_input_through: tuple[tuple[str, BinlogPosition | KafkaPosition], ...] = _doc(
        "Per source, the binlog position (FILE:POS) through which bad input already looked at is "
        "quarantined without stopping, whatever the policies say: {source: 'mdb-bin.000003:1234'}; per "
        "topic partition, the Kafka offset through which records that are not the pipeline's (kind "
        "kafka_record, bad_snapshot_record, bad_heartbeat_record; libs/kafka_input.py) are: "
        "{'kafka:TOPIC:PARTITION': OFFSET}", ())
    accept_schema_changes_through: tuple[tuple[str, BinlogPosition], ...] = _doc(
        "Per source, the binlog position (FILE:POS) through which DDL the job stopped at is accepted and "
        "followed, each DDL looked at once: one that schema_changes: fail stopped at, or an added GENERATED / "
        "AUTO_INCREMENT column (its batch writes the DEFAULT): {source: 'mdb-bin.000003:1234'}", ())
    statement_format_policy: str = _doc("Statement DML for a rows-only target (WL#3303): fail | quarantine",
                                        "fail", choices=POLICIES)
    undeclared_tables: str = _doc("A row or statement change for a selected table (tables.include/exclude) "
                                  "without a target (declared, or from the source's schema): fail (stop the "
                                  "batch) | quarantine (change log + _cdc_quarantine) | ignore (change log "
                                  "only); DDL of such tables is only recorded (pipelines/apply/applier.py)",
                                  "fail", choices=(*POLICIES, "ignore"))
    schema_changes: str = _doc("DDL of a replicated table (a declared target follows it as a replica's table "
                               "does, libs/schema_history/declared_schemas.py): "
                               "evolve (the Delta table follows: ADD / DROP / RENAME / widening MODIFY "
                               "COLUMN, new tables) | fail (stop before the batch holding it writes "
                               "anything, naming the DDL and its position) | ignore (the target keeps the "
                               "snapshot's columns; rows are still read with the schema at their "
                               "position)", "evolve", choices=SCHEMA_CHANGES)
    shadow_tables: str = _doc("The working tables of online schema change tools (pt-online-schema-change "
                              "_t_new/_t_old, gh-ost _t_gho/_t_ghc/_t_del, of a followed t): remove (their "
                              "Delta table goes once the server renamed them away or dropped them: their rows "
                              "are in t; libs/schema_history/shadow_tables.py) | keep (as any table)",
                              SHADOW_REMOVE, choices=SHADOW_POLICIES)
    exec_mode: str = _doc("Row not found / duplicate key: strict (stop) | idempotent (skip+quarantine)",
                          "strict", choices=EXEC_MODES)
    target_mirror_max_rows: int = _doc("Target tables up to this many rows are kept on the driver between "
                                       "batches, sparing a Delta read per batch (0: never)", 100_000,
                                       minimum=0)
    target_overwrite_max_rows: int = _doc("Mirrored target tables of at most this many rows are written by "
                                          "replacing the whole table (one write) instead of a MERGE "
                                          "(0: always MERGE)", 10_000, minimum=0)
    executor_apply_min_changes: int | None = _doc(
        "A target table with at least this many row changes in a micro-batch is replayed on the executors, "
        "split by its key where the rules allow (libs/apply_partition.py), and MERGEd from there: nothing of "
        "it is collected to the driver; a table's snapshot rows, as many or more, are made target rows there and "
        "written as new rows (pipelines/apply/snapshot_rows.py). Smaller parts, and row changes in a batch "
        "holding DDL, truncate, snapshot or statement changes, replay on the driver (0: every table that can; "
        "null: never)", 20_000, minimum=0)
    idle_source_timeout_s: int = _doc("Seconds after which an idle source's state times out", 3600,
                                      minimum=1)
    decode_limits: DecodeLimits = _doc("What one frame may cost to decode (a mapping, each key a field "
                                       "of libs/binlog/limits.py DecodeLimits); beyond it the frame is "
                                       "quarantined", DEFAULT_LIMITS)
    assembly: AssemblySettings = _doc("Open-transaction buffering and segment sizes (a mapping of some "
                                      "fields of AssemblySettings)", default_factory=AssemblySettings)
    rows: RowsSettings = _doc("The rows stage (a mapping of some fields of RowsSettings)",
                              default_factory=RowsSettings)
    tables: TablesSettings = _doc("Which tables are replicated and whether targets come from the source "
                                  "(a mapping of some fields of TablesSettings)", default_factory=TablesSettings)
    writes: WritesSettings = _doc("Deletion vectors, compaction and vacuum (a mapping of some fields of "
                                  "WritesSettings)", default_factory=WritesSettings)

    def __post_init__(self) -> None:
        object.__setattr__(self, "decode_limits", _section("decode_limits", DecodeLimits, self.decode_limits))
        for name in ("accept_bad_input_through", "accept_schema_changes_through"):
            object.__setattr__(self, name, _accepted(name, getattr(self, name),
                                                     kafka=name == "accept_bad_input_through"))
        object.__setattr__(self, "assembly", _section("assembly", AssemblySettings, self.assembly))
        object.__setattr__(self, "rows", _section("rows", RowsSettings, self.rows))
        object.__setattr__(self, "tables", _section("tables", TablesSettings, self.tables))
        object.__setattr__(self, "writes", _section("writes", WritesSettings, self.writes))
        _check_fields(self, skip=_SECTIONS)
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
             "tables", "writes")


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


def _accepted(name: str, value: Any, kafka: bool = False) -> tuple[tuple[str, BinlogPosition | KafkaPosition], ...]:
    """An accept setting; `kafka`: it may also name Kafka offsets (libs/bad_input.py)."""
    kinds = (BinlogPosition, KafkaPosition) if kafka else (BinlogPosition,)
    if isinstance(value, tuple) and all(isinstance(p, kinds) for _, p in value):
        return value
    try:
        return accepted_positions(value, kafka=kafka)
    except ValueError as e:
        raise ConfigError(f"{name}: {e}") from None


# Java's long: Spark options and timeouts (idle_source_timeout_s * 1000 ms) are longs.
_LONG_MAX = 2 ** 63 // 1000


def _type_problem(kind: type, value: Any) -> str | None:
    """Why `value` is not a `kind` (str, bool, int, float), or None. bool is checked apart
    from int (True is an int in Python, and YAML reads `yes`/`true` as one); a float field
    takes an integer but no NaN or infinity."""
    if kind is bool:
        return None if isinstance(value, bool) else "must be true or false"
    if kind is int:
        if isinstance(value, bool) or not isinstance(value, int):
            return "must be an integer"
        return None if abs(value) <= _LONG_MAX else f"must be at most {_LONG_MAX}"
    if kind is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return "must be a number"
        # an int past float's range is no number either (math.isfinite(10**400) raises OverflowError)
        finite = math.isfinite(value) if isinstance(value, float) else abs(value) <= sys.float_info.max
        return None if finite else "must be a finite number"
    if kind is str:
        if not isinstance(value, str):
            return "must be a string"
        return None if value.strip() else "must not be empty"
    raise TypeError(f"JobConfig field type {kind!r} has no check")  # a programmer error


def _check_field(f: Field, hint: Any, value: Any) -> None:
    """The checks a field's declared type and metadata imply (STYLE.md practice 11)."""
    kinds = [k for k in typing.get_args(hint) if k is not type(None)] or [hint]
    optional = type(None) in typing.get_args(hint)
    if value is None:
        if not optional:
            raise ConfigError(f"{f.name}: required, got null")
        return
    problem = _type_problem(kinds[0], value)
    if problem is None and f.metadata.get("choices") and value not in f.metadata["choices"]:
        problem = f"must be one of {f.metadata['choices']}"
    minimum = f.metadata.get("minimum")
    if problem is None and minimum is not None and value < minimum:
        problem = f"must be >= {minimum}"
    if problem is not None:
        raise ConfigError(f"{f.name}: {problem}, got {quoted(value)}")


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

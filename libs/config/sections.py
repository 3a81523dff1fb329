"""The job configuration's nested sections (assembly, rows, writes, tables): each a frozen
dataclass of settings declared once with its doc line and checked when built (libs/config/job.py
reads them from the job's YAML)."""
from __future__ import annotations

from dataclasses import dataclass

from libs.stream.assembler.model import AssemblerConfig, UnknownEventPolicy
from libs.binlog.limits import DecodeLimits
from libs.settings.errors import ConfigError, quoted
from libs.settings.fields import check_fields, setting
from libs.snapshot.table_filter import TableFilter
from libs.stages.assembly import StageConfig
from libs.targets.model import DELETE_HARD, DELETE_MODES, HISTORIES

@dataclass(frozen=True)
class AssemblySettings:
    """The `assembly` section: how the assemble stage buffers open transactions and cuts
    complete ones into segments (libs/stream/assembler/model.py AssemblerConfig, libs/stages/assembly.py
    StageConfig; their defaults are these defaults)."""

    open_trx_timeout_seconds: int | None = setting(
        "Quarantine a source's open transaction once the source was idle this long (checked when "
        "its state times out, idle_source_timeout_s); null: keep it until its commit arrives",
        AssemblerConfig.open_trx_timeout_seconds, minimum=1)
    chunk_max_events: int = setting("Frames of an open transaction buffered in memory before a chunk is "
                                 "spilled to the checkpoint", AssemblerConfig.chunk_max_events, minimum=1)
    chunk_max_bytes: int = setting("Raw bytes of an open transaction buffered in memory before a chunk is "
                                "spilled", AssemblerConfig.chunk_max_bytes, minimum=1)
    segment_max_frames: int = setting("Frames per segment of a complete transaction: the unit of parallel "
                                   "row decoding", StageConfig.segment_max_frames, minimum=1)
    segment_max_bytes: int = setting("Raw bytes per segment of a complete transaction",
                                  StageConfig.segment_max_bytes, minimum=1)

    def __post_init__(self) -> None:
        check_fields(self)

    def stage_config(self, limits: DecodeLimits) -> StageConfig:
        """The assemble stage's configuration. Unknown events are always quarantined there like
        other bad input; the sink stops the stream after keeping the frame when
        unknown_event_policy says fail (libs/config/bad_input.py)."""
        assembler = AssemblerConfig(unknown_event_policy=UnknownEventPolicy.QUARANTINE,
                                    chunk_max_events=self.chunk_max_events,
                                    chunk_max_bytes=self.chunk_max_bytes,
                                    open_trx_timeout_seconds=self.open_trx_timeout_seconds)
        return StageConfig(assembler, segment_max_frames=self.segment_max_frames,
                           segment_max_bytes=self.segment_max_bytes, limits=limits)


@dataclass(frozen=True)
class RowsSettings:
    """The `rows` section: the rows stage (pipelines/stages/rows.py)."""

    partitions: int | None = setting(
        "Tasks that decode row images, a transaction's segments dealt round-robin over them; null: the "
        "Spark context's defaultParallelism (its cores: local[2] gives 2, a cluster all its executors' "
        "cores), read when the query starts", None, minimum=1)

    def __post_init__(self) -> None:
        check_fields(self)


@dataclass(frozen=True)
class WritesSettings:
    """The `writes` section: how the apply stage writes and keeps its Delta tables
    (libs/apply/maintenance.py, README "Deletion vectors, compaction and vacuum")."""

    deletion_vectors: bool = setting(
        "Targets use Delta deletion vectors: a MERGE marks the rows it changes instead of rewriting their "
        "files. New targets are created with them, existing ones upgraded when the job first writes them "
        "(their readers then need Delta's deletionVectors reader feature); false: neither", True)
    deletion_vector_commits: bool = setting(
        "A current target at a path that is not replaced whole (target_overwrite_max_rows) is written "
        "without scanning it: one Delta commit of deletion vectors at the changed rows' positions (from the "
        "replay's own read, a keyed copy, or an index of a mirrored table's rows) plus their new images; "
        "a table it cannot write so falls back to the MERGE (pipelines/apply/position_writes.py, issue #57); "
        "false: the MERGE", True)
    position_index_max_rows: int = setting(
        "deletion_vector_commits: a table's position index is kept on the driver up to this many rows "
        "(~50 bytes a row: libs/apply/position_index.py); a bigger table is written by the MERGE", 2_000_000,
        minimum=0)
    optimize_after_commits: int = setting("Compact a table (OPTIMIZE) once it has this many commits since "
                                       "its last compaction; each write of the job adds a file or a few "
                                       "(0: never)", 32, minimum=0)
    optimize_new_file_mb: int = setting("Most compactions take only files under this size: what the batches "
                                     "wrote since the last one, so the table's big files are not rewritten "
                                     "each time (libs/apply/maintenance.py)", 2, minimum=1)
    optimize_wide_every: int = setting("Every this-many-th compaction of a table takes every file under "
                                    "optimize_small_file_mb instead (1: every one)", 8, minimum=1)
    optimize_small_file_mb: int = setting("Files under this size are compacted by a wide compaction", 32,
                                          minimum=1)
    optimize_target_file_mb: int = setting("Size of the files a compaction writes", 128, minimum=1)
    vacuum_every_minutes: int | None = setting("VACUUM each table this often (null: never)", 60, minimum=1)
    vacuum_retention_hours: int = setting(
        "VACUUM deletes files that left a table more than this long ago: time travel and queries running "
        "longer than this can fail; below 168 (Delta's own floor) only when set here on purpose", 168,
        minimum=0)
    maintenance_per_batch: int = setting("Compactions and vacuums run after one batch (the rest wait for the "
                                      "next ones)", 1, minimum=0)

    def __post_init__(self) -> None:
        check_fields(self)
        if self.optimize_new_file_mb > self.optimize_small_file_mb:
            raise ConfigError(f"writes.optimize_new_file_mb ({self.optimize_new_file_mb}) must be at most "
                              f"writes.optimize_small_file_mb ({self.optimize_small_file_mb})")


@dataclass(frozen=True)
class TablesSettings:
    """The `tables` section: which source tables the job replicates, and where their targets
    come from (README "Onboarding")."""

    include: tuple[str, ...] = setting("Regexes of 'db.table' (re.fullmatch) the job replicates; empty: "
                                    "every table", ())
    exclude: tuple[str, ...] = setting("Regexes of 'db.table' the job leaves out, even when included; their "
                                    "changes are dropped before the apply stage", ())
    from_source: bool = setting("A table without a declaration gets its target from the source's schema as a "
                             "snapshot publishes it (SHOW CREATE TABLE); a declaration always wins", True)
    history: str = setting("What a target derived from the source keeps when the targets YAML sets no "
                        "`history`: current (each row's current state) | scd2 (one row per committed version "
                        "of each row; README \"History targets\")", "current", choices=HISTORIES)
    delete: str = setting("What a source DELETE / TRUNCATE does to a target's Delta rows, for every target "
                       "whose declarations (targets YAML `delete:`, its `defaults:`) leave it unset: hard "
                       "(the row goes) | soft (it stays with _deleted = true and the deleting change's time "
                       "and position; README 'Soft deletes'; not for `history: scd2` targets: they keep a "
                       "delete as a closed version)", DELETE_HARD,
                       choices=DELETE_MODES)

    def __post_init__(self) -> None:
        for name in ("include", "exclude"):
            value = getattr(self, name)
            if isinstance(value, str):
                value = (value,)
            if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
                raise ConfigError(f"{name}: must be a list of regexes, got {quoted(value)}")
            object.__setattr__(self, name, tuple(value))
        check_fields(self, skip=("include", "exclude"))
        try:  # the shipper's --include / --exclude rule, compiled once
            object.__setattr__(self, "_filter", TableFilter.compile(self.include, self.exclude,
                                                                    names=("include:", "exclude:")))
        except ValueError as e:
            raise ConfigError(str(e)) from None

    def selects(self, database: str, table: str) -> bool:
        """Does the job replicate source table database.table?"""
        return self._filter(f"{database}.{table}")

"""Job configuration: one frozen dataclass, loaded once (file, then command-line overrides),
validated, with a doc line per field (STYLE.md practice 11). Libraries receive it as an argument;
nothing here reads the environment.
"""
from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

import yaml

from libs.binlog.limits import DEFAULT_LIMITS, DecodeLimits, limit_docs

POLICIES = ("fail", "quarantine")
EXEC_MODES = ("strict", "idempotent")


class ConfigError(ValueError):
    pass


def _doc(text: str, default: Any = None, **kw) -> Any:
    return field(default=default, metadata={"doc": text}, **kw)


@dataclass(frozen=True)
class JobConfig:
    bootstrap: str = _doc("Kafka bootstrap servers, host:port[,host:port]", "127.0.0.1:19092")
    topic: str = _doc("Kafka topic of raw binlog frames (key = source id)", "binlog")
    delta_root: str = _doc("Directory (or cloud URI) under which target Delta tables live", ".run/delta")
    checkpoint: str = _doc("Spark checkpoint directory: Kafka offsets and assembler state", ".run/checkpoint")
    target_ddl: str | None = _doc("File of CREATE TABLE statements declaring the replica's tables")
    targets: str | None = _doc("YAML file of target declarations (names, keys, defaults, capabilities)")
    available_now: bool = _doc("Process everything currently in the topic, then exit", False)
    trigger_seconds: float = _doc("Micro-batch trigger interval when running continuously", 1.0)
    max_offsets_per_trigger: int = _doc("Upper bound of Kafka records per micro-batch", 200_000)
    unknown_event_policy: str = _doc("Unknown non-ignorable event (WL#4033): fail | quarantine", "fail")
    statement_format_policy: str = _doc("Statement DML for a rows-only target (WL#3303): fail | quarantine", "fail")
    exec_mode: str = _doc("Row not found / duplicate key: strict (stop) | idempotent (skip+quarantine)", "strict")
    target_mirror_max_rows: int = _doc("Target tables up to this many rows are kept on the driver between "
                                       "batches, sparing a Delta read per batch (0: never)", 100_000)
    target_overwrite_max_rows: int = _doc("Mirrored target tables of at most this many rows are written by "
                                          "replacing the whole table (one write) instead of a MERGE "
                                          "(0: always MERGE)", 10_000)
    idle_source_timeout_s: int = _doc("Seconds after which an idle source's state times out", 3600)
    decode_limits: DecodeLimits = _doc("What one frame may cost to decode (a mapping, each key a field "
                                       "of libs/binlog/limits.py DecodeLimits); beyond it the frame is "
                                       "quarantined", DEFAULT_LIMITS)

    def __post_init__(self) -> None:
        object.__setattr__(self, "decode_limits", decode_limits(self.decode_limits))
        if self.unknown_event_policy not in POLICIES:
            raise ConfigError(f"unknown_event_policy must be one of {POLICIES}, got {self.unknown_event_policy!r}")
        if self.statement_format_policy not in POLICIES:
            raise ConfigError(f"statement_format_policy must be one of {POLICIES}, got {self.statement_format_policy!r}")
        if self.exec_mode not in EXEC_MODES:
            raise ConfigError(f"exec_mode must be one of {EXEC_MODES}, got {self.exec_mode!r}")
        if not self.bootstrap or ":" not in self.bootstrap:
            raise ConfigError(f"bootstrap must be host:port, got {self.bootstrap!r}")
        if not self.topic:
            raise ConfigError("topic must not be empty")
        if self.trigger_seconds <= 0:
            raise ConfigError(f"trigger_seconds must be > 0, got {self.trigger_seconds}")
        if self.target_mirror_max_rows < 0:
            raise ConfigError(f"target_mirror_max_rows must be >= 0, got {self.target_mirror_max_rows}")
        if self.target_overwrite_max_rows < 0:
            raise ConfigError(f"target_overwrite_max_rows must be >= 0, got {self.target_overwrite_max_rows}")
        if self.max_offsets_per_trigger <= 0:
            raise ConfigError(f"max_offsets_per_trigger must be > 0, got {self.max_offsets_per_trigger}")


def decode_limits(value: Any) -> DecodeLimits:
    """The `decode_limits` section: a DecodeLimits, or a mapping of some of its fields (the
    others keep their defaults), each a positive integer."""
    if isinstance(value, DecodeLimits):
        return value
    if value is None:
        return DEFAULT_LIMITS
    if not isinstance(value, dict):
        raise ConfigError(f"decode_limits must be a mapping of {sorted(limit_docs())}, got {value!r}")
    unknown = sorted(set(value) - set(limit_docs()))
    if unknown:
        raise ConfigError(f"decode_limits: unknown setting(s) {unknown}; known: {sorted(limit_docs())}")
    try:
        return DecodeLimits(**value)
    except ValueError as e:
        raise ConfigError(f"decode_limits.{e}") from None


def field_docs() -> dict[str, str]:
    return {f.name: f.metadata["doc"] for f in fields(JobConfig)}


def load_config(path: str | Path | None = None, overrides: dict[str, Any] | None = None) -> JobConfig:
    """Defaults <- YAML file <- overrides (command-line flags; None values are ignored)."""
    values: dict[str, Any] = {}
    if path is not None:
        try:
            raw = yaml.safe_load(Path(path).read_text()) or {}
        except (OSError, yaml.YAMLError) as e:
            raise ConfigError(f"{path}: cannot read configuration: {e}") from e
        if not isinstance(raw, dict):
            raise ConfigError(f"{path}: top level must be a mapping")
        values.update(raw)
    values.update({k: v for k, v in (overrides or {}).items() if v is not None})
    known = {f.name for f in fields(JobConfig)}
    unknown = sorted(set(values) - known)
    if unknown:
        raise ConfigError(f"{path or 'overrides'}: unknown setting(s) {unknown}; known: {sorted(known)}")
    try:
        return replace(JobConfig(), **values)
    except TypeError as e:
        raise ConfigError(f"{path or 'overrides'}: {e}") from e

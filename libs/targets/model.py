"""The Target model: one replica-side table as the apply stage sees it (frozen, validated at load).

A Target is what a MySQL replica knows about its own table Ts (WL#5092 "Tm and Ts"): its
columns in order with types, NULL-ability and DEFAULTs (slave-side defaults, WL#5092 DEFAULT
VALUES R1), its PRIMARY KEY and UNIQUE keys (used to find rows, WL#5092 PKE), and what
it can apply: row-format changes, statement-format changes, or both (WL#3303
HA_BINLOG_ROW_CAPABLE / HA_BINLOG_STMT_CAPABLE).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

# Column.default_kind values
NO_DEFAULT = "none"  # no DEFAULT clause: NULL if nullable, else the type's implicit default
LITERAL_DEFAULT = "literal"  # DEFAULT <literal> or DEFAULT NULL: Column.default holds the value
CURRENT_TIMESTAMP_DEFAULT = "current_timestamp"  # DEFAULT CURRENT_TIMESTAMP / NOW()

APPLY_ROWS = "rows"
APPLY_STATEMENTS = "statements"
ON_STATEMENT_ERROR = "error"
ON_STATEMENT_QUARANTINE = "quarantine"
ZERO_DATES_TO_NULL = "to_null"  # a zero or partial date ('0000-00-00', '2024-05-00') reads as NULL
ZERO_DATES_FAIL = "fail"  # ... stops the batch with the column, value and binlog position
ZERO_DATES = (ZERO_DATES_TO_NULL, ZERO_DATES_FAIL)
TEMPORAL_FAMILIES = frozenset({"date", "datetime", "timestamp"})  # families that hold zero dates
HISTORY_CURRENT = "current"  # the target holds each row's current state (a replica's table)
HISTORY_SCD2 = "scd2"  # ... one row per version of each source row (libs/replay/versions.py)
HISTORIES = (HISTORY_CURRENT, HISTORY_SCD2)
DELETE_HARD = "hard"  # a row the source deletes leaves the Delta table
DELETE_SOFT = "soft"  # ... stays, flagged `_deleted` with the deleting change (apply/modes/soft_delete.py)
DELETE_MODES = (DELETE_HARD, DELETE_SOFT)


@dataclass(frozen=True)
class Column:
    """One target column."""

    name: str
    """Column name in the target (and the Delta column name)."""
    mysql_type: str
    """The declared MySQL type as SQL text, e.g. 'INT UNSIGNED', 'DECIMAL(10, 2)'."""
    spark_type: str
    """Spark SQL type string for the Delta column (see types.py for the mapping)."""
    family: str
    """How a value converts (libs/targets/types.py, the one mapping): int, year, bit, decimal,
    decimal_text, float, double, string, enum, set, json, binary, geometry, uuid, inet4, inet6,
    date, datetime, timestamp, time."""
    nullable: bool = True
    """False for NOT NULL columns and PRIMARY KEY members."""
    default_kind: str = NO_DEFAULT
    """none | literal | current_timestamp (see module constants)."""
    default: Any = None
    """Typed default value when default_kind == 'literal' (None for DEFAULT NULL)."""
    enum_values: tuple[str, ...] = ()
    """ENUM/SET member labels in order."""
    generated: bool = False
    """GENERATED ALWAYS AS (...) column: computed by the server, never in a default."""
    auto_increment: bool = False
    """AUTO_INCREMENT: numbered by the server (an ALTER adding one numbers the rows there are)."""
    unsigned: bool = False
    """UNSIGNED integer: the binlog says so only with row metadata (decoding.py fills the gap)."""
    charset: str | None = None
    """Charset of a character column (CHAR, VARCHAR, TEXT, ENUM, SET); None for other types."""
    fsp: int = 0
    """Fractional-second digits of TIME/DATETIME/TIMESTAMP(fsp)."""
    fixed_width: int = 0
    """BINARY(n): n. The binlog logs such a value without its trailing 0x00 pad; the server shows
    all n bytes (Field_string::pack / unpack)."""
    zero_dates: str = ZERO_DATES_TO_NULL
    """A zero or partial DATE/DATETIME/TIMESTAMP value ('0000-00-00', '2024-05-00'), which Delta
    cannot hold: 'to_null' reads it as NULL (as Debezium and Flink CDC do), 'fail' stops the
    batch naming column, value and position. Set per target (targets YAML `zero_dates`)."""

    @property
    def delta_nullable(self) -> bool:
        """NULL-able in Delta: declared nullable, or a date-time column whose zero dates read as NULL."""
        return self.nullable or (self.family in TEMPORAL_FAMILIES and self.zero_dates == ZERO_DATES_TO_NULL)

    @property
    def has_default(self) -> bool:
        """True when the DDL declares a DEFAULT (including DEFAULT NULL / CURRENT_TIMESTAMP)."""
        return self.default_kind != NO_DEFAULT


@dataclass(frozen=True)
class Target:
    """A replica-side table: where changes of source `database.table` are applied."""

    database: str
    """Source database name (binlog Table_map db)."""
    table: str
    """Source table name (binlog Table_map table)."""
    delta_table: str
    """Delta table name; default '<db>__<table>'."""
    columns: tuple[Column, ...]
    """Target columns in target order."""
    primary_key: tuple[str, ...] = ()
    """PRIMARY KEY columns, or the declared `key` columns when the target has no PK."""
    unique_keys: tuple[tuple[str, ...], ...] = ()
    """Every UNIQUE key (enforced on rows whose key columns are all non-NULL)."""
    source_column_names: tuple[str, ...] = ()
    """Source column names by Table_map ordinal, for binlogs without column-name metadata."""
    apply: frozenset[str] = field(default_factory=lambda: frozenset({APPLY_ROWS}))
    """What the target can apply: {'rows'}, {'statements'} or both (WL#3303)."""
    on_statement: str = ON_STATEMENT_ERROR
    """A statement-format DML for a rows-only target: 'error' (stop) or 'quarantine' (skip)."""
    declared_in: str = ""
    """File(s) the declaration came from, for messages."""
    history: str = HISTORY_CURRENT
    """'current' (the row as it is now) or 'scd2' (one row per committed version of each row,
    libs/replay/versions.py; targets YAML `history`, README "History targets")."""
    delete: str | None = None
    """What a source delete does to the Delta row: 'hard' (it goes) or 'soft' (it stays with
    `_deleted` and the deleting change's time and position; README "Soft deletes"). None: the
    declarations leave it unset, hard unless the job's `tables.delete` says soft
    (pipelines/apply/applier.py _effective)."""
    follows_source: bool = False
    """Its columns follow the source's DDL: derived from the source's schema
    (libs/schema_history/target_schemas.py), or declared by hand with DDL of its table in the
    schema history (the declaration as a replica's DDL changes it,
    libs/schema_history/declared_schemas.py). Otherwise rows map onto the declaration by name."""

    @property
    def soft_delete(self) -> bool:
        return self.delete == DELETE_SOFT

    @property
    def qualified_name(self) -> str:
        return f"{self.database}.{self.table}"

    # The derived views below are asked per change by the replay (hundreds of thousands of times
    # a batch: bench/README.md, session 5), so they are computed once per Target. cached_property
    # stores into the instance __dict__, which a frozen dataclass without slots allows; they are
    # not fields, so equality, hashing and dataclasses.replace are unaffected.
    @cached_property
    def column_names(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.columns)

    @cached_property
    def _columns_by_folded_name(self) -> dict[str, Column]:
        by_name: dict[str, Column] = {}
        for col in self.columns:
            by_name.setdefault(col.name.lower(), col)  # MySQL column names are case-insensitive
        return by_name

    @property
    def can_apply_rows(self) -> bool:
        return APPLY_ROWS in self.apply

    @property
    def can_apply_statements(self) -> bool:
        return APPLY_STATEMENTS in self.apply

    def column(self, name: str) -> Column:
        col = self._columns_by_folded_name.get(name.lower())
        if col is None:
            raise KeyError(f"{self.qualified_name} has no column {name!r}")
        return col

    def has_column(self, name: str) -> bool:
        return name.lower() in self._columns_by_folded_name

    def column_for_source(self, ordinal: int, name: str | None = None) -> Column | None:
        """The target column a source column feeds, or None when the target has no such column.

        By name when a name is known (Table_map column-name metadata, else
        source_column_names[ordinal]), by ordinal otherwise, as a replica does (rpl_record.cc:
        unpack_row_with_column_info vs positional unpack_row). Source columns the target lacks
        are ignored (extra master columns, WL#5092)."""
        key = (ordinal, name)
        fed = self._fed_columns
        if key in fed:
            return fed[key]
        if name is None and ordinal < len(self.source_column_names):
            name = self.source_column_names[ordinal]
        if name is not None:
            column = self._columns_by_folded_name.get(name.lower())
        else:
            column = self.columns[ordinal] if ordinal < len(self.columns) else None
        if len(fed) < 4 * len(self.columns) + 64:  # bounded: names come from the stream
            fed[key] = column
        return column

    @cached_property
    def _fed_columns(self) -> dict[tuple[int, str | None], Column | None]:
        """column_for_source's answers, asked once per value of every row image."""
        return {}

    @cached_property
    def source_column_count(self) -> int:
        """Columns of the source table as far as the declaration knows them (no Table_map)."""
        return len(self.source_column_names) or len(self.columns)

    @cached_property
    def not_null_unique_keys(self) -> tuple[tuple[str, ...], ...]:
        """UNIQUE keys whose columns are all NOT NULL: usable to find a row (WL#5092 PKE 2.)."""
        return tuple(
            key for key in self.unique_keys if all(not self.column(c).nullable for c in key)
        )

    @cached_property
    def lookup_keys(self) -> tuple[tuple[str, ...], ...]:
        """Keys a replica searches by, in its order: PK first, then NOT NULL UKs (WL#5092)."""
        keys = (self.primary_key,) if self.primary_key else ()
        return keys + tuple(k for k in self.not_null_unique_keys if k != self.primary_key)

    @cached_property
    def enforced_keys(self) -> tuple[tuple[str, ...], ...]:
        """Keys whose duplicates are error 1062: the PK and every UNIQUE key."""
        keys = (self.primary_key,) if self.primary_key else ()
        return keys + tuple(k for k in self.unique_keys if k != self.primary_key)


def default_delta_table_name(database: str, table: str) -> str:
    """'<db>__<table>' (the documented default Delta table name)."""
    return f"{database}__{table}"

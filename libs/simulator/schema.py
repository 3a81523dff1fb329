"""Table definitions of the simulated master: columns with their binlog wire type and Table_map
metadata, keys, DEFAULTs, engines (WL#3303 capability flags) and the WL#5092 PKE.

Column values use the codec's Python types (libs/binlog/values.py): INT -> int, DECIMAL ->
Decimal with `scale` digits, DOUBLE -> float, CHAR/VARCHAR/TEXT/BLOB -> bytes, DATETIME(n) ->
text, MySQL JSON -> JSON text (MariaDB JSON is LONGTEXT on the wire, so bytes).
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from decimal import Decimal
from typing import Any

from libs.binlog.constants import ColumnType as T

# WL#3303 "SETTINGS FOR CURRENT ENGINES": engine -> (HA_BINLOG_ROW_CAPABLE, HA_BINLOG_STMT_CAPABLE).
# InnoDB is not in the seed's table (it postdates it); it is row and statement capable.
ENGINE_CAPABILITIES: dict[str, tuple[bool, bool]] = {
    "ndbcluster": (True, False),
    "archive": (True, True),
    "blackhole": (False, True),
    "tina": (True, True),  # CSV
    "example": (True, False),
    "federated": (True, True),
    "heap": (True, True),  # MEMORY
    "myisam": (True, True),
    "myisammrg": (True, True),
    "innodb": (True, True),
}
# Engines whose changes a ROLLBACK undoes (the others keep them: MariaDB then logs the group).
TRANSACTIONAL_ENGINES = frozenset({"innodb", "ndbcluster"})
# Engines that store nothing (Blackhole discards every row it is given).
DISCARDING_ENGINES = frozenset({"blackhole"})
# SQL names for CREATE TABLE ... ENGINE=
ENGINE_SQL = {"heap": "MEMORY", "tina": "CSV", "myisammrg": "MRG_MyISAM", "ndbcluster": "NDBCLUSTER"}

# BLOB family on the wire (TEXT is a BLOB with a charset). WL#5092 BLOBS R1-R4 apply to them;
# MySQL's JSON (245) is not MYSQL_TYPE_BLOB, so noblob keeps it like any other column.
BLOB_TYPES = frozenset({T.TINY_BLOB, T.BLOB, T.MEDIUM_BLOB, T.LONG_BLOB})
_BLOB_META = {T.TINY_BLOB: 1, T.BLOB: 2, T.MEDIUM_BLOB: 3, T.LONG_BLOB: 4}

NO_DEFAULT = object()  # a column declared without DEFAULT


@dataclass(frozen=True)
class Column:
    name: str
    sql_type: str  # as written in CREATE TABLE
    type_code: int  # binlog wire type (ColumnType)
    meta: int = 0  # Table_map metadata in the codec's convention (tablemap.TableMap)
    nullable: bool = True
    default: Any = NO_DEFAULT  # the master's DEFAULT, a codec value (None = DEFAULT NULL)
    auto_increment: bool = False
    text: bool = False  # character column (rendered as text in SQL and the expected files)
    scale: int = 0  # DECIMAL scale

    @property
    def is_blob(self) -> bool:
        return self.type_code in BLOB_TYPES

    @property
    def implicit_default(self) -> Any:
        """Value an INSERT that omits the column stores (explicit DEFAULT, else NULL)."""
        return None if self.default is NO_DEFAULT else self.default

    def ddl(self) -> str:
        from libs.simulator.sqltext import literal  # noqa: PLC0415 (sqltext imports schema)
        parts = [f"`{self.name}`", self.sql_type]
        if not self.nullable:
            parts.append("NOT NULL")
        if self.auto_increment:
            parts.append("AUTO_INCREMENT")
        if self.default is not NO_DEFAULT:
            parts.append(f"DEFAULT {literal(self, self.default)}")
        return " ".join(parts)


# ---- column constructors (wire type + metadata exactly as a latin1 table logs them) ---------

def int_col(name, *, nullable=True, default=NO_DEFAULT, auto_increment=False) -> Column:
    return Column(name, "INT", T.LONG, 0, nullable, default, auto_increment)


def varchar(name, n, *, nullable=True, default=NO_DEFAULT) -> Column:
    return Column(name, f"VARCHAR({n})", T.VARCHAR, n, nullable, _b(default), text=True)


def char(name, n, *, nullable=True, default=NO_DEFAULT) -> Column:
    # STRING metadata: real type in the high byte, byte length in the low byte (n < 256)
    return Column(name, f"CHAR({n})", T.STRING, (T.STRING << 8) | n, nullable, _b(default),
                  text=True)


def decimal(name, precision, scale, *, nullable=True, default=NO_DEFAULT) -> Column:
    d = default if default is NO_DEFAULT or default is None else Decimal(default)
    return Column(name, f"DECIMAL({precision},{scale})", T.NEWDECIMAL, precision << 8 | scale,
                  nullable, d, scale=scale)


def double(name, *, nullable=True, default=NO_DEFAULT) -> Column:
    return Column(name, "DOUBLE", T.DOUBLE, 8, nullable, default)


def datetime(name, fsp, *, nullable=True, default=NO_DEFAULT) -> Column:
    return Column(name, f"DATETIME({fsp})", T.DATETIME2, fsp, nullable, default)


def blob(name, kind=T.BLOB, *, text=False, nullable=True) -> Column:
    # Every BLOB/TEXT size travels as MYSQL_TYPE_BLOB (252); the metadata byte is the length
    # prefix size (1 TINY, 2, 3 MEDIUM, 4 LONG), as the corpus Table_maps show.
    word = {T.TINY_BLOB: "TINY", T.BLOB: "", T.MEDIUM_BLOB: "MEDIUM", T.LONG_BLOB: "LONG"}[kind]
    return Column(name, word + ("TEXT" if text else "BLOB"), T.BLOB, _BLOB_META[kind], nullable,
                  text=text)


def json_col(name, flavour: str) -> Column:
    if flavour == "mariadb":  # MariaDB JSON = LONGTEXT (+ CHECK); a BLOB on the wire
        return Column(name, "JSON", T.BLOB, 4, True, text=True)
    return Column(name, "JSON", T.JSON, 4, True, text=True)


def _b(value):
    return value.encode("latin-1") if isinstance(value, str) else value


@dataclass(frozen=True)
class Table:
    name: str
    columns: tuple[Column, ...]
    primary_key: tuple[str, ...] = ()
    unique_keys: tuple[tuple[str, ...], ...] = ()
    engine: str = "innodb"
    database: str = "sim"
    table_id: int = 0  # Table_map id (changes when the definition does, as on a real server)

    def ordinal(self, name: str) -> int:
        for i, c in enumerate(self.columns):
            if c.name == name:
                return i
        raise KeyError(f"{self.name} has no column {name}")

    @property
    def capabilities(self) -> tuple[bool, bool]:
        """(row logging capable, statement logging capable): WL#3303 engine flags."""
        return ENGINE_CAPABILITIES[self.engine]

    @property
    def transactional(self) -> bool:
        return self.engine in TRANSACTIONAL_ENGINES

    @property
    def stores_rows(self) -> bool:
        return self.engine not in DISCARDING_ENGINES

    def pke(self) -> tuple[int, ...] | None:
        """WL#5092 Primary Key Equivalent: 1. the PK, 2. else the first UK whose columns are
        all NOT NULL; None for 3. (the set of all columns: the table 'has no PK')."""
        if self.primary_key:
            return tuple(self.ordinal(c) for c in self.primary_key)
        for uk in self.unique_keys:
            cols = tuple(self.ordinal(c) for c in uk)
            if all(not self.columns[i].nullable for i in cols):
                return cols
        return None

    def unique_sets(self) -> list[tuple[int, ...]]:
        """Every PK/UK as ordinals (for duplicate-key checks)."""
        keys = [self.primary_key] if self.primary_key else []
        return [tuple(self.ordinal(c) for c in k) for k in keys + list(self.unique_keys)]

    @property
    def autoinc(self) -> int | None:
        for i, c in enumerate(self.columns):
            if c.auto_increment:
                return i
        return None

    def create_sql(self) -> str:
        lines = [c.ddl() for c in self.columns]
        if self.primary_key:
            lines.append("PRIMARY KEY (" + ", ".join(f"`{c}`" for c in self.primary_key) + ")")
        for k, uk in enumerate(self.unique_keys):
            lines.append(f"UNIQUE KEY `uk{k}` (" + ", ".join(f"`{c}`" for c in uk) + ")")
        engine = ENGINE_SQL.get(self.engine, self.engine.upper() if self.engine != "innodb"
                                else "InnoDB")
        return (f"CREATE TABLE `{self.name}` (\n  " + ",\n  ".join(lines)
                + f"\n) ENGINE={engine} DEFAULT CHARSET=latin1")

    def with_columns(self, columns: tuple[Column, ...], table_id: int) -> "Table":
        return replace(self, columns=columns, table_id=table_id)


def standard_tables(flavour: str, engines: dict[str, str] | None = None) -> list[Table]:
    """The workload's tables (the corpus' rowimage_workload shapes): a PK table, a table with
    only a NOT NULL unique key, a keyless table, a table of DEFAULTs with AUTO_INCREMENT, and a
    table of BLOB/TEXT/JSON columns. `engines` overrides the engine per table name."""
    engines = engines or {}
    tables = [
        Table("t_pk", (int_col("id", nullable=False), varchar("name", 50), int_col("qty"),
                       decimal("price", 10, 2), blob("note", text=True)), primary_key=("id",)),
        Table("t_uk", (char("code", 8, nullable=False), int_col("val"), varchar("descr", 100)),
              unique_keys=(("code",),)),
        Table("t_nokey", (int_col("a"), varchar("b", 20), double("c"))),
        Table("t_defaults", (
            int_col("id", nullable=False, auto_increment=True),
            varchar("status", 10, nullable=False, default="new"),
            int_col("cnt", nullable=False, default=0),
            double("ratio", default=1.5),
            datetime("created", 3, nullable=False, default="2024-01-01 00:00:00.000"),
            blob("payload"),
            char("tag", 4, default="abcd"),
        ), primary_key=("id",)),
        Table("t_blob", (int_col("id", nullable=False), int_col("counter", nullable=False, default=0),
                         varchar("label", 20, default="lbl"), blob("b"), blob("t", text=True),
                         blob("mb", T.MEDIUM_BLOB), json_col("doc", flavour)),
              primary_key=("id",)),
    ]
    unknown = set(engines) - {t.name for t in tables}
    if unknown:
        raise ValueError(f"--engine names unknown tables: {sorted(unknown)}")
    for k, t in enumerate(tables):
        engine = engines.get(t.name, "innodb").lower()
        if engine not in ENGINE_CAPABILITIES:
            raise ValueError(f"unknown engine {engine!r} (WL#3303 table: "
                             f"{', '.join(sorted(ENGINE_CAPABILITIES))})")
        tables[k] = replace(t, engine=engine)
    return tables


def replica_ddl(tables: list[Table], database: str) -> str:
    """The tables as a replica declares them (`cdc-replicate --target-ddl`): the master's own
    CREATE TABLE texts, so the target DEFAULTs are the master's."""
    body = ";\n".join(t.create_sql() for t in tables)
    return f"CREATE DATABASE IF NOT EXISTS `{database}`;\nUSE `{database}`;\n{body};\n"


__all__ = ["Column", "Table", "NO_DEFAULT", "ENGINE_CAPABILITIES", "replica_ddl", "standard_tables"]

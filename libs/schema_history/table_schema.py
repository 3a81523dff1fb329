"""One version of a source table's schema, as the server has it after a DDL (issue #17 item 1).

A version is kept as what the server would print for it: columns in ordinal order (each its
column definition as MariaDB SQL), the PRIMARY KEY, the named UNIQUE keys and the table's default
charset. `create_table()` renders it as a CREATE TABLE statement, which is also how a version is
persisted and how it becomes a target (libs/targets/ddl.py parse_ddl: one type mapping for
declarations, SHOW CREATE TABLE and DDL-derived versions alike).

Why the server's rules are followed here, not a simpler model: the version decides where each
value of a row image goes (ordinal = position in `columns`), so ADD ... FIRST / AFTER, CHANGE ...
AFTER and DROP must move ordinals exactly as the server does. Key names follow the server too
(an unnamed UNIQUE is named after its first column, `_2`, `_3` on a clash), so a later
`DROP INDEX` finds the key it names.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

import sqlglot
from sqlglot import exp

from libs.binlog.charsets import charset_name
from libs.contracts.sql_names import quote_identifier
from libs.targets.ddl import MariaDB, TableDDL, key_columns, parse_ddl, table_charset

FIRST = "FIRST"
_T = exp.DataType.Type
_TEXT_BYTES = {_T.TINYTEXT: 255, _T.TEXT: 65_535, _T.MEDIUMTEXT: 16_777_215, _T.LONGTEXT: 4_294_967_295}
# bytes per character at most (MariaDB's mbmaxlen), for the charsets whose value is not 1
_MBMAXLEN = {"utf8mb3": 3, "utf8": 3, "utf8mb4": 4, "ucs2": 2, "utf16": 4, "utf16le": 4, "utf32": 4,
             "big5": 2, "gbk": 2, "gb2312": 2, "sjis": 2, "cp932": 2, "euckr": 2, "ujis": 3, "eucjpms": 3}
_CHARACTER_TYPES = {_T.CHAR, _T.NCHAR, _T.VARCHAR, _T.NVARCHAR, _T.TEXT, _T.TINYTEXT, _T.MEDIUMTEXT,
                    _T.LONGTEXT, _T.ENUM, _T.SET}


class SchemaChangeError(ValueError):
    """A DDL that does not fit the version it applies to (a column it names is not there, ...).
    The caller adds source, statement and position."""


@dataclass(frozen=True)
class ColumnSpec:
    name: str
    definition: str  # the whole column definition as MariaDB SQL, name included, no key constraint


@dataclass(frozen=True)
class TableSchema:
    database: str
    table: str
    columns: tuple[ColumnSpec, ...]
    primary_key: tuple[str, ...] = ()
    unique_keys: tuple[tuple[str, tuple[str, ...]], ...] = ()  # (key name, columns)
    charset: str | None = None  # the table's DEFAULT CHARSET (columns without their own)

    # -- reading ----------------------------------------------------------------------------------
    @property
    def column_names(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.columns)

    def index(self, name: str) -> int:
        """Ordinal of a column (names are case-insensitive, as in MySQL); SchemaChangeError if none."""
        for i, column in enumerate(self.columns):
            if column.name.lower() == name.lower():
                return i
        raise SchemaChangeError(f"{self.database}.{self.table} has no column {name!r} "
                                f"(columns: {list(self.column_names)})")

    def has_column(self, name: str) -> bool:
        return any(c.name.lower() == name.lower() for c in self.columns)

    def create_table(self) -> str:
        """The version as one CREATE TABLE statement (qualified name)."""
        parts = [c.definition for c in self.columns]
        if self.primary_key:
            parts.append(f"PRIMARY KEY ({_names_sql(self.primary_key)})")
        parts += [f"UNIQUE KEY {quote_identifier(name)} ({_names_sql(cols)})"
                  for name, cols in self.unique_keys]
        tail = f" DEFAULT CHARSET={self.charset}" if self.charset else ""
        return (f"CREATE TABLE {quote_identifier(self.database)}.{quote_identifier(self.table)} "
                f"(\n  " + ",\n  ".join(parts) + f"\n){tail}")

    def table_ddl(self, path: str) -> TableDDL:
        """The version as the targets' TableDDL (types, defaults, keys); `path` names where it came from."""
        (ddl,) = parse_ddl(self.create_table(), path)
        return ddl

    # -- building ---------------------------------------------------------------------------------
    @classmethod
    def from_create(cls, create: exp.Create, database: str) -> "TableSchema":
        """From a parsed CREATE TABLE with a column list (SHOW CREATE TABLE, a DDL in the stream)."""
        schema = create.this
        table = schema.this
        out = cls(table.db or database, table.name, (), charset=table_charset(create))
        for item in schema.expressions:
            if isinstance(item, exp.ColumnDef):
                out = out.add_column(item)
            elif isinstance(item, exp.PrimaryKey):
                out = out.with_primary_key(key_columns(item))
            elif isinstance(item, exp.UniqueColumnConstraint):
                out = out.with_unique(_key_name(item), key_columns(item))
            elif isinstance(item, exp.Constraint):  # CONSTRAINT name PRIMARY KEY / UNIQUE (...)
                for sub in item.expressions:
                    if isinstance(sub, exp.PrimaryKey):
                        out = out.with_primary_key(key_columns(sub))
                    elif isinstance(sub, exp.UniqueColumnConstraint):
                        out = out.with_unique(_key_name(sub) or item.name, key_columns(sub))
        return out

    @classmethod
    def parse(cls, create_table: str, database: str) -> "TableSchema":
        """From CREATE TABLE text (what create_table() renders, or SHOW CREATE TABLE)."""
        stmt = sqlglot.parse_one(create_table, dialect=MariaDB)
        if not isinstance(stmt, exp.Create) or not isinstance(stmt.this, exp.Schema):
            raise SchemaChangeError(f"not a CREATE TABLE with columns: {create_table[:120]!r}")
        return cls.from_create(stmt, database)

    def renamed(self, database: str, table: str) -> "TableSchema":
        return replace(self, database=database, table=table)

    def add_column(self, col_def: exp.ColumnDef, position: str | None = None) -> "TableSchema":
        """ADD COLUMN: at the end, FIRST, or AFTER `position`. Inline PRIMARY KEY / UNIQUE become keys."""
        spec, primary, unique = _column_spec(col_def)
        if self.has_column(spec.name):
            raise SchemaChangeError(f"{self.database}.{self.table} already has a column {spec.name!r}")
        at = self._insert_at(position)
        out = replace(self, columns=self.columns[:at] + (spec,) + self.columns[at:])
        if primary:
            out = out.with_primary_key((spec.name,))
        return out.with_unique(None, (spec.name,)) if unique else out

    def change_column(self, old: str, col_def: exp.ColumnDef, position: str | None = None) -> "TableSchema":
        """CHANGE old new_def / MODIFY def [FIRST | AFTER x]: the definition replaced, renamed in
        every key, moved when a position is given."""
        i = self.index(old)
        spec, primary, unique = _column_spec(col_def)
        if spec.name.lower() != self.columns[i].name.lower() and self.has_column(spec.name):
            raise SchemaChangeError(f"{self.database}.{self.table} already has a column {spec.name!r}")
        out = self._rename_in_keys(self.columns[i].name, spec.name)
        columns = out.columns[:i] + out.columns[i + 1:]
        out = replace(out, columns=columns)
        at = i if position is None else out._insert_at(position)
        out = replace(out, columns=out.columns[:at] + (spec,) + out.columns[at:])
        if primary:
            out = out.with_primary_key((spec.name,))
        return out.with_unique(None, (spec.name,)) if unique else out

    def rename_column(self, old: str, new: str) -> "TableSchema":
        i = self.index(old)
        node = column_def(self.columns[i].definition)
        node.set("this", exp.to_identifier(new, quoted=True))
        return self.change_column(old, node)

    def drop_column(self, name: str) -> "TableSchema":
        """DROP COLUMN: keys lose the column; a key left with no column is dropped (the server's rule)."""
        i = self.index(name)
        dropped = self.columns[i].name.lower()
        primary = tuple(k for k in self.primary_key if k.lower() != dropped)
        uniques = tuple((n, tuple(k for k in cols if k.lower() != dropped)) for n, cols in self.unique_keys)
        return replace(self, columns=self.columns[:i] + self.columns[i + 1:], primary_key=primary,
                       unique_keys=tuple((n, cols) for n, cols in uniques if cols))

    def set_default(self, name: str, default: exp.Expression | None) -> "TableSchema":
        """ALTER COLUMN c SET DEFAULT v / DROP DEFAULT."""
        i = self.index(name)
        node = column_def(self.columns[i].definition)
        kept = [c for c in node.args.get("constraints") or []
                if not isinstance(c.args.get("kind"), exp.DefaultColumnConstraint)]
        if default is not None:
            kept.append(exp.ColumnConstraint(kind=exp.DefaultColumnConstraint(this=default)))
        node.set("constraints", kept)
        spec = replace(self.columns[i], definition=node.sql(dialect=MariaDB))
        return replace(self, columns=self.columns[:i] + (spec,) + self.columns[i + 1:])

    def with_primary_key(self, columns: tuple[str, ...]) -> "TableSchema":
        names = tuple(self.columns[self.index(c)].name for c in columns)
        return replace(self, primary_key=names)

    def without_primary_key(self) -> "TableSchema":
        if not self.primary_key:
            raise SchemaChangeError(f"{self.database}.{self.table} has no PRIMARY KEY to drop")
        return replace(self, primary_key=())

    def with_unique(self, name: str | None, columns: tuple[str, ...]) -> "TableSchema":
        """ADD UNIQUE [name] (cols): an unnamed key takes its first column's name (`_2`... on a clash)."""
        names = tuple(self.columns[self.index(c)].name for c in columns)
        taken = {n.lower() for n, _ in self.unique_keys} | {"primary"}
        if name is None:
            name, n = names[0], 2
            while name.lower() in taken:
                name, n = f"{names[0]}_{n}", n + 1
        elif name.lower() in taken:
            raise SchemaChangeError(f"{self.database}.{self.table} already has a key named {name!r}")
        return replace(self, unique_keys=self.unique_keys + ((name, names),))

    def without_key(self, name: str) -> "TableSchema":
        """DROP INDEX / KEY name: a unique key goes; any other index is no schema change here."""
        if name.lower() == "primary":
            return self.without_primary_key()
        kept = tuple((n, c) for n, c in self.unique_keys if n.lower() != name.lower())
        return replace(self, unique_keys=kept)

    def renamed_key(self, old: str, new: str) -> "TableSchema":
        return replace(self, unique_keys=tuple((new if n.lower() == old.lower() else n, c)
                                               for n, c in self.unique_keys))

    def with_charset(self, charset: str) -> "TableSchema":
        """ALTER TABLE t [DEFAULT] CHARSET x: only columns added later take x; the character
        columns that inherited the old default keep it, now written out (as the server shows)."""
        pinned = self._character_columns(
            lambda node: self.charset if self.charset and not _has_charset(node) else None)
        return replace(pinned, charset=charset)

    def converted(self, charset: str) -> "TableSchema":
        """ALTER TABLE t CONVERT TO CHARACTER SET x: every character column is now in x, and a
        TEXT column whose characters no longer fit its bytes grows (latin1 TEXT -> utf8mb4
        MEDIUMTEXT), as the server does so that no value is cut."""
        grown = []
        for column in self.columns:
            node = column_def(column.definition)
            kind = node.args["kind"]
            if kind.this in _TEXT_BYTES:
                chars = _TEXT_BYTES[kind.this] // _mbmaxlen(_charset_of(node) or self.charset)
                needed = chars * _mbmaxlen(charset)
                node.set("kind", exp.DataType(this=next(t for t, size in _TEXT_BYTES.items()
                                                        if size >= needed)))
                column = replace(column, definition=node.sql(dialect=MariaDB))
            grown.append(column)
        out = replace(self, columns=tuple(grown))
        return replace(out._character_columns(lambda node: charset), charset=charset)

    def _character_columns(self, charset_of) -> "TableSchema":
        """Each CHAR/VARCHAR/TEXT/ENUM/SET column given charset_of(its definition) as its own
        charset (its COLLATE dropped), or left as it is when that is None."""
        columns = []
        for column in self.columns:
            node = column_def(column.definition)
            charset = charset_of(node) if node.args["kind"].this in _CHARACTER_TYPES else None
            if charset:
                kept = [c for c in node.args.get("constraints") or [] if not isinstance(
                    c.args.get("kind"), (exp.CharacterSetColumnConstraint, exp.CollateColumnConstraint))]
                node.set("constraints", [exp.ColumnConstraint(kind=exp.CharacterSetColumnConstraint(
                    this=exp.var(charset))), *kept])
                column = replace(column, definition=node.sql(dialect=MariaDB))
            columns.append(column)
        return replace(self, columns=tuple(columns))

    def _insert_at(self, position: str | None) -> int:
        if position is None:
            return len(self.columns)
        return 0 if position == FIRST else self.index(position) + 1

    def _rename_in_keys(self, old: str, new: str) -> "TableSchema":
        def swap(cols):
            return tuple(new if c.lower() == old.lower() else c for c in cols)
        return replace(self, primary_key=swap(self.primary_key),
                       unique_keys=tuple((n, swap(c)) for n, c in self.unique_keys))


def _names_sql(names) -> str:
    return ", ".join(quote_identifier(n) for n in names)


def column_def(definition: str) -> exp.ColumnDef:
    """A version's column definition (ColumnSpec.definition, already read once) parsed again."""
    stmt = sqlglot.parse_one(f"CREATE TABLE _t ({definition})", dialect=MariaDB)
    (node,) = stmt.this.expressions
    return node


def _mbmaxlen(charset: str | None) -> int:
    return _MBMAXLEN.get((charset or "").lower(), 1)


def _charset_of(node: exp.ColumnDef) -> str | None:
    """The column's own CHARACTER SET, or its COLLATE's charset; None: the table's."""
    for c in node.args.get("constraints") or []:
        kind = c.args.get("kind")
        if isinstance(kind, exp.CharacterSetColumnConstraint):
            return kind.this.name
        if isinstance(kind, exp.CollateColumnConstraint):
            return charset_name(kind.this.name)
    return None


def _has_charset(node: exp.ColumnDef) -> bool:
    return any(isinstance(c.args.get("kind"), (exp.CharacterSetColumnConstraint, exp.CollateColumnConstraint))
               for c in node.args.get("constraints") or [])


def _column_spec(col_def: exp.ColumnDef) -> tuple[ColumnSpec, bool, bool]:
    """(the column without key constraints, declared PRIMARY KEY inline, declared UNIQUE inline)."""
    node = col_def.copy()
    constraints = node.args.get("constraints") or []
    # the type alias of BIGINT UNSIGNED NOT NULL AUTO_INCREMENT UNIQUE
    if node.args["kind"].this == _T.SERIAL:
        node.set("kind", exp.DataType.build("BIGINT UNSIGNED", dialect=MariaDB))
        constraints = [exp.ColumnConstraint(kind=kind) for kind in (
            exp.NotNullColumnConstraint(), exp.AutoIncrementColumnConstraint(), exp.UniqueColumnConstraint())
        ] + list(constraints)
    primary = any(isinstance(c.args.get("kind"), exp.PrimaryKeyColumnConstraint) for c in constraints)
    unique = any(isinstance(c.args.get("kind"), exp.UniqueColumnConstraint) for c in constraints)
    node.set("constraints", [c for c in constraints if not isinstance(
        c.args.get("kind"), (exp.PrimaryKeyColumnConstraint, exp.UniqueColumnConstraint))])
    node.set("position", None)
    node.set("exists", None)
    return ColumnSpec(node.name, node.sql(dialect=MariaDB)), primary, unique


def _key_name(node: exp.UniqueColumnConstraint) -> str | None:
    schema = node.this
    return schema.this.name if isinstance(schema, exp.Schema) and schema.this is not None else None

"""Targets declared as MySQL/MariaDB `CREATE TABLE` DDL (the replica's schema), parsed with sqlglot.

A DDL file may hold several statements: `CREATE TABLE db.t (...)`, or `CREATE TABLE t (...)`
after `USE db` / `CREATE DATABASE db`. Any other statement (SET, DROP, INSERT, comments of a
mysqldump) is ignored. SHOW CREATE TABLE output of MySQL and MariaDB parses as is.

sqlglot's MySQL dialect is extended (MariaDB below) with what SHOW CREATE TABLE prints and the
MySQL dialect does not know: spatial types, INET4/INET6/UUID, FLOAT UNSIGNED, ZEROFILL,
INVISIBLE, `PARTITION BY ... (PARTITION ... VALUES ...)` and `WITH SYSTEM VERSIONING`. Table
options are kept only as far as they matter here (ENGINE).
"""

from __future__ import annotations

import contextlib
import logging
from dataclasses import dataclass, field, replace

import sqlglot
from sqlglot import exp
from sqlglot.dialects.mysql import MySQL
from sqlglot.errors import SqlglotError
from sqlglot.tokens import TokenType

from libs.binlog import charsets
import libs.targets.model as model
import libs.targets.types as types
import libs.targets.values as values
from libs.targets.errors import TargetConfigError


def _swallow_partitioning(self):
    """PARTITION BY ...: the rest of the statement, kept as text (partitioning is not schema)."""
    start = end = self._curr
    while self._curr:
        end = self._curr
        self._advance()
    text = self._find_sql(start, end) if start else ""
    return self.expression(exp.Property, this=exp.var("PARTITION BY"), value=exp.var(text))


def _with_property(self):
    if self._match_text_seq("SYSTEM", "VERSIONING"):
        return self.expression(exp.Property, this=exp.var("WITH SYSTEM VERSIONING"), value=exp.true())
    return self._parse_with_property()


class MariaDB(MySQL):
    """sqlglot dialect: MySQL plus the MariaDB SHOW CREATE TABLE vocabulary."""

    class Tokenizer(MySQL.Tokenizer):
        KEYWORDS = {
            **MySQL.Tokenizer.KEYWORDS,
            "POINT": TokenType.POINT,
            "LINESTRING": TokenType.LINESTRING,
            "POLYGON": TokenType.POLYGON,
            "MULTIPOINT": TokenType.GEOMETRY,
            "MULTILINESTRING": TokenType.MULTILINESTRING,
            "MULTIPOLYGON": TokenType.MULTIPOLYGON,
            "GEOMETRYCOLLECTION": TokenType.GEOMETRY,
            "INET4": TokenType.IPV4,
            "INET6": TokenType.IPV6,
            "UUID": TokenType.UUID,
        }

    class Parser(MySQL.Parser):
        SIGNED_TO_UNSIGNED_TYPE_TOKEN = {
            **MySQL.Parser.SIGNED_TO_UNSIGNED_TYPE_TOKEN,
            TokenType.FLOAT: TokenType.FLOAT,  # FLOAT UNSIGNED: same storage, deprecated
        }
        CONSTRAINT_PARSERS = {
            **MySQL.Parser.CONSTRAINT_PARSERS,
            "ZEROFILL": lambda self: exp.var("ZEROFILL"),
            "INVISIBLE": lambda self: exp.var("INVISIBLE"),
        }
        PROPERTY_PARSERS = {
            **MySQL.Parser.PROPERTY_PARSERS,
            "PARTITION BY": _swallow_partitioning,
            "WITH": _with_property,
        }

    class Generator(MySQL.Generator):
        # SQL written back for MariaDB (schema versions, libs/schema_history): its own type names,
        # and TIMESTAMP stays TIMESTAMP (sqlglot's MySQL writes DATETIME, another type here).
        TYPE_MAPPING = {
            **MySQL.Generator.TYPE_MAPPING,
            exp.DataType.Type.IPV4: "INET4",
            exp.DataType.Type.IPV6: "INET6",
            exp.DataType.Type.TIMESTAMP: "TIMESTAMP",
        }


@dataclass(frozen=True)
class TableDDL:
    """One parsed CREATE TABLE."""

    database: str
    table: str
    columns: tuple[model.Column, ...]
    primary_key: tuple[str, ...]
    unique_keys: tuple[tuple[str, ...], ...]
    engine: str | None
    path: str
    create_table: str = field(default="", compare=False)
    """The statement as MariaDB SQL, its table qualified: what a declaration's schema starts from
    when it follows the source's DDL (libs/schema_history/declared_schemas.py)."""


_NOW_FUNCTIONS = {"NOW", "CURRENT_TIMESTAMP", "LOCALTIME", "LOCALTIMESTAMP"}


def _literal_text(node: exp.Expression) -> str | None:
    """Text of a literal default, None for NULL; raises ValueError for an expression."""
    if isinstance(node, exp.Paren):
        return _literal_text(node.this)
    if isinstance(node, exp.Null):
        return None
    if isinstance(node, exp.Literal):
        return str(node.this)
    if isinstance(node, exp.Neg) and isinstance(node.this, exp.Literal):
        return "-" + str(node.this.this)
    if isinstance(node, exp.Boolean):
        return "1" if node.this else "0"
    raise ValueError(f"unsupported DEFAULT expression {node.sql(dialect=MariaDB)!r}")


def _column(col_def: exp.ColumnDef, path: str, where: str, table_charset: str | None
            ) -> tuple[model.Column, bool, bool]:
    """(Column, is column-level PRIMARY KEY, is column-level UNIQUE)."""
    name = col_def.name
    dtype = col_def.args.get("kind")
    if not isinstance(dtype, exp.DataType):
        raise TargetConfigError(path, f"{where}.{name}", "column has no type")
    nullable, primary, unique, generated, auto_increment = True, False, False, False, False
    default_node, charset = None, None
    for constraint in col_def.constraints:
        kind = constraint.args.get("kind")
        if isinstance(kind, exp.NotNullColumnConstraint):
            nullable = bool(kind.args.get("allow_null"))
        elif isinstance(kind, exp.PrimaryKeyColumnConstraint):
            primary, nullable = True, False  # a PK is implicitly NOT NULL
        elif isinstance(kind, exp.UniqueColumnConstraint):
            unique = True
        elif isinstance(kind, exp.DefaultColumnConstraint):
            default_node = kind.this
        elif isinstance(kind, (exp.ComputedColumnConstraint, exp.GeneratedAsIdentityColumnConstraint)):
            generated = True
        elif isinstance(kind, exp.AutoIncrementColumnConstraint):
            auto_increment = True
        elif isinstance(kind, exp.CharacterSetColumnConstraint):
            charset = kind.this.name
        elif isinstance(kind, exp.CollateColumnConstraint) and charset is None:
            charset = charsets.charset_name(kind.this.name)
    try:
        column = types.column_of(name, dtype, dtype.sql(dialect=MariaDB), nullable=nullable,
                                 charset=charset or table_charset)
    except KeyError:
        raise TargetConfigError(path, f"{where}.{name}",
                                f"unsupported MySQL type {dtype.sql(dialect=MariaDB)!r}") from None
    column = replace(column, generated=generated, auto_increment=auto_increment)
    return _with_default(column, default_node, path, f"{where}.{name}"), primary, unique


def table_charset(create: exp.Create) -> str | None:
    """DEFAULT CHARSET=... (or the charset of COLLATE=...) of a CREATE TABLE; None if absent."""
    props = create.args.get("properties")
    charset = collation = None
    for prop in props.expressions if props else ():
        if isinstance(prop, exp.CharacterSetProperty):
            charset = prop.this.name
        elif isinstance(prop, exp.CollateProperty):
            collation = charsets.charset_name(prop.this.name)
    return charset or collation


def _with_default(column: model.Column, node, path: str, where: str) -> model.Column:
    if node is None:
        return column
    if isinstance(node, exp.CurrentTimestamp) or (
        isinstance(node, (exp.Anonymous, exp.Func)) and node.name.upper() in _NOW_FUNCTIONS
    ) or (isinstance(node, exp.Column) and node.name.upper() in _NOW_FUNCTIONS):
        return replace(column, default_kind=model.CURRENT_TIMESTAMP_DEFAULT)
    if isinstance(node, exp.BitString):
        value = values.from_text(column, str(int(node.this, 2)))
        return replace(column, default_kind=model.LITERAL_DEFAULT, default=value)
    if isinstance(node, exp.HexString):
        value = values.from_binary(column, bytes.fromhex(node.this))
        return replace(column, default_kind=model.LITERAL_DEFAULT, default=value)
    try:
        text = _literal_text(node)
        value = None if text is None else values.from_text(column, text)
    except ValueError as exc:
        raise TargetConfigError(path, where, f"DEFAULT: {exc}") from None
    return replace(column, default_kind=model.LITERAL_DEFAULT, default=value)


def key_columns(node: exp.Expression) -> tuple[str, ...]:
    exprs = node.this.expressions if isinstance(node.this, exp.Schema) else node.expressions
    names = []
    for e in exprs:
        e = e.this if isinstance(e, exp.Ordered) else e
        names.append(e.name)
    return tuple(names)


def _table(create: exp.Create, database: str | None, path: str, index: int) -> TableDDL:
    schema = create.this
    table = schema.this
    db = table.db or database
    where = f"statement[{index}] CREATE TABLE {table.name}"
    if not db:
        raise TargetConfigError(path, where,
                                "no database: qualify the table (db.table) or add `USE db` before it")
    columns, primary, uniques = [], (), []
    default_charset = table_charset(create)
    for item in schema.expressions:
        if isinstance(item, (exp.Identifier, exp.Column)):  # `(id INT, name)`: no type
            raise TargetConfigError(path, f"{where}.{item.name}", "column has no type")
        if isinstance(item, exp.LikeProperty):  # `CREATE TABLE t (LIKE s)`
            raise TargetConfigError(path, where, _NOT_DECLARED.format("LIKE"))
        if isinstance(item, exp.ColumnDef):
            column, is_pk, is_unique = _column(item, path, where, default_charset)
            columns.append(column)
            if is_pk:
                primary = (column.name,)
            if is_unique:
                uniques.append((column.name,))
        elif isinstance(item, exp.PrimaryKey):
            primary = key_columns(item)
        elif isinstance(item, exp.UniqueColumnConstraint):
            uniques.append(key_columns(item))
        elif isinstance(item, exp.Constraint):
            for sub in item.expressions:
                if isinstance(sub, exp.PrimaryKey):
                    primary = key_columns(sub)
                elif isinstance(sub, exp.UniqueColumnConstraint):
                    uniques.append(key_columns(sub))
    check_unique_names(columns, path, where)
    if primary:  # PRIMARY KEY columns are NOT NULL even when not declared so (WL#5092 PK)
        columns = [replace(c, nullable=False) if c.name in primary else c for c in columns]
    engine = None
    props = create.args.get("properties")
    for prop in props.expressions if props else ():
        if isinstance(prop, exp.EngineProperty):
            engine = prop.this.name if isinstance(prop.this, exp.Expression) else str(prop.this)
    names = {c.name.lower() for c in columns}
    for key in [primary, *uniques]:
        for col in key:
            if col.lower() not in names:
                raise TargetConfigError(path, where, f"key column {col!r} is not a column of the table")
    qualified = create.copy()
    qualified.this.this.set("db", exp.to_identifier(db))
    return TableDDL(db, table.name, tuple(columns), tuple(primary), tuple(uniques), engine, path,
                    qualified.sql(dialect=MariaDB))


_NOT_DECLARED = ("CREATE TABLE ... {} takes its columns from another table or a query, which a "
                 "declaration cannot see: write the table's columns out")


def check_unique_names(columns, path: str, where: str) -> None:
    """Column names are case-insensitive in MySQL (and in Delta): one column per name."""
    seen: dict[str, str] = {}
    for column in columns:
        key = column.name.lower()
        if key in seen:
            raise TargetConfigError(path, f"{where}.{column.name}",
                                    f"duplicate column name (also declared as {seen[key]!r})")
        seen[key] = column.name


def _create_table(stmt: exp.Create, database: str | None, path: str, index: int) -> TableDDL:
    """A CREATE TABLE that declares its columns; LIKE and AS SELECT are refused, not skipped."""
    name = stmt.this.this.name if isinstance(stmt.this, exp.Schema) else stmt.this.name
    where = f"statement[{index}] CREATE TABLE {name}"
    props = stmt.args.get("properties")
    if props is not None and any(isinstance(p, exp.LikeProperty) for p in props.expressions):
        raise TargetConfigError(path, where, _NOT_DECLARED.format("LIKE"))
    if stmt.args.get("expression") is not None:
        raise TargetConfigError(path, where, _NOT_DECLARED.format("AS SELECT"))
    if not isinstance(stmt.this, exp.Schema):
        raise TargetConfigError(path, where, "no column list")
    return _table(stmt, database, path, index)


@contextlib.contextmanager
def _quiet_sqlglot():
    """sqlglot logs a warning before parsing a statement it does not know as a Command; such a
    CREATE is refused below with one clear error, anything else is not a declaration."""
    logger = logging.getLogger("sqlglot")
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        logger.setLevel(level)


def parse_ddl(text: str, path: str = "<ddl>") -> list[TableDDL]:
    """Every CREATE TABLE of a DDL text, with its database resolved (see module docstring)."""
    try:
        with _quiet_sqlglot():
            statements = sqlglot.parse(text, dialect=MariaDB, error_level=sqlglot.ErrorLevel.RAISE)
    except SqlglotError as exc:  # ParseError, and TokenError (e.g. an unterminated string)
        raise TargetConfigError(path, "", f"cannot parse DDL: {exc}") from None
    database, tables = None, []
    for index, stmt in enumerate(statements):
        if isinstance(stmt, exp.Use):
            database = stmt.this.name
        elif isinstance(stmt, exp.Create) and stmt.kind in ("DATABASE", "SCHEMA"):
            database = stmt.this.name
        elif isinstance(stmt, exp.Create) and stmt.kind == "TABLE":
            tables.append(_create_table(stmt, database, path, index))
        elif isinstance(stmt, exp.Command) and stmt.name.upper() == "CREATE":
            raise TargetConfigError(path, f"statement[{index}]", f"cannot parse: {stmt.sql()[:200]!r}")
    return tables


def load_ddl_file(path: str) -> list[TableDDL]:
    """parse_ddl() of a file; errors name the file."""
    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
    except OSError as exc:
        raise TargetConfigError(path, "", f"cannot read DDL file: {exc.strerror}") from None
    except UnicodeDecodeError as exc:
        raise TargetConfigError(path, "", f"not UTF-8 text (byte {exc.start})") from None
    return parse_ddl(text, path)

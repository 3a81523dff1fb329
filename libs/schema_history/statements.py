"""A DDL statement of the binlog -> the schema changes it makes (issue #17 item 1), no Spark.

The binlog carries DDL as the text the client sent (a Query event, with the session's default
database), so every spelling MySQL and MariaDB accept reaches us: several actions in one ALTER
(`ADD a INT, DROP b, CHANGE c d BIGINT AFTER a`), optional COLUMN / IF [NOT] EXISTS, FIRST /
AFTER, `ADD (a INT, b INT)`, comments. sqlglot (the MariaDB dialect of libs/targets/ddl.py)
parses CREATE TABLE and each column definition; it falls back to an opaque Command for most
multi-action and CHANGE / MODIFY ALTERs, so the ALTER's action list is split here on sqlglot's
own tokens (commas outside parentheses and strings) and each action read by its leading words.

Results (`parse`):
  CreateTable, CreateLike, AlterTable(actions), RenameTables, Truncate, DropTables,
  DropDatabase: applied to the schema history (libs/schema_history/history.py);
  NoSchemaChange: DDL that changes no table's columns, keys or rows (CREATE DATABASE, a
    non-unique index, ENGINE=..., triggers, views, grants, ...);
  Unsupported: DDL that would change rows or columns in a way the binlog does not show
    (TRUNCATE / DROP / EXCHANGE PARTITION delete or move rows with no row events; CREATE TABLE
    ... SELECT logged as a statement; SYSTEM VERSIONING adds hidden columns; an action this
    module does not know). The job's schema_changes policy decides; never a guess.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable, Sequence

import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError
from sqlglot.tokens import Token, TokenType

from libs.schema_history.table_schema import FIRST, SchemaChangeError, TableSchema
from libs.targets.ddl import MariaDB

_NAME_TOKENS = (TokenType.IDENTIFIER, TokenType.VAR)
# ALTER TABLE actions that change no column, key or row (the server rebuilds or re-labels)
_NO_CHANGE_WORDS = {
    "ENGINE", "ALGORITHM", "LOCK", "COMMENT", "AUTO_INCREMENT", "ROW_FORMAT", "FORCE", "ORDER",
    "KEY_BLOCK_SIZE", "STATS_AUTO_RECALC", "STATS_PERSISTENT", "STATS_SAMPLE_PAGES", "PACK_KEYS",
    "CHECKSUM", "DELAY_KEY_WRITE", "DISABLE", "ENABLE", "AVG_ROW_LENGTH", "MAX_ROWS", "MIN_ROWS",
    "PAGE_CHECKSUM", "PAGE_COMPRESSED", "PAGE_COMPRESSION_LEVEL", "ENCRYPTED", "ENCRYPTION_KEY_ID",
    "TRANSACTIONAL", "INSERT_METHOD", "UNION", "DATA", "INDEX", "CONNECTION", "TABLESPACE",
    "COLLATE", "WITH", "WITHOUT", "ANALYZE", "CHECK", "OPTIMIZE", "REBUILD", "REPAIR",
    "COALESCE", "REORGANIZE", "PARTITION", "REMOVE", "SECONDARY_ENGINE",
}


class DdlParseError(ValueError):
    """The statement is DDL but cannot be read; the caller names source and position."""


@dataclass(frozen=True)
class TableName:
    database: str
    table: str

    def __str__(self) -> str:
        return f"{self.database}.{self.table}"


# -- results -----------------------------------------------------------------------------------
@dataclass(frozen=True)
class CreateTable:
    name: TableName
    schema: TableSchema
    or_replace: bool = False
    if_not_exists: bool = False


@dataclass(frozen=True)
class CreateLike:
    name: TableName
    like: TableName
    if_not_exists: bool = False


@dataclass(frozen=True)
class AlterTable:
    name: TableName
    actions: tuple["Action", ...]
    if_exists: bool = False

    def apply(self, schema: TableSchema) -> TableSchema:
        for action in self.actions:
            schema = action.apply(schema)
        return schema

    @property
    def renamed_to(self) -> TableName | None:
        """ALTER TABLE t RENAME [TO] u: the last such action's name."""
        names = [a.name for a in self.actions if isinstance(a, RenameTo)]
        return names[-1] if names else None


@dataclass(frozen=True)
class RenameTables:
    pairs: tuple[tuple[TableName, TableName], ...]


@dataclass(frozen=True)
class Truncate:
    name: TableName


@dataclass(frozen=True)
class DropTables:
    names: tuple[TableName, ...]
    if_exists: bool = False


@dataclass(frozen=True)
class DropDatabase:
    database: str


@dataclass(frozen=True)
class NoSchemaChange:
    reason: str


@dataclass(frozen=True)
class Unsupported:
    reason: str


# -- ALTER TABLE actions: each applies itself to a version ---------------------------------------
@dataclass(frozen=True)
class Action:
    def apply(self, schema: TableSchema) -> TableSchema:  # pragma: no cover - every action overrides
        raise NotImplementedError


@dataclass(frozen=True)
class AddColumn(Action):
    definition: str
    position: str | None = None  # FIRST, a column name (AFTER it), None (at the end)
    if_not_exists: bool = False

    def apply(self, schema):
        col_def = _column_def(self.definition)
        if self.if_not_exists and schema.has_column(col_def.name):
            return schema
        return schema.add_column(col_def, self.position)


@dataclass(frozen=True)
class ChangeColumn(Action):
    old: str
    definition: str
    position: str | None = None
    if_exists: bool = False

    def apply(self, schema):
        if self.if_exists and not schema.has_column(self.old):
            return schema
        return schema.change_column(self.old, _column_def(self.definition), self.position)


@dataclass(frozen=True)
class DropColumn(Action):
    column: str
    if_exists: bool = False

    def apply(self, schema):
        if self.if_exists and not schema.has_column(self.column):
            return schema
        return schema.drop_column(self.column)


@dataclass(frozen=True)
class RenameColumn(Action):
    old: str
    new: str

    def apply(self, schema):
        return schema.rename_column(self.old, self.new)


@dataclass(frozen=True)
class SetDefault(Action):
    column: str
    default: str | None  # SQL of the new DEFAULT, None = DROP DEFAULT

    def apply(self, schema):
        value = None if self.default is None else sqlglot.parse_one(self.default, dialect=MariaDB)
        return schema.set_default(self.column, value)


@dataclass(frozen=True)
class AddPrimaryKey(Action):
    columns: tuple[str, ...]

    def apply(self, schema):
        if schema.primary_key:
            raise SchemaChangeError(f"{schema.database}.{schema.table} already has a PRIMARY KEY")
        return schema.with_primary_key(self.columns)


@dataclass(frozen=True)
class DropPrimaryKey(Action):
    def apply(self, schema):
        return schema.without_primary_key()


@dataclass(frozen=True)
class AddUnique(Action):
    key: str | None
    columns: tuple[str, ...]
    if_not_exists: bool = False

    def apply(self, schema):
        if self.if_not_exists and self.key and any(n.lower() == self.key.lower() for n, _ in schema.unique_keys):
            return schema
        return schema.with_unique(self.key, self.columns)


@dataclass(frozen=True)
class DropKey(Action):
    key: str

    def apply(self, schema):
        return schema.without_key(self.key)


@dataclass(frozen=True)
class RenameKey(Action):
    old: str
    new: str

    def apply(self, schema):
        return schema.renamed_key(self.old, self.new)


@dataclass(frozen=True)
class TableCharset(Action):
    charset: str
    convert: bool = False  # CONVERT TO: every string column too, not only later ones

    def apply(self, schema):
        return schema.converted(self.charset) if self.convert else schema.with_charset(self.charset)


@dataclass(frozen=True)
class RenameTo(Action):
    name: TableName

    def apply(self, schema):
        return schema.renamed(self.name.database, self.name.table)


SchemaChange = (CreateTable | CreateLike | AlterTable | RenameTables | Truncate | DropTables
                | DropDatabase | NoSchemaChange | Unsupported)


# -- parsing -------------------------------------------------------------------------------------
class _Tokens:
    """A cursor over sqlglot tokens of one statement, reading words case-insensitively."""

    def __init__(self, sql: str, tokens: Sequence[Token]):
        self.sql, self.tokens, self.i = sql, _words(sql, tokens), 0

    def peek(self, ahead: int = 0) -> str | None:
        j = self.i + ahead
        if j >= len(self.tokens):
            return None
        t = self.tokens[j]
        return None if t.token_type in (TokenType.IDENTIFIER, TokenType.STRING) else t.text.upper()

    def accept(self, *words: str) -> bool:
        """Consume `words` when the next tokens are exactly them."""
        if all(self.peek(k) == w for k, w in enumerate(words)):
            self.i += len(words)
            return True
        return False

    def expect(self, *words: str) -> None:
        if not self.accept(*words):
            raise DdlParseError(f"expected {' '.join(words)} at {self.rest()[:60]!r}")

    def name(self) -> str:
        if self.i >= len(self.tokens):
            raise DdlParseError("a name is missing at the end of the statement")
        t = self.tokens[self.i]
        if t.token_type in (TokenType.STRING, TokenType.L_PAREN, TokenType.COMMA, TokenType.R_PAREN):
            raise DdlParseError(f"expected a name at {self.rest()[:60]!r}")
        self.i += 1
        return t.text

    def table(self, default_db: str) -> TableName:
        first = self.name()
        if self.accept("."):
            return TableName(first, self.name())
        if not default_db:
            raise DdlParseError(f"table {first!r} has no database (no USE before it)")
        return TableName(default_db, first)

    def done(self) -> bool:
        return self.i >= len(self.tokens)

    def rest(self) -> str:
        return self.sql[self.tokens[self.i].start:] if not self.done() else ""

    def names_in_parens(self) -> tuple[str, ...]:
        """`(a, b(10), c DESC)`: the column names of a key part list."""
        self.expect("(")
        names, depth, expect_name = [], 0, True
        while not self.done():
            t = self.tokens[self.i]
            self.i += 1
            if t.token_type == TokenType.L_PAREN:
                depth += 1
            elif t.token_type == TokenType.R_PAREN:
                if depth == 0:
                    return tuple(names)
                depth -= 1
            elif t.token_type == TokenType.COMMA and depth == 0:
                expect_name = True
            elif expect_name and depth == 0:
                names.append(t.text)
                expect_name = False
        raise DdlParseError("unbalanced parentheses")

    def split(self) -> list["_Tokens"]:
        """The remaining tokens cut at commas outside parentheses: one cursor per ALTER action."""
        parts, current, depth = [], [], 0
        for t in self.tokens[self.i:]:
            if t.token_type == TokenType.L_PAREN:
                depth += 1
            elif t.token_type == TokenType.R_PAREN:
                depth -= 1
            if t.token_type == TokenType.COMMA and depth == 0:
                parts.append(current)
                current = []
            else:
                current.append(t)
        parts.append(current)
        if any(not p for p in parts):
            raise DdlParseError("an empty ALTER TABLE action")
        return [_Tokens(self.sql, p) for p in parts]

    def text(self, end: int | None = None) -> str:
        """The original SQL of the remaining tokens (up to token index `end`)."""
        tokens = self.tokens[self.i:end]
        return self.sql[tokens[0].start:tokens[-1].end + 1] if tokens else ""


def _words(sql: str, tokens: Sequence[Token]) -> list[Token]:
    """sqlglot's tokens with its multi-word keywords ('PRIMARY KEY', 'CHARACTER SET', 'ORDER BY')
    cut into one token per word, so actions are read word by word whatever sqlglot joins."""
    out = []
    for t in tokens:
        raw = sql[t.start:t.end + 1]
        if t.token_type in (TokenType.IDENTIFIER, TokenType.STRING) or not re.search(r"\s", raw):
            out.append(t)
            continue
        out += [Token(TokenType.VAR, m.group(), t.line, t.col, t.start + m.start(), t.start + m.end() - 1)
                for m in re.finditer(r"\S+", raw)]
    return out


def _tokenize(sql: str) -> list[Token]:
    """sqlglot's tokens of `sql`. Its MySQL tokenizer reads a few statements (RENAME, ...) as a
    command word plus the rest as one string; the rest is then tokenized on its own, blanked
    in place, so every token keeps its offset in `sql`."""
    tokens = MariaDB().tokenize(sql)
    if len(tokens) == 2 and tokens[1].token_type == TokenType.STRING and tokens[0].token_type != TokenType.STRING:
        head = tokens[0]
        rest = MariaDB().tokenize(" " * (head.end + 1) + sql[head.end + 1:])
        tokens = [head, *rest]
    return tokens


def parse(sql: str, default_db: str = "") -> list[SchemaChange]:
    """The schema changes of one DDL statement; `default_db` is the Query event's database.
    DdlParseError when the statement cannot be read (the caller's policy decides)."""
    try:
        tokens = _Tokens(sql, _tokenize(sql))
    except SqlglotError as exc:
        raise DdlParseError(f"cannot tokenize: {exc}") from None
    if tokens.done():
        return [NoSchemaChange("empty statement")]
    for words, reader in _STATEMENTS:
        start = tokens.i
        if tokens.accept(*words):
            return reader(tokens, default_db)
        tokens.i = start
    return [NoSchemaChange(f"{tokens.peek()} statement: no table schema")]


def _create(tokens: _Tokens, default_db: str) -> list[SchemaChange]:
    or_replace = tokens.accept("OR", "REPLACE")
    if tokens.accept("TEMPORARY"):
        return [NoSchemaChange("a temporary table is never in a row-format binlog")]
    if tokens.accept("UNIQUE"):
        tokens.accept("INDEX") or tokens.expect("KEY")
        tokens.accept("IF", "NOT", "EXISTS")
        key = tokens.name()
        tokens.expect("ON")
        table = tokens.table(default_db)
        return [AlterTable(table, (AddUnique(key, tokens.names_in_parens(), if_not_exists=True),))]
    if not tokens.accept("TABLE"):
        return [NoSchemaChange(f"CREATE {tokens.peek()}: no table schema")]
    if_not_exists = tokens.accept("IF", "NOT", "EXISTS")
    name = tokens.table(default_db)
    if tokens.accept("LIKE") or (tokens.peek() == "(" and tokens.peek(1) == "LIKE" and tokens.accept("(", "LIKE")):
        return [CreateLike(name, tokens.table(default_db), if_not_exists)]
    try:
        stmt = sqlglot.parse_one(tokens.sql, dialect=MariaDB)
    except SqlglotError as exc:
        raise DdlParseError(f"cannot parse CREATE TABLE {name}: {_first_line(exc)}") from None
    if stmt.args.get("expression") is not None or not isinstance(stmt.this, exp.Schema):
        return [Unsupported(f"CREATE TABLE {name} ... SELECT logged as a statement: its columns come "
                            f"from the query, which the binlog does not describe")]
    schema = TableSchema.from_create(stmt, name.database)
    return [CreateTable(name, schema.renamed(name.database, name.table), or_replace, if_not_exists)]


def _alter(tokens: _Tokens, default_db: str) -> list[SchemaChange]:
    if_exists = tokens.accept("IF", "EXISTS")
    name = tokens.table(default_db)
    if tokens.done():
        return [NoSchemaChange("ALTER TABLE without an action")]
    actions = []
    for part in tokens.split():
        action = _action(part, default_db)
        if isinstance(action, Unsupported):
            return [Unsupported(f"ALTER TABLE {name}: {action.reason}")]
        if isinstance(action, tuple):  # ADD (a INT, b INT): one action per column
            actions += action
        elif action is not None:
            actions.append(action)
    return [AlterTable(name, tuple(actions), if_exists)] if actions else [NoSchemaChange("ALTER TABLE with no "
                                                                                         "schema action")]


def _action(t: _Tokens, default_db: str) -> Action | tuple[Action, ...] | Unsupported | None:
    word = t.peek()
    if t.accept("ADD"):
        return _add(t)
    if t.accept("DROP"):
        return _drop(t)
    if t.accept("CHANGE"):
        t.accept("COLUMN")
        if_exists = t.accept("IF", "EXISTS")
        old = t.name()
        definition, position = _definition(t)
        return ChangeColumn(old, definition, position, if_exists)
    if t.accept("MODIFY"):
        t.accept("COLUMN")
        if_exists = t.accept("IF", "EXISTS")
        definition, position = _definition(t)
        return ChangeColumn(_column_def(definition).name, definition, position, if_exists)
    if t.accept("RENAME"):
        if t.accept("COLUMN"):
            old = t.name()
            t.expect("TO")
            return RenameColumn(old, t.name())
        if t.accept("INDEX") or t.accept("KEY"):
            old = t.name()
            t.expect("TO")
            return RenameKey(old, t.name())
        t.accept("TO") or t.accept("AS")
        return RenameTo(t.table(default_db))
    if t.accept("ALTER"):
        if t.peek() == "INDEX" or t.peek() == "KEY" or t.peek() == "CHECK" or t.peek() == "CONSTRAINT":
            return None  # visibility of an index, enforcement of a check: no column or key change
        t.accept("COLUMN")
        t.accept("IF", "EXISTS")
        column = t.name()
        if t.accept("SET", "DEFAULT"):
            return SetDefault(column, t.text())
        if t.accept("DROP", "DEFAULT"):
            return SetDefault(column, None)
        return None  # SET VISIBLE / INVISIBLE: the column and its value stay
    if t.accept("CONVERT", "TO"):
        if not _charset_words(t):
            raise DdlParseError(f"expected CHARACTER SET at {t.rest()[:60]!r}")
        return TableCharset(t.name(), convert=True)
    if t.accept("DEFAULT") or t.peek() in _CHARSET_WORDS:
        if _charset_words(t):
            t.accept("=")
            return TableCharset(t.name())
        return None  # DEFAULT COLLATE
    if t.peek() in ("TRUNCATE", "EXCHANGE", "DISCARD", "IMPORT") and t.peek(1) == "PARTITION":
        return Unsupported(f"{word} PARTITION changes rows without logging them as rows; re-snapshot the table")
    if word in ("DISCARD", "IMPORT"):
        return Unsupported(f"{word} TABLESPACE replaces the table's rows without logging them; re-snapshot the table")
    if word in _NO_CHANGE_WORDS:
        return None
    return Unsupported(f"unknown action {t.text()[:80]!r}")


_CHARSET_WORDS = ("CHARSET", "CHARACTER")


def _charset_words(t: _Tokens) -> bool:
    return t.accept("CHARSET") or t.accept("CHARACTER", "SET")


def _add(t: _Tokens) -> Action | tuple[Action, ...] | Unsupported | None:
    if t.peek() == "CONSTRAINT":
        t.accept("CONSTRAINT")
        t.accept("IF", "NOT", "EXISTS")
        name = t.name() if t.peek() not in ("PRIMARY", "UNIQUE", "FOREIGN", "CHECK") else None
        return _add_key(t, name)
    if t.peek() in ("PRIMARY", "UNIQUE", "KEY", "INDEX", "FULLTEXT", "SPATIAL", "FOREIGN", "CHECK", "PERIOD"):
        return _add_key(t, None)
    if t.peek() == "PARTITION":
        return None
    if t.accept("SYSTEM", "VERSIONING"):
        return Unsupported("ADD SYSTEM VERSIONING adds hidden row_start/row_end columns to the row images")
    t.accept("COLUMN")
    if_not_exists = t.accept("IF", "NOT", "EXISTS")
    if t.peek() == "(":  # ADD [COLUMN] (a INT, b INT): each at the end, in order
        inner = t.text()[1:-1]
        return tuple(AddColumn(d, None, if_not_exists) for d in _definitions(inner))
    definition, position = _definition(t)
    return AddColumn(definition, position, if_not_exists)


def _add_key(t: _Tokens, name: str | None) -> Action | None:
    if t.accept("PRIMARY", "KEY"):
        _skip_index_type(t)
        return AddPrimaryKey(t.names_in_parens())
    if t.accept("UNIQUE"):
        t.accept("INDEX") or t.accept("KEY")
        if_not_exists = t.accept("IF", "NOT", "EXISTS")
        if t.peek() != "(" and t.peek() not in ("USING",):
            name = t.name()
        _skip_index_type(t)
        return AddUnique(name, t.names_in_parens(), if_not_exists)
    return None  # KEY / INDEX / FULLTEXT / SPATIAL / FOREIGN KEY / CHECK / PERIOD: no unique key


def _skip_index_type(t: _Tokens) -> None:
    if t.accept("USING"):
        t.name()


def _drop(t: _Tokens) -> Action | Unsupported | None:
    if t.accept("PRIMARY", "KEY"):
        return DropPrimaryKey()
    if t.accept("INDEX") or t.accept("KEY"):
        t.accept("IF", "EXISTS")
        return DropKey(t.name())
    if t.accept("CONSTRAINT"):  # a UNIQUE key may be dropped by its constraint name (MariaDB 10.2+)
        t.accept("IF", "EXISTS")
        return DropKey(t.name())
    if t.peek() in ("FOREIGN", "CHECK", "PERIOD"):
        return None
    if t.peek() == "PARTITION":
        return Unsupported("DROP PARTITION deletes rows without logging them as rows; re-snapshot the table")
    if t.accept("SYSTEM", "VERSIONING"):
        return Unsupported("DROP SYSTEM VERSIONING removes the hidden row_start/row_end columns")
    t.accept("COLUMN")
    if_exists = t.accept("IF", "EXISTS")
    column = t.name()
    t.accept("RESTRICT") or t.accept("CASCADE")
    return DropColumn(column, if_exists)


def _definition(t: _Tokens) -> tuple[str, str | None]:
    """A column definition up to an optional trailing FIRST / AFTER col: (its SQL, position)."""
    end = len(t.tokens)
    position = None
    if end - t.i >= 2 and t.tokens[end - 1].token_type not in (TokenType.STRING,) and t.tokens[end - 1].text.upper() == "FIRST":
        position, end = FIRST, end - 1
    elif end - t.i >= 3 and t.tokens[end - 2].text.upper() == "AFTER" and t.tokens[end - 2].token_type in _NAME_TOKENS:
        position, end = t.tokens[end - 1].text, end - 2
    definition = t.text(end)
    if not definition:
        raise DdlParseError(f"a column definition is missing in {t.sql[:80]!r}")
    _column_def(definition)  # read now: an unreadable definition names this statement, not a later one
    return definition, position


def _definitions(inner: str) -> list[str]:
    stmt = _create_probe(inner)
    return [c.sql(dialect=MariaDB) for c in stmt.this.expressions if isinstance(c, exp.ColumnDef)]


def _create_probe(columns_sql: str) -> exp.Create:
    try:
        stmt = sqlglot.parse_one(f"CREATE TABLE _t ({columns_sql})", dialect=MariaDB)
    except SqlglotError as exc:
        raise DdlParseError(f"cannot read the column definition {columns_sql[:80]!r}: {_first_line(exc)}") from None
    if not isinstance(stmt, exp.Create) or not isinstance(stmt.this, exp.Schema):
        raise DdlParseError(f"cannot read the column definition {columns_sql[:80]!r}")
    return stmt


def _column_def(definition: str) -> exp.ColumnDef:
    items = _create_probe(definition).this.expressions
    if len(items) != 1 or not isinstance(items[0], exp.ColumnDef) or items[0].args.get("kind") is None:
        raise DdlParseError(f"not one column definition: {definition[:80]!r}")
    return items[0]


def _first_line(exc: Exception) -> str:
    return str(exc).splitlines()[0] if str(exc) else type(exc).__name__


def _rename(tokens: _Tokens, default_db: str) -> list[SchemaChange]:
    pairs = []
    for part in tokens.split():
        old = part.table(default_db)
        part.expect("TO")
        pairs.append((old, part.table(default_db)))
    return [RenameTables(tuple(pairs))]


def _truncate(tokens: _Tokens, default_db: str) -> list[SchemaChange]:
    tokens.accept("TABLE")
    return [Truncate(tokens.table(default_db))]


def _drop_statement(tokens: _Tokens, default_db: str) -> list[SchemaChange]:
    temporary = tokens.accept("TEMPORARY")
    if tokens.accept("TABLE"):
        if temporary:
            return [NoSchemaChange("a temporary table is never in a row-format binlog")]
        if_exists = tokens.accept("IF", "EXISTS")
        names = []
        for part in tokens.split():
            names.append(part.table(default_db))
        return [DropTables(tuple(names), if_exists)]
    if tokens.accept("DATABASE") or tokens.accept("SCHEMA"):
        tokens.accept("IF", "EXISTS")
        return [DropDatabase(tokens.name())]
    if tokens.accept("INDEX"):
        tokens.accept("IF", "EXISTS")
        key = tokens.name()
        tokens.expect("ON")
        return [AlterTable(tokens.table(default_db), (DropKey(key),))]
    return [NoSchemaChange(f"DROP {tokens.peek()}: no table schema")]


_STATEMENTS: tuple[tuple[tuple[str, ...], Callable[[_Tokens, str], list[SchemaChange]]], ...] = (
    (("CREATE",), _create),
    (("ALTER", "ONLINE", "IGNORE", "TABLE"), _alter),
    (("ALTER", "ONLINE", "TABLE"), _alter),
    (("ALTER", "IGNORE", "TABLE"), _alter),
    (("ALTER", "TABLE"), _alter),
    (("RENAME", "TABLE"), _rename),
    (("RENAME", "TABLES"), _rename),
    (("TRUNCATE",), _truncate),
    (("DROP",), _drop_statement),
)

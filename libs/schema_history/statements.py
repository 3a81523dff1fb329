"""A DDL statement of the binlog -> the schema changes it makes (issue #17 item 1), no Spark.

The binlog carries DDL as the text the client sent (a Query event, with the session's default
database), so every spelling MySQL and MariaDB accept reaches us: several actions in one ALTER
(`ADD a INT, DROP b, CHANGE c d BIGINT AFTER a`), optional COLUMN / IF [NOT] EXISTS, FIRST /
AFTER, `ADD (a INT, b INT)`, comments, executable comments (`/*!40000 ... */`). The text is
first made what the server executes (libs/schema_history/executed_text.py: executable comments
read by the source's server version, SERIAL DEFAULT VALUE spelled out). sqlglot (the MariaDB
dialect of libs/targets/ddl.py) parses CREATE TABLE and each column definition; it falls back to
an opaque Command for most multi-action and CHANGE / MODIFY ALTERs, so the ALTER's action list is
split here on sqlglot's own tokens (commas outside parentheses and strings: ddl_tokens.py) and
each action read by its leading words.

Results (`parse`; ddl_results.py, alter_actions.py):
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

from typing import Callable

import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError
from sqlglot.tokens import TokenType

from libs.schema_history.alter_actions import (  # noqa: F401 - the module's public names, read as S.<name>
    Action, AddColumn, AddPrimaryKey, AddUnique, AlterTable, ChangeColumn, DropColumn, DropKey,
    DropPrimaryKey, RenameColumn, RenameKey, RenameTo, SetDefault, TableCharset, column_definition,
    column_definitions, first_line)
from libs.schema_history.ddl_results import (  # noqa: F401
    CreateLike, CreateTable, DdlParseError, DropDatabase, DropTables, NoSchemaChange, RenameTables, TableName,
    Truncate, Unsupported)
from libs.schema_history.ddl_tokens import DdlTokens, tokenize
from libs.schema_history.executed_text import executed_text
from libs.schema_history.table_schema import FIRST, TableSchema
from libs.targets.ddl import MariaDB

SchemaChange = (CreateTable | CreateLike | AlterTable | RenameTables | Truncate | DropTables
                | DropDatabase | NoSchemaChange | Unsupported)
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


# -- parsing -------------------------------------------------------------------------------------
def parse(sql: str, default_db: str = "", server_version: str | None = None) -> list[SchemaChange]:
    """The schema changes of one DDL statement; `default_db` is the Query event's database,
    `server_version` the source server's (its Format_description's), which says what the
    statement's executable comments execute. DdlParseError when the statement cannot be read
    (the caller's policy decides)."""
    try:
        sql = executed_text(sql, server_version)
        tokens = DdlTokens(sql, tokenize(sql))
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


def _create(tokens: DdlTokens, default_db: str) -> list[SchemaChange]:
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
    if tokens.accept("LIKE") or (tokens.peek() == "(" and tokens.peek(1) == "LIKE"
                                 and tokens.accept("(", "LIKE")):
        return [CreateLike(name, tokens.table(default_db), if_not_exists)]
    try:
        stmt = sqlglot.parse_one(tokens.sql, dialect=MariaDB)
    except SqlglotError as exc:
        raise DdlParseError(f"cannot parse CREATE TABLE {name}: {first_line(exc)}") from None
    if stmt.args.get("expression") is not None or not isinstance(stmt.this, exp.Schema):
        return [Unsupported(f"CREATE TABLE {name} ... SELECT logged as a statement: its columns come "
                            f"from the query, which the binlog does not describe")]
    schema = TableSchema.from_create(stmt, name.database)
    return [CreateTable(name, schema.renamed(name.database, name.table), or_replace, if_not_exists)]


def _alter(tokens: DdlTokens, default_db: str) -> list[SchemaChange]:
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
    return ([AlterTable(name, tuple(actions), if_exists)] if actions
            else [NoSchemaChange("ALTER TABLE with no schema action")])


def _action(t: DdlTokens, default_db: str) -> Action | tuple[Action, ...] | Unsupported | None:
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
        return ChangeColumn(column_definition(definition).name, definition, position, if_exists)
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
        return Unsupported(f"{word} PARTITION changes rows without logging them as rows; "
                           "re-snapshot the table")
    if word in ("DISCARD", "IMPORT"):
        return Unsupported(f"{word} TABLESPACE replaces the table's rows without logging them; "
                           "re-snapshot the table")
    if word in _NO_CHANGE_WORDS:
        return None
    return Unsupported(f"unknown action {t.text()[:80]!r}")


_CHARSET_WORDS = ("CHARSET", "CHARACTER")


def _charset_words(t: DdlTokens) -> bool:
    return t.accept("CHARSET") or t.accept("CHARACTER", "SET")


def _add(t: DdlTokens) -> Action | tuple[Action, ...] | Unsupported | None:
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
        return tuple(AddColumn(d, None, if_not_exists) for d in column_definitions(inner))
    definition, position = _definition(t)
    return AddColumn(definition, position, if_not_exists)


def _add_key(t: DdlTokens, name: str | None) -> Action | None:
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


def _skip_index_type(t: DdlTokens) -> None:
    if t.accept("USING"):
        t.name()


def _drop(t: DdlTokens) -> Action | Unsupported | None:
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


def _definition(t: DdlTokens) -> tuple[str, str | None]:
    """A column definition up to an optional trailing FIRST / AFTER col: (its SQL, position)."""
    end = len(t.tokens)
    position = None
    if (end - t.i >= 2 and t.tokens[end - 1].token_type not in (TokenType.STRING,)
            and t.tokens[end - 1].text.upper() == "FIRST"):
        position, end = FIRST, end - 1
    elif (end - t.i >= 3 and t.tokens[end - 2].text.upper() == "AFTER"
            and t.tokens[end - 2].token_type in _NAME_TOKENS):
        position, end = t.tokens[end - 1].text, end - 2
    definition = t.text(end)
    if not definition:
        raise DdlParseError(f"a column definition is missing in {t.sql[:80]!r}")
    column_definition(definition)  # read now: an unreadable definition names this statement, not a later one
    return definition, position


def _rename(tokens: DdlTokens, default_db: str) -> list[SchemaChange]:
    pairs = []
    for part in tokens.split():
        old = part.table(default_db)
        part.expect("TO")
        pairs.append((old, part.table(default_db)))
    return [RenameTables(tuple(pairs))]


def _truncate(tokens: DdlTokens, default_db: str) -> list[SchemaChange]:
    tokens.accept("TABLE")
    return [Truncate(tokens.table(default_db))]


def _drop_statement(tokens: DdlTokens, default_db: str) -> list[SchemaChange]:
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


_STATEMENTS: tuple[tuple[tuple[str, ...], Callable[[DdlTokens, str], list[SchemaChange]]], ...] = (
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

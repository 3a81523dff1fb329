"""A DDL statement as the source server executes it, from the text it logged (issue #38 items 2
and 3), no Spark.

The binlog logs a statement verbatim, and the server executes more than its plain text:

* Executable comments (MariaDB sql/sql_lex.cc, Lex_input_stream::lex_one_token, case
  MY_LEX_LONG_COMMENT): `/*! body */` and `/*M! body */` are read as `body`; with a version,
  `/*!NNNNN body */` (5 digits, or 6 for MariaDB: `/*M!100000`) only when the server's version
  is at least NNNNN, and a MariaDB server also skips `/*!50700` .. `/*!99999` (MySQL 5.7+
  syntax) unless the comment is `/*M!`. `/*M!` is MariaDB's own: a MySQL server reads it as a
  plain comment. A skipped version comment may hold one plain comment inside. So the server
  version comes from the source (the Format_description event's server_version); when it is not
  known, a statement whose reading depends on it is refused (DdlParseError), never guessed.
* `SERIAL DEFAULT VALUE` in an integer column's definition is `NOT NULL AUTO_INCREMENT UNIQUE`
  (sql_yacc.yy, attribute SERIAL_SYM DEFAULT VALUE_SYM). The column type SERIAL (BIGINT
  UNSIGNED NOT NULL AUTO_INCREMENT UNIQUE) is a type, read where column definitions are
  (libs/schema_history/table_schema.py).

Strings ('..', "..") and quoted identifiers (`..`) are copied as they are: a `/*!` inside one is
text; line comments (`# ..`, `-- ..`) likewise.

    >>> executed_text("ALTER TABLE d ADD a INT /*!40000 , ADD b INT */", "10.11.6-MariaDB-log")
    'ALTER TABLE d ADD a INT   , ADD b INT  '
    >>> executed_text("ALTER TABLE d /*!99999 DROP v */ ENGINE=InnoDB", "10.11.6-MariaDB-log")
    'ALTER TABLE d   ENGINE=InnoDB'
"""
from __future__ import annotations

import re

from sqlglot.tokens import TokenType

from libs.binlog.events_control import flavour_of
from libs.schema_history.ddl_results import DdlParseError
from libs.schema_history.ddl_tokens import tokenize, words

_VERSION = re.compile(r"(\d+)\.(\d+)\.(\d+)")
_LINE_SPACE = " \t\r\n\f\v"
_MARIADB_SKIPS = range(50700, 100000)  # /*!NNNNN of MySQL 5.7+ syntax, which MariaDB skips unless /*M!


def executed_text(sql: str, server_version: str | None) -> str:
    """`sql` with its executable comments read as the server of `server_version` (the
    Format_description's string, e.g. '10.11.6-MariaDB-log'; None: not known) reads them, and
    SERIAL DEFAULT VALUE spelled out. DdlParseError: an unterminated or nested executable
    comment (the server would not have logged it), or one whose reading needs the unknown version."""
    if "/*" in sql:
        sql, _end = _Scanner(sql, server_version).plain(0, inside=False)
    return _serial_default_spelled_out(sql)


class _Scanner:
    def __init__(self, sql: str, server_version: str | None):
        self.sql, self.server_version = sql, server_version

    def plain(self, i: int, inside: bool) -> tuple[str, int]:
        """The text from `i` on, executable comments expanded; `inside` an executed comment's
        body, up to its closing `*/` (returns the index after it)."""
        sql, out, n = self.sql, [], len(self.sql)
        start = i
        while i < n:
            c = sql[i]
            if c in "'\"`":
                i = _quoted_end(sql, i)
            elif c == "#" or (sql.startswith("--", i) and (i + 2 == n or sql[i + 2] in _LINE_SPACE)):
                newline = sql.find("\n", i)
                i = n if newline < 0 else newline
            elif inside and sql.startswith("*/", i):
                out.append(sql[start:i])
                return "".join(out), i + 2
            elif sql.startswith("/*", i):
                out.append(sql[start:i])
                text, i = self.comment(i, inside)
                out.append(text)
                start = i
            else:
                i += 1
        if inside:
            raise DdlParseError(f"an executable comment is not closed: {sql[:80]!r}")
        out.append(sql[start:])
        return "".join(out), n

    def comment(self, i: int, inside: bool) -> tuple[str, int]:
        """The comment at `i` as the server reads it: its body (executed) or a space (skipped)."""
        sql = self.sql
        mariadb_only = sql.startswith("/*M!", i)
        if not (sql.startswith("/*!", i) or mariadb_only):
            return " ", _comment_end(sql, i + 2, nested=0)
        if mariadb_only and self._flavour(sql[i:i + 4]) != "mariadb":
            return " ", _comment_end(sql, i + 2, nested=0)  # MySQL's lexer: a plain comment
        if inside:
            raise DdlParseError(f"an executable comment inside another: {sql[i:i + 40]!r}")
        body = i + (4 if mariadb_only else 3)
        digits = re.match(r"\d{5,6}", sql[body:body + 6])
        if digits is None:  # no version: always executed
            text, end = self.plain(body, inside=True)
            return f" {text} ", end
        number = digits.group()
        if len(number) == 6 and self._flavour(sql[i:body + 6]) != "mariadb":
            raise DdlParseError(f"{sql[i:body + 6]!r}: a 6-digit version comment on a MySQL source "
                                f"(its reading depends on the MySQL release); the statement is not read")
        if self._executes(int(number), mariadb_only, sql[i:body + len(number)]):
            text, end = self.plain(body + len(number), inside=True)
            return f" {text} ", end
        return " ", _comment_end(sql, body, nested=1)

    def _executes(self, version: int, mariadb_only: bool, marker: str) -> bool:
        server = self._version_number(marker)
        if version > server:
            return False
        return mariadb_only or self._flavour(marker) != "mariadb" or version not in _MARIADB_SKIPS

    def _flavour(self, marker: str) -> str:
        if not self.server_version:
            raise DdlParseError(f"the executable comment {marker!r}... is read by the source's server "
                                f"version, which is not known here; the statement is not read")
        return flavour_of(self.server_version)

    def _version_number(self, marker: str) -> int:
        self._flavour(marker)
        found = _VERSION.match(self.server_version)
        if found is None:
            raise DdlParseError(f"the executable comment {marker!r}... "
                                f"is read by the source's server version, "
                                f"and {self.server_version!r} has no x.y.z; the statement is not read")
        major, minor, patch = (int(part) for part in found.groups())
        return major * 10_000 + minor * 100 + patch


def _quoted_end(sql: str, i: int) -> int:
    """The index after the string or quoted identifier opening at `i` (a doubled quote, or a
    backslash in a string, escapes)."""
    quote, j, n = sql[i], i + 1, len(sql)
    while j < n:
        if sql[j] == "\\" and quote != "`":
            j += 2
        elif sql[j] == quote:
            if j + 1 < n and sql[j + 1] == quote:
                j += 2
            else:
                return j + 1
        else:
            j += 1
    raise DdlParseError(f"a quoted text is not closed: {sql[i:i + 60]!r}")


def _comment_end(sql: str, i: int, nested: int) -> int:
    """The index after the `*/` closing a comment whose text starts at `i`; `nested` plain
    comments may open inside it (the server's consume_comment)."""
    n = len(sql)
    while i < n:
        if nested and sql.startswith("/*", i):
            i = _comment_end(sql, i + 2, nested - 1)
        elif sql.startswith("*/", i):
            return i + 2
        else:
            i += 1
    raise DdlParseError(f"a comment is not closed: {sql[:80]!r}")


def _serial_default_spelled_out(sql: str) -> str:
    """SERIAL DEFAULT VALUE (three words, not quoted) -> NOT NULL AUTO_INCREMENT UNIQUE."""
    if not re.search(r"(?i)\bserial\b", sql):
        return sql
    tokens = words(sql, tokenize(sql))
    out, last = [], 0
    for k in range(len(tokens) - 2):
        three = tokens[k:k + 3]
        if all(t.token_type not in (TokenType.IDENTIFIER, TokenType.STRING) for t in three) and \
                [t.text.upper() for t in three] == ["SERIAL", "DEFAULT", "VALUE"] and three[0].start >= last:
            out += [sql[last:three[0].start], "NOT NULL AUTO_INCREMENT UNIQUE"]
            last = three[2].end + 1
    return "".join(out) + sql[last:]

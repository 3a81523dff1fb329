"""A cursor over the sqlglot tokens of one DDL statement, read word by word (issue #17 item 1), no
Spark. sqlglot's MySQL tokenizer gives strings, quoted identifiers and punctuation as the server's
lexer does; its comments are dropped, so the text given here must already be the statement as the
server executes it (libs/schema_history/executed_text.py)."""
from __future__ import annotations

import re
from typing import Sequence

from sqlglot.tokens import Token, TokenType

from libs.schema_history.ddl_results import DdlParseError, TableName
from libs.targets.ddl import MariaDB


class DdlTokens:
    """A cursor over sqlglot tokens of one statement, reading words case-insensitively."""

    def __init__(self, sql: str, tokens: Sequence[Token]):
        self.sql, self.tokens, self.i = sql, words(sql, tokens), 0

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

    def split(self) -> list["DdlTokens"]:
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
        return [DdlTokens(self.sql, p) for p in parts]

    def text(self, end: int | None = None) -> str:
        """The original SQL of the remaining tokens (up to token index `end`)."""
        tokens = self.tokens[self.i:end]
        return self.sql[tokens[0].start:tokens[-1].end + 1] if tokens else ""


def words(sql: str, tokens: Sequence[Token]) -> list[Token]:
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


def tokenize(sql: str) -> list[Token]:
    """sqlglot's tokens of `sql`. Its MySQL tokenizer reads a few statements (RENAME, ...) as a
    command word plus the rest as one string; the rest is then tokenized on its own, blanked
    in place, so every token keeps its offset in `sql`."""
    tokens = MariaDB().tokenize(sql)
    if (len(tokens) == 2 and tokens[1].token_type == TokenType.STRING
            and tokens[0].token_type != TokenType.STRING):
        head = tokens[0]
        rest = MariaDB().tokenize(" " * (head.end + 1) + sql[head.end + 1:])
        tokens = [head, *rest]
    return tokens

"""A source table is the pair (database, table), never the text 'db.table' (issue #38 item 1).

MySQL and MariaDB allow a '.' inside a name: `a`.`b.c` and `a.b`.`c` both read 'a.b.c' when
joined, so a joined name cannot tell two tables apart, and splitting it at its first dot gives
the wrong pair for the second. Code keys tables on the pair; where a table must be one string
(a snapshot record's `tables` list, a snapshot change's trx_id) it is `table_key`'s text, which
reads back to the same pair.

`table_key` keeps the plain 'db.table' whenever that is unambiguous (the database has no '.'
and does not start with a backtick): records written before this rule, which joined every name
that way, read back unchanged, and so do the trx_ids (row ids) of their snapshot rows. Other
names are both quoted as SQL identifiers (libs/contracts/sql_names.py), '`a.b`.`c`'.

The include / exclude regexes of the job and of cdc-ship still match the joined text
(libs/snapshot/table_filter.py, their documented form): that is a selection, not an identity.
"""
from __future__ import annotations

from typing import NamedTuple

from libs.contracts.sql_names import quote_identifier


class TableName(NamedTuple):
    database: str
    table: str

    def joined(self) -> str:
        """'db.table': the text include / exclude regexes match; for messages, `quoted`."""
        return f"{self.database}.{self.table}"

    def quoted(self) -> str:
        """`db`.`table`: one unambiguous spelling for messages and SQL."""
        return f"{quote_identifier(self.database)}.{quote_identifier(self.table)}"

    def key(self) -> str:
        return table_key(self.database, self.table)


def table_key(database: str, table: str) -> str:
    """The pair as one string that `parse_table_key` reads back (module docstring)."""
    if "." in database or database.startswith("`"):
        return f"{quote_identifier(database)}.{quote_identifier(table)}"
    return f"{database}.{table}"


def parse_table_key(text: str) -> TableName:
    """`table_key`'s text (or a record's 'db.table' of before it) as the pair; ValueError when
    it is neither."""
    if not text.startswith("`"):
        database, dot, table = text.partition(".")
        if not dot:
            raise ValueError(f"table name {text!r} is not 'db.table'")
        return TableName(database, table)
    database, rest = _identifier(text, 0)
    if not rest.startswith(".`"):
        raise ValueError(f"table name {text!r} is not `db`.`table`")
    table, tail = _identifier(rest, 1)
    if tail:
        raise ValueError(f"table name {text!r} has {tail!r} after `db`.`table`")
    return TableName(database, table)


def _identifier(text: str, start: int) -> tuple[str, str]:
    """The backtick-quoted identifier at text[start] (inner backticks doubled), and the rest."""
    out, i = [], start + 1
    while i < len(text):
        if text[i] == "`":
            if text[i + 1:i + 2] == "`":
                out.append("`")
                i += 2
                continue
            return "".join(out), text[i + 1:]
        out.append(text[i])
        i += 1
    raise ValueError(f"table name {text!r} has an unclosed backtick")

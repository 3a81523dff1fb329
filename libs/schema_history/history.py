"""Every source table's schema, versioned by binlog position (issue #17 item 1; DESIGN.md "A
living source"), no Spark.

A table's history starts with its schema at a position: the snapshot's SHOW CREATE TABLE at the
snapshot's position P, or a CREATE TABLE in the stream. Each later DDL of the stream that touches
it adds a version at the DDL's position; a DROP (or the old name of a RENAME) adds a version
`None`: no such table from there on. `at(table, position)` is the version in force for a row
image logged at `position`: the last version strictly before it (a DDL and the rows after it are
in different events, so a row is never at a version's own position).

Renames move a history: `RENAME TABLE a TO b` gives b a version (a's schema, renamed) and a a
`None` version, so a's rows logged before the rename still read with a's versions. The pairs of
one RENAME apply in order (`a TO tmp, b TO a, tmp TO b` swaps two tables), as the server does.

`apply` returns what each DDL did to each table (TableChange), which the apply stage turns into
Delta operations in stream order; it raises HistoryError naming the statement and position
when the DDL cannot be read or does not fit the version it applies to.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from libs.settings.errors import one_line
from libs.schema_history import statements as S
from libs.schema_history.table_schema import SchemaChangeError, TableSchema
from libs.contracts.position import BinlogPosition

# TableChange kinds
CREATED, ALTERED, RENAMED, DROPPED, TRUNCATED, UNSUPPORTED = (
    "created", "altered", "renamed", "dropped", "truncated", "unsupported")


class HistoryError(ValueError):
    """A DDL the history cannot apply: unreadable, or not fitting the table's version."""

    def __init__(self, source: str, position: BinlogPosition, statement: str, reason: str,
                 names: tuple[S.TableName, ...] = ()):
        self.source, self.position, self.statement, self.reason = source, position, statement, reason
        self.names = names  # the tables it names, when it could be read
        super().__init__(f"source {source}, {position}: {reason}; statement: {_short(statement)}")


@dataclass(frozen=True)
class Version:
    position: BinlogPosition
    schema: TableSchema | None  # None: the table does not exist from `position` on
    statement: str | None = None  # the DDL that made it; None for a snapshot's starting schema
    error: str | None = None  # the DDL could not be applied: the schema is unknown from here (`refuse`)
    # the source server's, which says what the DDL's executable comments run
    server_version: str | None = None


@dataclass(frozen=True)
class TableChange:
    """What one DDL did to one table (the apply stage's unit of schema work)."""

    kind: str
    name: S.TableName
    before: TableSchema | None
    after: TableSchema | None
    renamed_from: S.TableName | None = None
    reason: str | None = None  # UNSUPPORTED: why


@dataclass
class SchemaHistory:
    """Versions per (source, database, table), in position order."""

    _tables: dict[tuple[str, str, str], list[Version]] = field(default_factory=dict)
    # (source, position) -> the server version each DDL was read with, whatever it changed
    _read_with: dict[tuple[str, BinlogPosition], str] = field(default_factory=dict)

    # -- reading --------------------------------------------------------------------------------
    def at(self, source: str, database: str, table: str, position: BinlogPosition) -> TableSchema | None:
        """The version in force for a row logged at `position` (None: unknown or dropped)."""
        versions = self._tables.get((source, database, table), ())
        key = position.key()
        found = None
        for version in versions:
            if version.position.key() < key:
                found = version
            else:
                break
        return found.schema if found else None

    def versions(self, source: str, database: str, table: str) -> tuple[Version, ...]:
        return tuple(self._tables.get((source, database, table), ()))

    def server_version(self, source: str, position: BinlogPosition) -> str | None:
        """The source server's version the DDL at `position` was read with (applied, restored or
        refused); None: no such DDL, or its version was not known. A change record of the DDL
        re-reads the statement with it (libs/schema_history/executed_text.py)."""
        return self._read_with.get((source, position))

    def tables(self) -> list[tuple[str, str, str]]:
        return sorted(self._tables)

    def latest(self, source: str, database: str, table: str) -> TableSchema | None:
        """The table's last known schema: a dropped table's, and before DDL the history could
        not apply (its rows are refused meanwhile), the one before it. None: never known."""
        for version in reversed(self._tables.get((source, database, table), ())):
            if version.schema is not None:
                return version.schema
        return None

    # -- building -------------------------------------------------------------------------------
    def start(self, source: str, schema: TableSchema, position: BinlogPosition,
              statement: str | None = None) -> None:
        """A table's schema at `position` (a snapshot's SHOW CREATE TABLE); ignored when the
        table already has a later version."""
        name = S.TableName(schema.database, schema.table)
        if not self._superseded(source, name, position):
            self._add(source, name, Version(position, schema, statement))

    def refuse(self, source: str, position: BinlogPosition, names, statement: str, reason: str,
               server_version: str | None = None) -> None:
        """A DDL of these tables that could not be applied (HistoryError): from `position` on
        their schema is unknown, until a snapshot or a CREATE TABLE gives them one again."""
        if server_version:
            self._read_with[(source, position)] = server_version
        for name in names:
            known = (source, name.database, name.table) in self._tables  # one without history stays so
            if known and not self._superseded(source, name, position):
                self._add(source, name, Version(position, None, statement, reason, server_version))

    def restore(self, source: str, database: str, table: str, version: Version) -> None:
        """A version kept by an earlier run (loaded in position order)."""
        name = S.TableName(database, table)
        if version.server_version:
            self._read_with[(source, version.position)] = version.server_version
        if not self._superseded(source, name, version.position):
            self._add(source, name, version)

    def apply(self, source: str, position: BinlogPosition, statement: str, default_db: str,
              server_version: str | None = None) -> list[TableChange]:
        """One DDL of the stream at `position`; the tables it changed, in the statement's order.
        `server_version`: the source server's (its Format_description's), which says what the
        statement's executable comments execute (statements.parse)."""
        if server_version:
            self._read_with[(source, position)] = server_version
        try:
            changes = S.parse(statement, default_db, server_version)
        except S.DdlParseError as exc:
            raise HistoryError(source, position, statement, f"cannot read the DDL: {exc}") from None
        out: list[TableChange] = []
        current: dict[S.TableName, TableSchema | None] = {}

        def now(name: S.TableName) -> TableSchema | None:
            # The version before the DDL, not the latest: a replayed batch applies its DDL to the
            # same version again (and `_add` replaces the version at its own position).
            if name in current:
                return current[name]
            return self.at(source, name.database, name.table, position)

        try:
            for change in changes:
                out += self._one(change, now, current)
        except SchemaChangeError as exc:
            names = tuple(dict.fromkeys(n for c in changes for n in _names_of(c)))
            raise HistoryError(source, position, statement, str(exc), names) from None
        # A table with a version after the DDL (a snapshot taken later) already holds its effect.
        stale = {name for name in {*current, *(c.name for c in out), *(c.renamed_from for c in out)}
                 if name is not None and self._superseded(source, name, position)}
        for name, schema in current.items():
            if name not in stale:
                self._add(source, name, Version(position, schema, statement, server_version=server_version))
        return [c for c in out if c.name not in stale and c.renamed_from not in stale]

    def added_at(self, source: str, position: BinlogPosition) -> list[tuple[S.TableName, Version]]:
        """The versions a DDL at `position` gave (what the job keeps of it: the versions in force)."""
        return [(S.TableName(d, t), v) for (s, d, t), versions in sorted(self._tables.items())
                if s == source for v in versions if v.position == position]

    def _one(self, change, now, current) -> list[TableChange]:
        if isinstance(change, S.NoSchemaChange):
            return []
        if isinstance(change, S.Unsupported):
            return [TableChange(UNSUPPORTED, None, None, None, reason=change.reason)]
        if isinstance(change, S.CreateTable):
            before = now(change.name)
            if before is not None and change.if_not_exists:
                return []
            current[change.name] = change.schema  # OR REPLACE: `before` is the table it replaces
            return [TableChange(CREATED, change.name, before, change.schema)]
        if isinstance(change, S.CreateLike):
            if now(change.name) is not None and change.if_not_exists:
                return []
            like = now(change.like)
            if like is None:
                raise SchemaChangeError(f"CREATE TABLE {change.name} LIKE {change.like}: {change.like} is "
                                        f"not known (no snapshot and no CREATE TABLE of it in the stream)")
            current[change.name] = like.renamed(change.name.database, change.name.table)
            return [TableChange(CREATED, change.name, None, current[change.name])]
        if isinstance(change, S.AlterTable):
            before = now(change.name)
            if before is None:  # a table with no history (not snapshotted, not created in the stream)
                return []
            after = change.apply(before)
            target = change.renamed_to or change.name
            if target != change.name:
                current[change.name] = None
                current[target] = after
                return [TableChange(RENAMED, target, before, after, renamed_from=change.name)]
            current[change.name] = after
            return [TableChange(ALTERED, change.name, before, after)]
        if isinstance(change, S.RenameTables):
            out = []
            for old, new in change.pairs:
                before = now(old)
                if before is None:  # no history to move
                    continue
                current[old] = None
                current[new] = before.renamed(new.database, new.table)
                out.append(TableChange(RENAMED, new, before, current[new], renamed_from=old))
            return out
        if isinstance(change, S.Truncate):
            return [TableChange(TRUNCATED, change.name, now(change.name), now(change.name))]
        if isinstance(change, S.DropTables):
            out = []
            for name in change.names:
                before = now(name)
                current[name] = None
                out.append(TableChange(DROPPED, name, before, None))
            return out
        if isinstance(change, S.DropDatabase):
            return self._drop_database(change.database, now, current)
        raise TypeError(f"unknown schema change {change!r}")  # pragma: no cover - every kind is handled above

    def _drop_database(self, database: str, now, current) -> list[TableChange]:
        names = {S.TableName(d, t) for (_s, d, t) in self._tables if d == database}
        names |= {n for n in current if n.database == database}
        out = []
        for name in sorted(names, key=str):
            before = now(name)
            if before is not None:
                current[name] = None
                out.append(TableChange(DROPPED, name, before, None))
        return out

    def _superseded(self, source: str, name: S.TableName, position: BinlogPosition) -> bool:
        versions = self._tables.get((source, name.database, name.table))
        return bool(versions) and versions[-1].position.key() > position.key()

    def _add(self, source: str, name: S.TableName, version: Version) -> None:
        versions = self._tables.setdefault((source, name.database, name.table), [])
        if versions and versions[-1].position.key() > version.position.key():
            raise ValueError(f"schema versions of {name} out of order: {version.position} after "
                             f"{versions[-1].position}")
        if versions and versions[-1].position == version.position:
            versions[-1] = version  # the same position again (a replayed batch): the same version
        else:
            versions.append(version)


def changes_columns(change: TableChange) -> bool:
    """Did the DDL change what a target of the table holds: its columns or keys, or the table itself?"""
    if change.kind in (TRUNCATED, UNSUPPORTED):
        return False
    before, after = change.before, change.after
    if before is None or after is None or change.kind != ALTERED:
        return True
    return (before.columns, before.primary_key, before.unique_keys) != (after.columns, after.primary_key,
                                                                       after.unique_keys)


def _names_of(change) -> tuple[S.TableName, ...]:
    """The tables a parsed change names (for a HistoryError)."""
    if isinstance(change, S.RenameTables):
        return tuple(n for pair in change.pairs for n in pair)
    if isinstance(change, S.DropTables):
        return tuple(change.names)
    name = getattr(change, "name", None)
    return (name,) if name is not None else ()


def _short(statement: str) -> str:
    text = one_line(statement)
    return text if len(text) <= 200 else text[:197] + "..."

"""Which column a name means across the DDL of one micro-batch (issue #17 item 3), no Spark.

A target that follows its source table's schema (libs/schema_history/target_schemas.py) is
written once per batch, in the schema in force at the batch's end; the batch's rows were logged
in the versions in force at their positions, and their images name columns as those versions
did (Table_map names, or the version's row layout). `RENAME COLUMN a TO b` between two rows
means the first row's `a` is the end's `b`; `DROP COLUMN c` means the value an earlier row
logged for `c` is nobody's (and a column `c` added later is another column); a table dropped,
renamed away or created anew starts over. So each row's names are translated to the end's, and
the same translation from the batch's start tells which Delta column becomes which
(libs/schema_history/evolution.py).

Walking the batch backwards from its end: a DDL step changes what a name before it means.
    rename old -> new:  before it, `old` is what `new` is after it; `new` is no column
    drop c / add c:     before it, `c` is no column that reaches the end
    replace (CREATE TABLE of the name): before it, no column reaches the end
    gone (DROP TABLE, RENAME TABLE away, DROP DATABASE): nothing; the table's end is its last
        version (its Delta table keeps the rows logged before the DROP), and only a CREATE
        (replace) can follow it
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from typing import Callable, Mapping, Sequence

from libs.schema_history import statements as S
from libs.schema_history.table_schema import SchemaChangeError, TableSchema, column_def
from libs.contracts.change import Change, Op

RENAME, DROP, ADD, REPLACE, GONE = "rename", "drop", "add", "replace", "gone"


@dataclass(frozen=True)
class Step:
    kind: str
    old: str | None = None
    new: str | None = None


@dataclass(frozen=True)
class EndNames:
    """What each name at one point of the batch is at its end: `end(name)`, None when the
    column does not reach it. Names are compared as MySQL does (case-insensitive)."""

    entries: Mapping[str, str | None] = field(default_factory=dict)
    others_gone: bool = False  # the table is replaced later: no name reaches the end

    @property
    def identity(self) -> bool:
        return not self.entries and not self.others_gone

    def end(self, name: str) -> str | None:
        folded = name.lower()
        if folded in self.entries:
            return self.entries[folded]
        return None if self.others_gone else name

    def before(self, step: Step) -> "EndNames":
        """The names before `step`, given these after it."""
        if step.kind == REPLACE:
            return EndNames({}, True)
        if step.kind == GONE:
            return self
        entries = dict(self.entries)
        if step.kind == RENAME:
            entries[step.old.lower()] = self.end(step.new)
            if step.new.lower() != step.old.lower():
                entries[step.new.lower()] = None
        else:  # DROP, ADD: no column named so before the step reaches the end through it
            entries[(step.old or step.new).lower()] = None
        return EndNames(entries, self.others_gone)


@lru_cache(maxsize=1024)
def column_steps(statement: str, default_db: str, database: str, table: str,
                 before: TableSchema | None = None, server_version: str | None = None) -> tuple[Step, ...]:
    """What one DDL statement does to the columns of `database`.`table`, in order. `before`:
    the table's schema before the statement (the history's), which says whether an IF [NOT]
    EXISTS clause acted (the server logs such a statement either way); `server_version`: the
    source's, as the history read the statement with (Version.server_version). A statement that
    cannot be read does nothing here: the schema history refuses it and the table's rows are
    quarantined from there (libs/schema_history/row_layout.py)."""
    try:
        changes = S.parse(statement, default_db, server_version)
    except S.DdlParseError:
        return ()
    name = S.TableName(database, table)
    steps: list[Step] = []
    for change in changes:
        if isinstance(change, S.AlterTable) and change.name == name:
            steps += _alter_steps(change.actions, before)
            if change.renamed_to not in (None, name):
                steps.append(Step(GONE))
        elif isinstance(change, S.AlterTable) and change.renamed_to == name:
            steps.append(Step(REPLACE))
        elif isinstance(change, (S.CreateTable, S.CreateLike)) and change.name == name:
            if not (change.if_not_exists and before is not None):
                steps.append(Step(REPLACE))
        elif isinstance(change, S.DropTables) and name in change.names:
            steps.append(Step(GONE))
        elif isinstance(change, S.DropDatabase) and change.database == database:
            steps.append(Step(GONE))
        elif isinstance(change, S.RenameTables):
            for old, new in change.pairs:  # in order: `a TO tmp, b TO a` ends a and starts it anew
                if old == name:
                    steps.append(Step(GONE))
                if new == name:
                    steps.append(Step(REPLACE))
    return tuple(steps)


@lru_cache(maxsize=1024)
def creates(statement: str, default_db: str, database: str, table: str,
            server_version: str | None = None) -> bool:
    """Does the statement CREATE `database`.`table` (a new, empty table)? Whether it did (not
    IF NOT EXISTS of a table that existed) is the schema history's to say."""
    try:
        changes = S.parse(statement, default_db, server_version)
    except S.DdlParseError:
        return False
    return any(isinstance(c, (S.CreateTable, S.CreateLike)) and c.name == S.TableName(database, table)
               for c in changes)


def _alter_steps(actions: Sequence[S.Action], schema: TableSchema | None) -> list[Step]:
    """The column steps of ALTER TABLE's actions; `schema` (None: unknown) tells which
    IF [NOT] EXISTS actions acted, applied action by action as the server does."""
    steps = []
    for action in actions:
        acted = True
        if isinstance(action, S.AddColumn) and action.if_not_exists and schema is not None:
            acted = not schema.has_column(column_def(action.definition).name)
        elif isinstance(action, (S.ChangeColumn, S.DropColumn)) and action.if_exists and schema is not None:
            acted = schema.has_column(action.old if isinstance(action, S.ChangeColumn) else action.column)
        if acted:
            steps += _action_steps(action)
        try:
            schema = action.apply(schema) if schema is not None else None
        except SchemaChangeError:
            schema = None  # the history refused the statement; its rows are quarantined
    return steps


def _action_steps(action: S.Action) -> list[Step]:
    if isinstance(action, S.RenameColumn):
        return [Step(RENAME, action.old, action.new)]
    if isinstance(action, S.ChangeColumn):
        new = column_def(action.definition).name
        return [Step(RENAME, action.old, new)] if new.lower() != action.old.lower() else []
    if isinstance(action, S.DropColumn):
        return [Step(DROP, old=action.column)]
    if isinstance(action, S.AddColumn):
        return [Step(ADD, new=column_def(action.definition).name)]
    return []


def end_names(changes: Sequence[Change], database: str, table: str,
              at_end: EndNames = EndNames(),
              before: Callable[[Change], TableSchema | None] = lambda change: None,
              refused: Callable[[Change], bool] = lambda change: False,
              server_version: Callable[[Change], str | None] = lambda change: None,
              ) -> tuple[list[EndNames], EndNames]:
    """For each change of one table's batch (commit order), what its names are at the batch's
    end; and the same for the batch's start (before its first change). `at_end`: what the names
    after the last change become later (a table renamed: its new name's changes follow).
    `before(ddl change)`: the table's schema before it (column_steps). `refused(ddl change)`:
    the schema history refused it for this table (its rows are quarantined from there): it
    changes no name. `server_version(ddl change)`: the source server's version its statement was
    read with (SchemaHistory.server_version). A snapshot's truncate (a new snapshot of the
    table) replaces it."""
    names = at_end
    out: list[EndNames] = []
    for change in reversed(changes):
        out.append(names)
        if change.op == Op.TRUNCATE:  # a new snapshot: the table starts anew in its schema
            names = names.before(Step(REPLACE))
        elif change.op == Op.DDL and not refused(change):
            steps = column_steps(change.statement or "", change.database, database, table, before(change),
                                 server_version(change))
            for step in reversed(steps):
                names = names.before(step)
    out.reverse()
    return out, names


def with_names_at_end(change: Change, names: EndNames) -> Change:
    """The change with its images' column names as at the batch's end (`names`: end_names'
    for it): a column that does not reach the end leaves the image (its value belongs to no
    column of the end's schema). A row change of a table made anew later in the batch is
    Op.SUPERSEDED: none of its rows reaches the end."""
    if names.identity:
        return change
    if names.others_gone and change.op not in (Op.DDL, Op.TRUNCATE):
        return change.with_op(Op.SUPERSEDED)
    return change.with_images(_image_at_end(change.before, names), _image_at_end(change.after, names))


def _image_at_end(image: list | None, names: EndNames) -> list | None:
    if image is None:
        return None
    kept = []
    for column_value in image:
        name = column_value.get("name")
        if name is None:  # positional (no names known): nothing to translate
            kept.append(column_value)
            continue
        end = names.end(name)
        if end is not None:
            kept.append(column_value if end == name else {**column_value, "name": end})
    return kept

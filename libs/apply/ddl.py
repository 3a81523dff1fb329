"""A batch's DDL as the targets that follow their source see it (config.schema_changes, README
"Schema changes"), decided without Spark; pipelines/apply/batch_ddl.py carries the Delta tables:

* schema_changes 'fail': the first DDL that changes a followed table's columns or keys, and that
  accept_schema_changes_through does not cover, stops the job before anything is written;
* a followed table renamed to a followed name in the batch brings its rows and changes
  (libs/schema_history/table_renames.py);
* a followed table's changes take the column names in force at the batch's end, and a row
  inserted before an ADD COLUMN holds what that ADD gave it
  (libs/schema_history/column_identity.py); `Evolve` says what carries its Delta table there.

Each answer is read from the job's schema history (pipelines/apply/schema_history_table.py),
which the batch's DDL has already versioned (DeltaApplier.prepare_batch).
"""
from __future__ import annotations

from operator import attrgetter

from functools import partial
from typing import Any, Mapping, NamedTuple, Sequence

from libs.contracts.change import Change, Op
from libs.apply.plan import with_ddl_truncates
from libs.contracts.position import BinlogPosition
from libs.apply.stops import SchemaChangeStopped
from libs.config.job import SCHEMA_CHANGES_IGNORE, JobConfig
from libs.settings.errors import one_line
from libs.replay.lineage import Lineage
from libs.schema_history.column_identity import (ADD, EndNames, column_steps, creates, end_names,
                                                 with_names_at_end)
from libs.schema_history.evolution import AddedColumn, converted_by_server
from libs.schema_history.history import SchemaHistory, Version, changes_columns
from libs.schema_history.table_renames import RenameChainError, TableRename, table_renames
from libs.schema_history.table_schema import TableSchema
from libs.schema_history.target_schemas import version_columns
from libs.tables.table_location import TableLocation
from libs.targets import TargetCatalog
from libs.targets.model import Target
from libs.targets.values import fill_value


class Evolve(NamedTuple):
    """What carries a followed target's Delta table to the batch's end schema."""

    start: EndNames  # each Delta column's name at the batch's end
    ddl: Lineage  # the batch's last DDL of the table: an added column's CURRENT_TIMESTAMP, the accept setting
    where: str  # the table and DDL, for an error
    exists: bool  # the table exists at the batch's end (a DROP leaves its Delta table as it was)
    copy_from: TableLocation | None  # renamed from this table in the batch: its rows are this one's
    inherited: int = 0  # the replayed changes' first ones came from copy_from's table: logged there
    added: Mapping[str, AddedColumn] = {}  # the batch's ADD COLUMN of each column new at its end
    converted: tuple[str, ...] = ()  # columns a MODIFY of the batch converts as only the server knows how


def accept_setting(source: str, file: str, pos: int) -> str:
    """accept_schema_changes_through for the DDL at file:pos, as a user writes it."""
    return f"accept_schema_changes_through: {{{source}: '{file}:{pos}'}}"


def _fills_at_add(target: Target, added: Mapping[str, tuple[AddedColumn, int]]) -> list[tuple[int, str, Any]]:
    """(index of the ADD in the batch, target column, the value its ADD gave the rows there were)."""
    return [(k, target.column(end).name, fill_value(column.column or target.column(end), column.at))
            for end, (column, k) in added.items() if target.has_column(end)]


def _filled(change: Change, index: int, fills: Sequence[tuple[int, str, Any]]) -> Change:
    """A row inserted before a column's ADD in the batch (a snapshot row too) holds what that
    ADD gave it, not the target's DEFAULT at the batch's end (Change.filled)."""
    if not fills or change.op not in (Op.INSERT, Op.SNAPSHOT):
        return change
    filled = {name: value for k, name, value in fills if k > index}
    return change.with_filled(filled) if filled else change


class DdlPlan:
    """What the followed targets make of a batch's DDL. `declared`: the targets declared by hand
    (the catalog in force, with the targets derived from the source, is the caller's: it changes
    with the history)."""

    def __init__(self, config: JobConfig, declared: TargetCatalog, history: SchemaHistory):
        self.config, self.declared, self.history = config, declared, history
        self.tables = config.table_root

    def refuse_schema_changes(self, batch_id: int, changes) -> None:
        """schema_changes 'fail': the first DDL of the batch that changes a followed table's
        columns or keys, and that accept_schema_changes_through does not cover, stops the job
        before anything of the batch is written."""
        tables = self.config.tables
        for event, change in changes:
            name = change.name
            followed = name is not None and (self.declared.get(name.database, name.table) is not None or (
                tables.from_source and tables.selects(name.database, name.table)))
            if not followed or not changes_columns(change):
                continue
            if self.accepted(event.source, event.file, event.pos):
                continue
            raise SchemaChangeStopped(f"batch {batch_id}: schema_changes is 'fail' and source "
                                      f"{event.source}, {event.file}:{event.pos} {change.kind} {name}: "
                                      f"{one_line(event.statement)}. "
                                      f"Nothing of the batch was written. To follow it, set "
                                      f"{accept_setting(event.source, event.file, event.pos)} "
                                      f"(or schema_changes to evolve or ignore)")

    def accepted(self, source: str, file: str, pos: int) -> bool:
        """Is the DDL at file:pos within the job's accept_schema_changes_through for its source?"""
        through = dict(self.config.accept_schema_changes_through).get(source)
        return through is not None and BinlogPosition(file, pos) <= through

    def follows(self, target: Target | None) -> bool:
        return (target is not None and target.follows_source
                and self.config.schema_changes != SCHEMA_CHANGES_IGNORE)

    def renames(self, catalog: TargetCatalog, groups,
                batch_id: int) -> dict[tuple[str, str], TableRename]:
        """The batch's renames of a followed table to a followed name
        (libs/schema_history/table_renames.py)."""
        if self.config.schema_changes == SCHEMA_CHANGES_IGNORE:  # no table follows its source
            return {}
        try:
            renames = table_renames(groups, self.server_version)
        except RenameChainError as exc:
            raise SchemaChangeStopped(f"batch {batch_id}: {exc}. "
                                      f"Go past it with schema_changes: ignore, then "
                                      f"snapshot the renamed tables again (cdc-ship --resnapshot)") from None
        return {name: r for name, r in renames.items()
                if self.follows(catalog.get(*name))
                and self.follows(catalog.get(r.old.database, r.old.table))}

    def across_ddl(self, catalog: TargetCatalog, database: str, table: str, own: list[Change],
                   rename: TableRename | None, inherited: set[int]) -> tuple[list[Change], Evolve]:
        """A followed table's changes with their names as at the batch's end, and what carries
        its Delta table there (libs/schema_history/column_identity.py). A table renamed to this
        name in the batch: its changes before the rename (`inherited`, the ids of those a
        snapshot did not supersede) come first, as this table's."""
        # The rename starts this name anew at its place: the name's changes before it were
        # another table's (a swap's old table, or one dropped before), superseded here.
        arrival = rename.change if rename is not None and all(c is not rename.change for c in own) else None
        walked = own if arrival is None else sorted([*own, arrival], key=attrgetter("source_order"))
        per_change, start = end_names(walked, database, table,
                                      before=partial(self._schema_before, database, table),
                                      refused=partial(self._refused, database, table),
                                      server_version=self.server_version)
        added = self._added_columns(database, table, walked, per_change)
        fills = _fills_at_add(catalog.get(database, table), added)
        named = [_filled(with_names_at_end(c, names), k, fills)
                 for k, (c, names) in enumerate(zip(walked, per_change)) if c is not arrival]
        # a CREATE starts it anew
        replayed = with_ddl_truncates(named, self._starts_anew, self.server_version)
        copy_from = None
        if rename is not None:
            old = rename.old
            after_rename = per_change[next(k for k, c in enumerate(walked) if c is rename.change)]
            per_earlier, start = end_names(rename.earlier, old.database, old.table, at_end=after_rename,
                                           before=partial(self._schema_before, old.database, old.table),
                                           server_version=self.server_version)
            # The name's changes before the rename were another table's: recorded, none applied.
            at = rename.change.source_order
            replayed = [converted if n.source_order >= at
                        else n if n.op == Op.DDL else n.with_op(Op.SUPERSEDED)
                        for n, converted in zip(named, replayed)]
            # A TRUNCATE or CREATE names the old table: it is told a truncate under that name.
            earlier = with_ddl_truncates(rename.earlier, self._starts_anew, self.server_version)
            replayed = [with_names_at_end(e, names).with_table(database, table)
                        for c, e, names in zip(rename.earlier, earlier, per_earlier)
                        if id(c) in inherited or e.op == Op.TRUNCATE] + replayed
            copy_from = self.tables.table(catalog.get(old.database, old.table).delta_table)
        last = ([c for c in own if c.op in (Op.DDL, Op.TRUNCATE)] or [rename.change])[-1]
        lineage = Lineage.of_change(last)
        where = (f"source {lineage.source}, {lineage.binlog_file}:{lineage.binlog_pos}, {database}.{table} "
                 f"({one_line(last.statement or '')})")
        versions = self.history.versions(lineage.source, database, table)
        exists = bool(versions) and versions[-1].schema is not None  # not dropped by the batch
        return replayed, Evolve(start, lineage, where, exists, copy_from, len(replayed) - len(own),
                                 {name: column for name, (column, _k) in added.items()},
                                 self._converted(database, table, walked, start, lineage.source))

    def _converted(self, database: str, table: str, walked: Sequence[Change], start: EndNames,
                   source: str) -> tuple[str, ...]:
        """The columns whose type the batch's DDL changed in a way the server converts their
        values and Delta would not (evolution.converted_by_server): "'a' (INT -> YEAR)"."""
        first = next((c for c in walked if c.op == Op.DDL), None)
        before = self._schema_before(database, table, first) if first is not None else None
        after = self.history.latest(source, database, table)
        if before is None or after is None:
            return ()
        now = {c.name.lower(): c for c in version_columns(after, source)}
        out = []
        for old in version_columns(before, first.source):
            end = start.end(old.name)
            new = now.get(end.lower()) if end is not None else None
            if new is not None and converted_by_server(old, new):
                out.append(f"{new.name!r} ({old.mysql_type} -> {new.mysql_type})")
        return tuple(out)

    def _added_columns(self, database: str, table: str, walked: Sequence[Change],
                       per_change: Sequence[EndNames]) -> dict[str, tuple[AddedColumn, int]]:
        """Each column a DDL of the batch added that reaches its end (by folded end name): its
        definition at that ALTER and the ALTER's time, with which the server filled the rows that
        existed then (the last ADD of a name re-added), and the ALTER's index in `walked`. A
        column the table's declaration by hand declares is filled with the declared definition
        (libs/schema_history/declared_schemas.py)."""
        declared = self.declared.get(database, table)
        out: dict[str, tuple[AddedColumn, int]] = {}
        for k, (change, names) in enumerate(zip(walked, per_change)):  # names: the end's after the change
            version = self._version_at(database, table, change) if change.op == Op.DDL else None
            if version is None or version.schema is None or version.error is not None:
                continue
            steps = column_steps(change.statement or "", change.database, database, table,
                                 self._schema_before(database, table, change), self.server_version(change))
            columns = None
            for name in (s.new for s in steps if s.kind == ADD):
                end = names.end(name)
                if end is None:
                    continue
                if columns is None:
                    columns = {c.name.lower(): c for c in version_columns(version.schema, change.source)}
                own = declared is not None and declared.has_column(name)
                out[end.lower()] = (AddedColumn(None if own else columns.get(name.lower()),
                                                Lineage.of_change(change).commit_ts), k)
        return out

    def _schema_before(self, database: str, table: str, change: Change) -> TableSchema | None:
        """The table's schema before a DDL change record (the history's)."""
        return self.history.at(change.source, database, table, _position(change))

    def _version_at(self, database: str, table: str, change: Change) -> Version | None:
        """The version a DDL change record gave the table in the history, if it gave one."""
        at = _position(change)
        return next((v for v in self.history.versions(change.source, database, table)
                     if v.position == at), None)

    def server_version(self, change: Change) -> str | None:
        """The source server's version the history read a DDL change record's statement with."""
        return self.history.server_version(change.source, _position(change))

    def _refused(self, database: str, table: str, change: Change) -> bool:
        """Did the schema history refuse this DDL for the table (HistoryError, or a rename from a
        table the job does not replicate)?"""
        version = self._version_at(database, table, change)
        return version is not None and version.error is not None

    def _starts_anew(self, change: Change) -> bool:
        """A CREATE TABLE of the change's table that the schema history applied (not IF NOT
        EXISTS of a table that was there)."""
        return (creates(change.statement or "", change.database, change.database, change.table,
                        self.server_version(change))
                and self._version_at(change.database, change.table, change) is not None)

def _position(change: Change) -> BinlogPosition:
    """Where a change record's event is in its source's binlog."""
    return BinlogPosition(change.binlog_file, int(change.binlog_pos))

"""Replay row images of one batch onto the current target rows, like a replica's SQL thread.

    replay(target, current_rows, changes, *, mode="strict") -> ReplayResult

`changes`: change records (libs/contracts/change.Change) of ONE target table, in commit
order (transactions in commit order, then change_seq; see Change.order). `current_rows`: the
target rows the batch may touch, each a mapping of target column -> typed value plus
`_row_id` (ROW_ID_COLUMN), in the table's scan order (e.g. sorted by _row_id).
Images are REPLAYED on top of those rows in order (STYLE practice 10), never "last image per key":

- insert: absent after-image columns take the TARGET default (WL#5092 DEFAULT VALUES R1.1,
  R1.2); DEFAULT CURRENT_TIMESTAMP = the change's commit_ts (a replica's SQL thread runs
  with the event's timestamp); NOT NULL without DEFAULT -> the type's implicit default
  (0, '', zero date; ENUM: first member) with warning 1364 (rpl_record.cc prepare_record).
  A new row gets _row_id = make_row_id(source, trx_id, change_seq).
- update: the row is found from the before image (TableState.find: PK, NOT NULL UK, else all
  before-image columns; first match in scan order); after-image columns overwrite, absent
  ones keep the current value (R2). A JSON diff (json_diff.py) applies to the current value.
- delete: found the same way; exactly one row goes.
- SQL NULL for a NOT NULL target column: the column's default, warning 1048 (ER_BAD_NULL_ERROR).
- row not found (1032) / duplicate key (1062): mode "strict" raises ReplayStopped (nothing
  of the batch is applied); mode "idempotent" (slave_exec_mode=IDEMPOTENT, R7) skips the
  change and reports it in `quarantine`, except an INSERT hitting a duplicate,
  which a replica overwrites (Write_rows_log_event::write_row with overwrite): the
  conflicting row takes the after image on top of its values (the full new row when the
  image is complete); further conflicting rows on other unique keys are deleted.
- WL#3303: whether the target can take a change is the seed's decision table
  (logging_format.decide_apply_format: the change's format against the target's declared
  capabilities). A statement-format change it cannot take stops the batch (on_statement=error)
  or is skipped for quarantine (on_statement=quarantine); a row change it cannot take always
  stops. A statement it can take is recorded in the change log but NOT executed (no MySQL SQL
  engine here). op "ddl": recorded (outside the table: WL#3303 is about DML); a TRUNCATE TABLE
  reaches the engine as op "truncate" (libs/apply/plan.with_ddl_truncates); op "superseded": a
  row change of a table the batch later made anew, recorded only.
- a value that cannot be converted stops the batch in both modes (a replica stops too).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, ClassVar, Iterable, Mapping, Sequence

from libs.contracts.change import ROW_OPS, Change, Op
from libs.replay.errors import (
    BAD_VALUE, DUPLICATE_KEY, ROW_NOT_FOUND, STATEMENT_FORMAT, UNKNOWN_OP, UNUSABLE_BEFORE_IMAGE,
    ReplayError, ReplayStopped,
)
from libs.replay.images import present_columns, typed_columns
from libs.replay.json_diff import JsonDiffError, apply_json_diff, is_json_diff
from libs.replay.lineage import (
    ROW_ID_COLUMN, LINEAGE_COLUMN, ChangeLogEntry, Lineage, canonical_text, make_row_id,
)
from libs.replay.logging_format import ERROR, ROW, STATEMENT, decide_apply_format
from libs.replay.table_state import Row, TableState
from libs.targets import values
from libs.targets.model import ON_STATEMENT_QUARANTINE, Column, Target

STRICT, IDEMPOTENT = "strict", "idempotent"
ER_BAD_NULL_ERROR, ER_NO_DEFAULT_FOR_FIELD = 1048, 1364


@dataclass(frozen=True)
class RowWrite:
    """Final state of a row the batch wrote (MERGE: upsert by _row_id)."""

    row_id: str
    values: Mapping[str, Any]
    lineage: Lineage

    def to_record(self) -> dict[str, Any]:
        return {**self.values, ROW_ID_COLUMN: self.row_id, LINEAGE_COLUMN: self.lineage.to_dict()}


@dataclass(frozen=True)
class RowDelete:
    """A row of current_rows that no longer exists (MERGE: delete by _row_id); in
    ReplayResult.transient, a row the batch inserted and deleted."""

    row_id: str
    lineage: Lineage  # the deleting change
    values: Mapping[str, Any] = field(default_factory=dict)  # the row as it was deleted
    written: Lineage | None = None  # the change of the batch that last wrote `values`; None: none did



@dataclass(frozen=True)
class ReplayWarning:
    code: int
    message: str
    lineage: Lineage


@dataclass(frozen=True)
class ReplayResult:
    upserts: tuple[RowWrite, ...]
    deletes: tuple[RowDelete, ...]
    change_log: tuple[ChangeLogEntry, ...]
    quarantine: tuple[ReplayError, ...]
    """Changes tolerated in idempotent mode (1032 skipped, 1062 skipped or overwritten) and
    quarantined statements: to be written to the quarantine table."""
    warnings: tuple[ReplayWarning, ...]
    transient: tuple[RowDelete, ...] = ()
    """Rows the batch inserted and a source change deleted: nothing stored to delete; a
    soft-delete target keeps them (libs/apply/modes/soft_delete.py)."""

    def counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for entry in self.change_log:
            out[entry.outcome] = out.get(entry.outcome, 0) + 1
        return out

    def final_table(self, current_rows: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
        """current_rows with this result applied (what the Delta table holds after MERGE)."""
        gone = {d.row_id for d in self.deletes} | {u.row_id for u in self.upserts}
        kept = [dict(r) for r in current_rows if r[ROW_ID_COLUMN] not in gone]
        return kept + [{**u.values, ROW_ID_COLUMN: u.row_id} for u in self.upserts]



class _Replayer:
    def __init__(self, target: Target, state: TableState, mode: str):
        self.target, self.state, self.mode = target, state, mode
        self.log: list[ChangeLogEntry] = []
        self.quarantine: list[ReplayError] = []
        self.warnings: list[ReplayWarning] = []

    # -- helpers ---------------------------------------------------------------------------
    def _key_text(self, values: Mapping[str, Any]) -> dict[str, str | None] | None:
        key = self.target.primary_key or (self.target.lookup_keys[0] if self.target.lookup_keys else ())
        if not key or not all(c in values for c in key):
            return None
        return {c: canonical_text(values[c]) for c in key}

    def _entry(self, change: Change, lineage: Lineage, outcome, row_id=None, key=None) -> None:
        self.log.append(ChangeLogEntry(
            row_id=row_id, database=change.database, table=change.table,
            delta_table=self.target.delta_table, op=change.op, outcome=outcome, key=key,
            before=tuple(change.before) if change.before is not None else None,
            after=tuple(change.after) if change.after is not None else None, lineage=lineage))

    def _error(self, kind, message, change: Change, lineage: Lineage, key, *, skippable: bool,
               outcome: str) -> None:
        error = ReplayError(kind, message, self.target.qualified_name, key, lineage, change.statement)
        if not skippable:
            raise ReplayStopped(error)
        self.quarantine.append(error)
        self._entry(change, lineage, outcome, key=key)

    def _default(self, column: Column, lineage: Lineage, code: int) -> Any:
        """Field::set_default(): the declared DEFAULT, else the implicit one. code 1364 (absent
        column, warned only without DEFAULT, never for ENUM) or 1048 (NULL into NOT NULL)."""
        if code == ER_BAD_NULL_ERROR:
            self.warnings.append(ReplayWarning(code, f"Column '{column.name}' cannot be null", lineage))
        if code == ER_NO_DEFAULT_FOR_FIELD and not column.has_default and not column.nullable \
                and column.family != "enum":
            self.warnings.append(ReplayWarning(code, f"Field '{column.name}' doesn't have a default value",
                                               lineage))
        return values.fill_value(column, lineage.commit_ts)

    def _after_values(self, change: Change, lineage: Lineage,
                      current: Mapping[str, Any] | None) -> dict[str, Any]:
        """Typed after-image values; JSON diffs applied to `current`."""
        out = {}
        for name, (column, column_value) in present_columns(self.target, change.after).items():
            text, binary = column_value.get("text"), column_value.get("binary")
            if is_json_diff(text):
                if current is None:
                    raise JsonDiffError(f"column {name!r}: a JSON diff needs an existing row")
                value = apply_json_diff(current[name], text)
            else:
                value = values.from_column_value(column, text, binary)
            sql_null = text is None and binary is None
            if sql_null and not column.nullable:  # (a zero date read as NULL is not SQL NULL)
                value = self._default(column, lineage, ER_BAD_NULL_ERROR)
            out[name] = value
        return out

    def _before_values(self, change: Change) -> dict[str, Any]:
        return typed_columns(self.target, change.before)

    # -- operations ------------------------------------------------------------------------
    def insert(self, change: Change, lineage: Lineage) -> None:
        after = self._after_values(change, lineage, None)
        row = self._row(after, lineage, change.filled)
        conflicts = self.state.conflicts(row)
        if not conflicts:
            row_id = make_row_id(change.source, change.trx_id, change.change_seq)
            self.state.add(row_id, row, lineage=lineage)
            self._entry(change, lineage, "applied", row_id, self._key_text(row))
            return
        key, other = conflicts[0]
        if self.mode != IDEMPOTENT:
            self._error(DUPLICATE_KEY, f"Duplicate entry for key {list(key)} on insert", change, lineage,
                        {c: canonical_text(row[c]) for c in key}, skippable=False, outcome="")
        complete = len(after) == len(self.target.columns)  # COMPLETE_ROWS_F
        while True:  # Write_rows_log_event::write_row(overwrite=true)
            key, other = self.state.conflicts(row)[0]
            row = row if complete else {**other.values, **after}
            if len(self.state.conflicts(row, exclude=other)) == 0:
                self.state.update(other, row, lineage)
                break
            self.state.delete(other, lineage)
        self.quarantine.append(ReplayError(
            DUPLICATE_KEY, "duplicate key on insert: row overwritten (idempotent)",
            self.target.qualified_name, self._key_text(row), lineage, change.statement))
        self._entry(change, lineage, "overwritten", other.row_id, self._key_text(row))

    def _find(self, change: Change, lineage: Lineage) -> tuple[Row | None, dict[str, Any]]:
        before = self._before_values(change)
        if not before:  # WL#5092 R2: no usable column of the target in the before image
            self._error(UNUSABLE_BEFORE_IMAGE, "the before image holds no column of the target table",
                        change, lineage, None, skippable=False, outcome="")
        row = self.state.find(before)
        if row is None:
            self._error(ROW_NOT_FOUND, "Can't find record", change, lineage,
                        self._key_text(before) or {k: canonical_text(v) for k, v in before.items()},
                        skippable=self.mode == IDEMPOTENT, outcome="skipped_row_not_found")
        return row, before

    def update(self, change: Change, lineage: Lineage) -> None:
        row, _ = self._find(change, lineage)
        if row is None:
            return
        new = {**row.values, **self._after_values(change, lineage, row.values)}
        conflicts = self.state.conflicts(new, exclude=row)
        if conflicts:
            key = conflicts[0][0]
            self._error(DUPLICATE_KEY, f"Duplicate entry for key {list(key)} on update", change, lineage,
                        {c: canonical_text(new[c]) for c in key}, skippable=self.mode == IDEMPOTENT,
                        outcome="skipped_duplicate_key")
            return
        self.state.update(row, new, lineage)
        self._entry(change, lineage, "applied", row.row_id, self._key_text(new))

    def delete(self, change: Change, lineage: Lineage) -> None:
        row, _ = self._find(change, lineage)
        if row is None:
            return
        key = self._key_text(row.values)
        self.state.delete(row, lineage)
        self._entry(change, lineage, "applied", row.row_id, key)

    def _not_loggable(self, logged_as: str) -> bool:
        """WL#3303 decision table: the target cannot take a change logged as `logged_as`."""
        target = self.target
        decision = decide_apply_format(logged_as, target.can_apply_rows, target.can_apply_statements)
        return decision.format == ERROR

    def statement(self, change: Change, lineage: Lineage) -> None:
        if not self._not_loggable(STATEMENT):
            self._entry(change, lineage, "statement_not_executed")
            return
        self._error(STATEMENT_FORMAT,
                    "statement-format change for a target that can only apply rows (WL#3303)",
                    change, lineage, None, skippable=self.target.on_statement == ON_STATEMENT_QUARANTINE,
                    outcome="quarantined_statement")

    def ddl(self, change: Change, lineage: Lineage) -> None:
        self._entry(change, lineage, "ddl_recorded")

    def superseded(self, change: Change, lineage: Lineage) -> None:
        """A row change of a table that a later DDL of the batch made anew (DROP TABLE then
        CREATE TABLE of the name): its rows went with the old table (libs/schema_history/
        column_identity.py); recorded only."""
        self._entry(change, lineage, "superseded_by_ddl")

    def snapshot(self, change: Change, lineage: Lineage) -> None:
        """A row read by a consistent snapshot: inserted; a row with the same key is replaced
        (it can only come from the same batch: libs/snapshot/changes.py)."""
        row = self._row(self._after_values(change, lineage, None), lineage, change.filled)
        for _, other in self.state.conflicts(row):  # indexed rows only: alive ones
            self.state.delete(other, lineage)
        row_id = make_row_id(change.source, change.trx_id, change.change_seq)
        self.state.add(row_id, row, lineage=lineage)
        self._entry(change, lineage, "applied", row_id, self._key_text(row))

    def _row(self, after: Mapping[str, Any], lineage,
             filled: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """A whole new row: the after image, and for the columns it lacks what the server gave
        them (`filled`: Change.filled), else the target's defaults."""
        filled = filled or {}
        return {c.name: after[c.name] if c.name in after else filled[c.name] if c.name in filled
                else self._default(c, lineage, ER_NO_DEFAULT_FOR_FIELD) for c in self.target.columns}

    def truncate(self, change: Change, lineage: Lineage) -> None:
        """Every row of the table goes: a snapshot starts the table anew, or a TRUNCATE TABLE of
        the stream (libs/apply/plan.with_ddl_truncates). The caller replaces the table's content
        with the rows alive at the end (pipelines/apply/applier.py: TablePlan.replace)."""
        for row in list(self.state.rows):
            if row.alive:
                self.state.delete(row, lineage)
        self._entry(change, lineage, "table_replaced")

    # -- dispatch --------------------------------------------------------------------------
    HANDLERS: ClassVar[Mapping[Op, Callable[["_Replayer", Change, Lineage], None]]] = {
        Op.INSERT: insert, Op.UPDATE: update, Op.DELETE: delete, Op.STATEMENT: statement, Op.DDL: ddl,
        Op.SNAPSHOT: snapshot, Op.TRUNCATE: truncate, Op.SUPERSEDED: superseded,
    }
    """Each change op -> the operation that replays it (every Op: libs/contracts/change.py)."""

    def _handler(self, change: Change, lineage: Lineage) -> Callable[["_Replayer", Change, Lineage], None]:
        handler = self.HANDLERS.get(change.op)
        if handler is None:  # a change op added without its operation here: no change may be lost
            raise ReplayStopped(ReplayError(
                UNKNOWN_OP, f"op '{change.op}' has no handler in the replay's dispatch table "
                f"(_Replayer.HANDLERS, libs/replay/engine.py)", self.target.qualified_name, None, lineage,
                change.statement))
        return handler

    def run(self, change: Change) -> None:
        if (change.database, change.table) != (self.target.database, self.target.table):
            raise ValueError(f"change for {change.database}.{change.table} replayed on "
                             f"{self.target.qualified_name}")
        lineage = Lineage.of_change(change)
        op = change.op
        if op in ROW_OPS and self._not_loggable(ROW):
            self._error(STATEMENT_FORMAT,
                        "row-format change for a target that can only apply statements (WL#3303)",
                        change, lineage, None, skippable=False, outcome="")
        handler = self._handler(change, lineage)
        try:
            handler(self, change, lineage)
        except (values.ValueConversionError, JsonDiffError) as exc:
            raise ReplayStopped(ReplayError(BAD_VALUE, str(exc), self.target.qualified_name, None,
                                                lineage, change.statement)) from None


def replay(target: Target, current_rows: Iterable[Mapping[str, Any]], changes: Sequence[Change],
           *, mode: str = STRICT) -> ReplayResult:
    """Replay `changes` on `current_rows` (see module docstring). Raises ReplayStopped."""
    if mode not in (STRICT, IDEMPOTENT):
        raise ValueError(f"mode must be {STRICT!r} or {IDEMPOTENT!r}, got {mode!r}")
    state = TableState.load(target, ((r[ROW_ID_COLUMN], r) for r in current_rows))
    replayer = _Replayer(target, state, mode)
    for change in changes:
        replayer.run(change)
    return result_of(replayer)


def result_of(replayer: _Replayer) -> ReplayResult:
    """What a replay did once its changes ran (also libs/replay/versions.py's)."""
    state = replayer.state
    touched = [r for r in state.rows if r.lineage is not None]
    upserts = tuple(RowWrite(r.row_id, dict(r.values), r.lineage) for r in touched if r.alive)
    deletes = tuple(RowDelete(r.row_id, r.lineage, r.values, r.written) for r in touched
                    if not r.alive and r.existed)
    # (a snapshot row replacing one of its run's rows is no delete of the source)
    transient = tuple(RowDelete(r.row_id, r.lineage, r.values, r.written) for r in touched
                      if not r.alive and not r.existed and r.lineage.operation != Op.SNAPSHOT)
    return ReplayResult(upserts, deletes, tuple(replayer.log), tuple(replayer.quarantine),
                        tuple(replayer.warnings), transient)

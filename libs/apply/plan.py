"""Pure planning for the Delta apply stage (pipelines/apply): no Spark here.

What the Spark stage asks of this module, per micro-batch:

    by_table = group_changes(changes)            # {(db, table): changes in commit order}
    lookups  = lookups_for(target, changes)      # which current target rows the batch may touch
    more     = missing_lookups(target, result, lookups)   # closure check after replay()
    result   = replay_touched(target, changes, read, mode=...)  # the two above to a fixed point
    progress_rows(changes, app_id, batch_id)     # _cdc_progress rows, one per source
    quarantine_row(error, now)                   # _cdc_quarantine row of a ReplayError
    undeclared(change, policy)                   # a change for a table without a target
    with_ddl_truncates(changes)                  # TRUNCATE TABLE of the stream as the table's truncate

Touched rows (DESIGN "Row images"; WL#5092 find_row). A replica finds a row by the target's
PRIMARY KEY when the before image holds it, else by a NOT NULL UNIQUE key, else by comparing
every before-image column (NULL equals NULL: a table scan compares field by field). An insert
or an update can also collide with an existing row on any enforced key (1062). So the rows a
batch can touch are:
  * rows whose enforced-key values equal those of any before or after image that carries the
    whole key (non-NULL: NULLs never collide), and
  * for before images without a usable lookup key: rows equal to the image on all its columns.
Minimal after images may move a row onto a key value no image names (UPDATE of one column of a
composite UNIQUE key): `missing_lookups` checks the replay result's final rows against what was
read and names the key values still to read; the stage reads them and replays again (fixed
point). Transient key values a row holds only in the middle of a batch are not re-checked.
"""

from __future__ import annotations

from operator import attrgetter

import datetime as dt
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping, Sequence

from libs.contracts.change import ROW_OPS, Change, Commit, Op
from libs.contracts.position import gtid_positions
from libs.replay import ROW_ID_COLUMN, ReplayError, ReplayResult, replay
from libs.replay.images import present_columns, typed_columns, typed_key
from libs.replay.lineage import ChangeLogEntry, Lineage, to_utc_naive
from libs.schema_history import statements
from libs.runtime.stops import JobStopped
from libs.targets import values as target_values
from libs.targets.model import Target, default_delta_table_name

MAX_LOOKUP_ROUNDS = 8
UNDECLARED_FAIL, UNDECLARED_QUARANTINE, UNDECLARED_IGNORE = "fail", "quarantine", "ignore"
UNDECLARED_TABLE = "undeclared_table"  # quarantine kind and change-log outcome prefix


class UndeclaredTableError(JobStopped):
    """A row or statement change for a source table that has no target declaration: the job
    stops before applying the batch (one line naming the table, GTID and position)."""



def group_changes(changes: Iterable[Change]) -> dict[tuple[str, str], list[Change]]:
    """Change records by source (database, table), each list in commit order."""
    groups: dict[tuple[str, str], list[Change]] = defaultdict(list)
    for change in changes:
        groups[(change.database, change.table)].append(change)
    return {k: sorted(v, key=attrgetter("source_order")) for k, v in sorted(groups.items())}


@dataclass
class Lookups:
    """Current rows to read: by enforced key (plain equality) and by whole before image
    (null-safe equality on the image's columns)."""

    by_key: dict[tuple[str, ...], set[tuple]] = field(default_factory=dict)
    by_image: dict[tuple[str, ...], set[tuple]] = field(default_factory=dict)

    def __bool__(self) -> bool:
        return any(self.by_key.values()) or any(self.by_image.values())

    def merge(self, other: "Lookups") -> None:
        for mine, theirs in ((self.by_key, other.by_key), (self.by_image, other.by_image)):
            for columns, tuples in theirs.items():
                mine.setdefault(columns, set()).update(tuples)


def typed_image(target: Target, image) -> dict[str, Any] | None:
    try:
        return typed_columns(target, image)
    except target_values.ValueConversionError:
        return None  # replay() raises the same error with the change's position


def key_tuple(key: Sequence[str], values: Mapping[str, Any]) -> tuple | None:
    if not all(c in values for c in key):
        return None
    kv = tuple(values[c] for c in key)
    return None if any(v is None for v in kv) else kv


def lookups_for(target: Target, changes: Iterable[Change]) -> Lookups:
    """Key values and before images of the batch's row changes (see module docstring). Snapshot
    rows are not looked up: their table was emptied when its snapshot started, and a run reads
    each row once (libs/snapshot/changes.py)."""
    out = Lookups({key: set() for key in target.enforced_keys})
    enforced, lookup = target.enforced_keys, target.lookup_keys
    for change in changes:
        op = change.op
        if op not in ROW_OPS:
            continue
        before = present_columns(target, change.before) if op != Op.INSERT else None
        after = present_columns(target, change.after) if op != Op.DELETE else None
        for image in (before, after):
            if image:
                for key in enforced:
                    kv = typed_key(key, image)
                    if kv is not None:
                        out.by_key[key].add(kv)
        if before and not any(all(c in before for c in key) for key in lookup):
            typed = typed_image(target, change.before)
            if typed:
                columns = tuple(sorted(typed))
                out.by_image.setdefault(columns, set()).add(tuple(typed[c] for c in columns))
    return out


def missing_lookups(target: Target, result: ReplayResult, read: Lookups) -> Lookups:
    """Enforced-key values of the rows the replay wrote that were not read (empty when closed)."""
    out = Lookups()
    for write in result.upserts:
        if write.lineage.operation == Op.SNAPSHOT:  # a new row: nothing stored can hold its key
            continue
        for key in target.enforced_keys:
            kv = key_tuple(key, write.values)
            if kv is not None and kv not in read.by_key.get(key, ()):
                out.by_key.setdefault(key, set()).add(kv)
    return out


def replay_touched(target: Target, changes: Sequence[Change],
                   read: Callable[[Lookups], Iterable[Mapping[str, Any]]] | None, *, mode: str,
                   run: Callable[..., ReplayResult] = replay) -> ReplayResult:
    """Replay `changes` on the target rows they touch. `read(lookups)` returns the current rows
    matching lookups (rows with `_row_id`; a row may come twice); None: the table is empty.
    Reads the batch's lookups, replays, then reads what missing_lookups names and replays again
    until nothing is missing. Current rows are given in _row_id order (deterministic scan order).
    Raises ReplayStopped (strict mode) as replay() does. `run`: the replay (an SCD2 target's
    is libs.replay.versions.replay_versions)."""
    lookups, rows = lookups_for(target, changes) if read is not None else Lookups(), {}
    unread = lookups
    for _ in range(MAX_LOOKUP_ROUNDS):
        if read is not None:
            rows.update((r[ROW_ID_COLUMN], r) for r in read(unread))
        result = run(target, [rows[k] for k in sorted(rows)], changes, mode=mode)
        unread = missing_lookups(target, result, lookups) if read is not None else Lookups()
        if not unread:
            return result
        lookups.merge(unread)
    raise RuntimeError(f"{target.qualified_name}: touched rows did not converge in {MAX_LOOKUP_ROUNDS} reads")


def last_changes(changes: Iterable[Change | Commit],
                 more: Mapping[str, tuple[Change | Commit, int]] | None = None
                 ) -> dict[str, tuple[Change | Commit, int]]:
    """source -> (its last change in commit order, its number of changes), over `changes` and
    what `more` already sums up the same way (the executors' part of a batch)."""
    out: dict[str, tuple[Change | Commit, int]] = dict(more or {})
    for change in changes:
        source = change.source
        last, n = out.get(source, (change, 0))
        out[source] = (change if change.order > last.order else last, n + 1)
    return out


def progress_rows(changes: Iterable[Change], app_id: str, batch_id: int,
                  caught_up: Mapping[str, int] | None = None,
                  previous: Mapping[str, Mapping[str, Any]] | None = None,
                  more: Mapping[str, tuple[Change | Commit, int]] | None = None,
                  versions: Mapping[str, int] | None = None) -> list[dict[str, Any]]:
    """One _cdc_progress row per source: its last transaction in commit order in this batch
    (`changes`, plus `more`: last_changes of changes not given one by one), with the batch's
    last GTID per GTID domain (libs/reads/versions.py) and `versions` (delta_table -> Delta
    version of each target the batch wrote) as table_versions.
    `caught_up`: source -> epoch micros of the batch's heartbeat (caught_up_as_of). A source
    with a heartbeat and no changes repeats its `previous` row (the source's last transaction,
    changes 0, no table_versions nor gtid_positions); without a previous row it has no transaction to name and
    gets no row."""
    caught_up = caught_up or {}
    table_versions = None if versions is None else {t: int(v) for t, v in sorted(versions.items())}
    domains = gtid_positions(changes, more)
    rows = {s: {"app_id": app_id, "source": s, "trx_id": c.trx_id, "gtid": c.gtid,
                "trx_file": c.trx_file, "trx_end_pos": int(c.trx_end_pos),
                "commit_ts": to_utc_naive(c.commit_ts), "batch_id": int(batch_id), "changes": n,
                "table_versions": table_versions, "gtid_positions": domains.get(s, [])}
            for s, (c, n) in last_changes(changes, more).items()}
    for source in caught_up.keys() - rows.keys():
        if previous and source in previous:
            rows[source] = {**previous[source], "app_id": app_id, "batch_id": int(batch_id), "changes": 0,
                            "table_versions": None, "gtid_positions": None}
    return [{**row, "caught_up_as_of": to_utc_naive(caught_up[s]) if s in caught_up else None}
            for s, row in sorted(rows.items())]


def quarantine_row(error: ReplayError, now: dt.datetime) -> dict[str, Any]:
    """_cdc_quarantine row (schemas/quarantine_record.avsc) of a change the replay did not apply.

    The apply stage has no frame bytes: `raw` is empty and the change itself (images, statement)
    is in _cdc_change_log under the same identity (lineage trx_id, binlog_file, binlog_pos)."""
    return {"source": error.lineage.source, "binlog_file": error.lineage.binlog_file,
            "binlog_pos": error.lineage.binlog_pos, "type_code": error.code, "kind": error.kind,
            "reason": str(error), "raw": b"", "kafka_partition": None, "kafka_offset": None,
            "quarantined_at": now}


def undeclared(change: Change, policy: str) -> tuple[ChangeLogEntry, ReplayError | None]:
    """A change for a source table without a target declaration.

    DDL (including database-level DDL, table '') is recorded in the change log: without a target
    there is nothing to change. A row or statement change raises UndeclaredTableError under
    policy 'fail' (the default: a missing declaration is a configuration error, and a silently
    dropped change would break "exactly once"); under 'quarantine' it is logged with outcome
    'undeclared_table' and a quarantine record; under 'ignore' it is only logged, with outcome
    'undeclared_ignored'."""
    lineage = Lineage.of_change(change)
    qualified = f"{change.database}.{change.table}"
    delta_table = default_delta_table_name(change.database, change.table) if change.table else ""
    entry = dict(row_id=None, database=change.database, table=change.table, delta_table=delta_table,
                 op=change.op, key=None,
                 before=tuple(change.before) if change.before is not None else None,
                 after=tuple(change.after) if change.after is not None else None, lineage=lineage)
    if change.op == Op.DDL:
        return ChangeLogEntry(outcome="ddl_recorded", **entry), None
    if policy == UNDECLARED_IGNORE:
        return ChangeLogEntry(outcome="undeclared_ignored", **entry), None
    error = ReplayError(UNDECLARED_TABLE, "no target declaration for this source table (conf/ or DDL)",
                        qualified, None, lineage, change.statement)
    if policy != UNDECLARED_QUARANTINE:
        raise UndeclaredTableError(f"{error}")
    return ChangeLogEntry(outcome=UNDECLARED_TABLE, **entry), error


def with_ddl_truncates(changes: Sequence[Change],
                       starts_anew: Callable[[Change], bool] = lambda change: False,
                       server_version: Callable[[Change], str | None] = lambda change: None,
                       ) -> list[Change]:
    """A table's changes (commit order) with each TRUNCATE TABLE of the stream (a `ddl` change
    record) as the table's `truncate` change: every row of the table goes at that place, the
    changes before it apply first, those after it on the empty table (issue #17 item 3:
    TRUNCATE then re-insert of the same keys). So is a DDL that `starts_anew` says made the
    table anew (a CREATE TABLE after its DROP). `server_version(ddl change)`: the source
    server's version its statement was read with (SchemaHistory.server_version)."""
    return [c.with_op(Op.TRUNCATE)
            if c.op == Op.DDL and (_truncates(c, server_version(c)) or starts_anew(c)) else c
            for c in changes]


def _truncates(change: Change, server_version: str | None) -> bool:
    try:
        parsed = statements.parse(change.statement or "", change.database, server_version)
    except statements.DdlParseError:
        return False
    return [type(p) for p in parsed] == [statements.Truncate] and parsed[0].name == statements.TableName(
        change.database, change.table)

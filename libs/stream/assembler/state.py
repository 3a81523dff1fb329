"""Per-source assembler state, stored by Spark's applyInPandasWithState between micro-batches
(STYLE practice 7: named schema, dataclass with to_row/from_row, never unpacked by position).

It stays small whatever the transaction size: parser context, the current Format_description
frame, the last position (dedup / gap), counters, and *references* to spilled chunks of the open
group and of XA-prepared groups waiting for their XA COMMIT. Table maps are not kept: every
transaction logs the Table_map events its rows events use (rows_event.h: a table id is only valid
inside its group), so they travel with the group's frames."""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from enum import Enum

from libs.contracts.avro_schemas import field_names
from libs.binlog.constants import BoundaryType
from libs.stream.boundary import Opening, ParserContext

from libs.stream.assembler.model import AssemblerConfig, SpillRef

COUNTER_NAMES = (
    "ignorable_skipped", "dummies_skipped", "duplicates_dropped", "invalid_transitions",
    "quarantined_frames", "decode_errors", "unknown_events", "transactions_emitted", "rollbacks",
    "xa_prepared", "xa_unknown", "open_expired", "cut_by_server_move",
    "spilled_bytes",  # bytes written to the SpillStore (chunks as stored), ever: cdc_spilled_bytes_total
)

# The stored row, by name (schemas/assembler_state.avsc; the Spark stage derives its state type from it).
STATE_FIELDS = field_names("assembler_state")


def evolve(obj, **changes):
    """dataclasses.replace for the frozen state classes of this module (no slots, no
    __post_init__): a copy of the instance dict with `changes`. dataclasses.replace re-runs
    __init__ field by field, ~10 us, and the assembler replaces its state or open group a few
    times per transaction (its per-frame fields live in the Assembler: bench/README.md)."""
    fields = obj.__dataclass_fields__
    for name in changes:  # not `changes.keys() - fields.keys()`: that walks every field, per call
        if name not in fields:
            raise TypeError(f"{type(obj).__name__} has no field {name!r}")
    new = object.__new__(type(obj))
    new.__dict__.update(obj.__dict__)
    new.__dict__.update(changes)
    return new


@dataclass(frozen=True)
class OpenGroup:
    """The group being read: its frames are spilled chunks 0..chunk_count-1 (+ an in-memory tail
    inside one feed() call only)."""

    trx_key: str  # "file:pos" of its first event: unique within a source
    start_file: str | None
    start_pos: int | None
    chunk_count: int = 0
    event_count: int = 0
    gtid: str | None = None
    commit_ts_micros: int | None = None  # MySQL 8 GTID immediate_commit_ts
    poison: str | None = None  # why it must be quarantined instead of applied (a bad frame inside)
    since: int | None = None  # caller's clock (feed(now=...)) when it opened

    @property
    def ref(self) -> SpillRef:
        return SpillRef(self.trx_key, self.chunk_count)


@dataclass(frozen=True)
class PreparedXa:
    """An XA-prepared group (XA_prepare seen) held until XA COMMIT / XA ROLLBACK names its xid."""

    trx_key: str
    chunk_count: int
    event_count: int
    gtid: str | None
    start_file: str | None
    start_pos: int | None

    @property
    def ref(self) -> SpillRef:
        return SpillRef(self.trx_key, self.chunk_count)


@dataclass(frozen=True)
class AssemblerState:
    source: str
    flavour: str = "mysql"
    fde: bytes | None = None  # raw frame of the current file's Format_description
    parser: ParserContext = ParserContext()
    last_file: str | None = None
    last_pos: int | None = None
    last_end_pos: int | None = None
    open: OpenGroup | None = None
    xa_prepared: dict[str, PreparedXa] = field(default_factory=dict)
    counters: dict[str, int] = field(default_factory=lambda: dict.fromkeys(COUNTER_NAMES, 0))
    last_fed_at: int | None = None

    def to_row(self) -> dict:
        group = self.open
        return {
            "source": self.source, "flavour": self.flavour, "fde": self.fde,
            "parser_state": int(self.parser.state), "parser_opening": int(self.parser.opening),
            "last_file": self.last_file, "last_pos": self.last_pos, "last_end_pos": self.last_end_pos,
            "open_trx_key": group.trx_key if group else None,
            "open_chunk_count": group.chunk_count if group else 0,
            "open_event_count": group.event_count if group else 0,
            "open_start_file": group.start_file if group else None,
            "open_start_pos": group.start_pos if group else None,
            "open_gtid": group.gtid if group else None,
            "open_commit_ts_micros": group.commit_ts_micros if group else None,
            "open_poison": group.poison if group else None,
            "open_since": group.since if group else None,
            "xa_prepared": json.dumps({k: asdict(v) for k, v in sorted(self.xa_prepared.items())}),
            "counters": json.dumps(self.counters, sort_keys=True),
            "last_fed_at": self.last_fed_at,
        }

    @classmethod
    def from_row(cls, row) -> "AssemblerState":
        """From a dict or any mapping/Row with the STATE_FIELDS names (never by position)."""
        r = {name: row[name] for name in STATE_FIELDS}
        group = None
        if r["open_trx_key"] is not None:
            group = OpenGroup(r["open_trx_key"], r["open_start_file"], _int(r["open_start_pos"]),
                              int(r["open_chunk_count"]), int(r["open_event_count"]), r["open_gtid"],
                              _int(r["open_commit_ts_micros"]), r["open_poison"], _int(r["open_since"]))
        counters = dict.fromkeys(COUNTER_NAMES, 0) | json.loads(r["counters"])
        return cls(
            source=r["source"], flavour=r["flavour"], fde=bytes(r["fde"]) if r["fde"] is not None else None,
            parser=ParserContext(BoundaryType(int(r["parser_state"])), Opening(int(r["parser_opening"]))),
            last_file=r["last_file"], last_pos=_int(r["last_pos"]), last_end_pos=_int(r["last_end_pos"]),
            open=group,
            xa_prepared={k: PreparedXa(**v) for k, v in json.loads(r["xa_prepared"]).items()},
            counters=counters, last_fed_at=_int(r["last_fed_at"]))

    def counted(self, name: str, n: int = 1) -> "AssemblerState":
        return evolve(self, counters={**self.counters, name: self.counters[name] + n})

    def spill_keys(self) -> list[str]:
        """The trx keys whose chunks this state references: the open group's, the held XA groups'."""
        keys = [self.open.trx_key] if self.open is not None and self.open.chunk_count else []
        return keys + [xa.trx_key for xa in self.xa_prepared.values() if xa.chunk_count]


def _int(value) -> int | None:
    return None if value is None else int(value)


class IdleAction(Enum):
    NOTHING = "nothing"  # no open group: emit nothing, keep the state (it holds the dedup position)
    WAIT = "wait"  # an open group stays in the SpillStore; its remaining frames are still coming
    QUARANTINE_OPEN = "quarantine_open"  # timed out: call Assembler.expire_open()


def idle_action(state: AssemblerState, now: int, config: AssemblerConfig) -> IdleAction:
    """What to do when a source's state times out with no new input (Spark GroupState timeout).

    Servers write a transaction's events together at commit, so an open group means the producer
    stopped mid-transaction; it resumes from its last position and the rest arrives later. So by
    default (open_trx_timeout_seconds None) the group waits forever in the SpillStore. With a
    timeout, a group open longer than it (by the caller's clock, `now` vs the `now` passed to the
    feed() that opened it) is quarantined. XA-prepared groups never time out: XA COMMIT may
    legitimately come much later."""
    if state.open is None:
        return IdleAction.NOTHING
    timeout = config.open_trx_timeout_seconds
    since = state.open.since if state.open.since is not None else state.last_fed_at
    if timeout is None or since is None or now - since < timeout:
        return IdleAction.WAIT
    return IdleAction.QUARANTINE_OPEN

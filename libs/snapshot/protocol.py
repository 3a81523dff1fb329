"""The snapshot protocol's two rules, one named module with a table test
(tests/unit/snapshot/test_snapshot_protocol.py), as libs/stream/boundary.py is for transactions.

1. What the shipper does on start (`plan_start`), from the source's last record in the topic
   alone (resume from Kafka, like the binlog):

   | last record of the source       | --snapshot (initial)              | --resnapshot                      |
   |---------------------------------|-----------------------------------|-----------------------------------|
   | none                            | run: included tables, binlog at P | run: included tables, binlog at P |
   | binlog event, ending at L       | follow the binlog from L          | run: included tables, binlog at L |
   | snapshot record, run unfinished | run: its remaining tables, binlog at the record's position (C) | same |
   | snapshot record `end`           | follow the binlog from C          | run: included tables, binlog at C |

   P is the new run's consistent position, C the record's header position (where the binlog
   continues after a run). A run killed mid-way is not continued from its last chunk: its
   consistent-snapshot transaction is gone, and its rows are consistent with the old position
   only. The remaining tables are read again, whole, in a new run at a new position; tables
   that finished keep the old one. The binlog still continues at C, before both. The restart's
   --exclude takes tables out of the remaining ones (--include does not narrow them): their
   snapshot is abandoned, their binlog changes still flow (libs/snapshot/oversized.py, README
   "Rows too large for the topic").

2. Which binlog changes a table's snapshot supersedes (`superseded`): a change of table t at
   binlog position p (its transaction's end) is already in t's snapshot rows when p is at or
   before the position of t's latest snapshot run, and is skipped then. This is what makes the
   binlog continue at C exact: changes between C and a later run's position apply to the tables
   whose snapshot is older, and not to those whose snapshot already holds them.
"""
from __future__ import annotations

from dataclasses import dataclass

from libs.contracts.position import BinlogPosition

FOLLOW, RUN = "follow", "run"
INITIAL, RESNAPSHOT = "initial", "resnapshot"


@dataclass(frozen=True)
class LastRecord:
    """What the shipper needs of the source's last record in the topic."""

    position: BinlogPosition                    # binlog event: its end; snapshot record: header position C
    snapshot_kind: str | None = None            # None for a binlog event
    remaining: tuple[str, ...] | None = None  # a snapshot record's `tables` (table_names.table_key)


@dataclass(frozen=True)
class StartPlan:
    action: str                                 # FOLLOW | RUN
    binlog_from: BinlogPosition | None                # None: at the new run's consistent position
    tables: tuple[str, ...] | None = None       # RUN: the run's tables (table_key); None = all included


def plan_start(last: LastRecord | None, mode: str) -> StartPlan:
    """Rule 1 (module docstring)."""
    if mode not in (INITIAL, RESNAPSHOT):
        raise ValueError(f"snapshot mode must be {INITIAL!r} or {RESNAPSHOT!r}, got {mode!r}")
    if last is None:
        return StartPlan(RUN, None)
    if last.snapshot_kind is not None and last.snapshot_kind != "end":
        return StartPlan(RUN, last.position, tuple(last.remaining or ()))
    if mode == INITIAL:
        return StartPlan(FOLLOW, last.position)
    return StartPlan(RUN, last.position)


def superseded(snapshot_at: BinlogPosition | None, change_at: BinlogPosition) -> bool:
    """Rule 2: is a binlog change at `change_at` already in the rows of a table snapshot taken
    at `snapshot_at` (None: the table has no snapshot)?"""
    return snapshot_at is not None and change_at.key() <= snapshot_at.key()

"""Which rejected input stops the job (DESIGN.md "Bad input", "Ignorable events (WL#4033)").

Whatever the policy, the assembler and the rows stage write every rejected frame to the
quarantine table first: nothing is lost. Then each kind of rejection follows its policy:

    kind of the quarantined frames     policy                 default
    unknown_event                      unknown_event_policy   fail (WL#4033: the stream stops)
    bad_transaction                    never stops by itself: the rest of a transaction whose
                                       bad frame has a row of its own kind
    any other (truncated, checksum,    bad_input_policy       quarantine (the job goes on with
    malformed, limit, boundary, ...)                          the transactions after it)

"fail" stops the job before anything of the micro-batch is applied, with one line naming the
first incident: its source, kind, reason and the last binlog position it covers. The operator
looks at it in the quarantine and lets the job go past it by naming that position (or a later
one) for the source in `accept_bad_input_through`; a restart then applies the batch as in
quarantine mode. Until then every restart stops at the same place, without looping.

An incident is every quarantined frame of one source sharing a kind and a reason (a cut
transaction's frames share both; each decode error names its own position in its reason)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Mapping

from libs.binlog.file_names import binlog_sort_key
from libs.config_errors import quoted

FAIL, QUARANTINE = "fail", "quarantine"
POLICIES = (FAIL, QUARANTINE)
UNKNOWN_EVENT = "unknown_event"  # libs/binlog/errors.py UnknownEventError.kind
CONSEQUENCE = "bad_transaction"  # libs/assembler: the frames around a bad one

@dataclass(frozen=True, order=True)
class BinlogPosition:
    """A position in a source's binlog, ordered as the server writes them: by the file's
    sequence number (base.000123), then the byte offset."""

    sequence: tuple[int, str, int]  # (epoch, base, number): binlog_sort_key without the name
    pos: int
    file: str

    @staticmethod
    def of(file: str, pos: int) -> "BinlogPosition":
        return BinlogPosition(binlog_sort_key(file)[:3], pos, file)

    @staticmethod
    def parse(text: str) -> "BinlogPosition":
        """'mdb-bin.000003:1234' -> the position; ValueError naming the expected form."""
        file, sep, pos = str(text).rpartition(":")
        if not sep or not file or not pos.isdigit():
            raise ValueError(f"must be FILE:POS (e.g. mdb-bin.000003:1234), got {quoted(text)}")
        return BinlogPosition.of(file, int(pos))

    def __str__(self) -> str:
        return f"{self.file}:{self.pos}"


@dataclass(frozen=True)
class Incident:
    """Quarantined frames of one source sharing kind and reason; `last` is the furthest
    position they cover (a transaction's end for a rows-stage rejection)."""

    source: str
    kind: str
    reason: str
    first: BinlogPosition
    last: BinlogPosition


@dataclass(frozen=True)
class BadInputPolicy:
    unknown_events: str = FAIL
    other: str = QUARANTINE
    accepted_through: tuple[tuple[str, BinlogPosition], ...] = ()  # (source, position), sorted

    @property
    def can_stop(self) -> bool:
        return FAIL in (self.unknown_events, self.other)

    def policy_for(self, kind: str) -> str:
        if kind == CONSEQUENCE:
            return QUARANTINE
        return self.unknown_events if kind == UNKNOWN_EVENT else self.other

    def stops_on(self, incident: Incident) -> bool:
        accepted = dict(self.accepted_through).get(incident.source)
        if accepted is not None and incident.last <= accepted:
            return False
        return self.policy_for(incident.kind) == FAIL

    def first_stop(self, incidents: Iterable[Incident]) -> tuple[Incident, int] | None:
        """The earliest incident (per source, by position) that stops the job, and how many
        more in the batch would; None when the batch may go on."""
        stopping = sorted((i for i in incidents if self.stops_on(i)), key=lambda i: (i.source, i.first))
        return (stopping[0], len(stopping) - 1) if stopping else None


def accepted_positions(value: Mapping[str, str] | None) -> tuple[tuple[str, BinlogPosition], ...]:
    """The `accept_bad_input_through` setting: {source: 'FILE:POS'} -> sorted pairs.
    ValueError names the source whose position is malformed."""
    if value is None:
        return ()
    if not isinstance(value, Mapping):
        raise ValueError(f"must be a mapping of source: FILE:POS, got {quoted(value)}")
    pairs = []
    for source, text in value.items():
        try:
            pairs.append((str(source), BinlogPosition.parse(text)))
        except ValueError as e:
            raise ValueError(f"{source}: {e}") from None
    return tuple(sorted(pairs))


def setting_for(kind: str) -> str:
    """The job setting (libs/config.py) whose policy applies to a quarantine kind."""
    return "unknown_event_policy" if kind == UNKNOWN_EVENT else "bad_input_policy"


def stop_message(incident: Incident, more: int, quarantine_table: str) -> str:
    """The one line an operator reads when bad input stops the job."""
    policy_name = setting_for(incident.kind)
    others = f" ({more} more in this batch)" if more else ""
    span = str(incident.last) if incident.first == incident.last else f"{incident.first} to {incident.last}"
    return (f"stopped on bad input ({policy_name}: fail): source {incident.source}, {span}, "
            f"{incident.kind}: {incident.reason}{others}. Nothing of this batch was applied; the "
            f"frames are in {quarantine_table}. To go past it, set accept_bad_input_through: "
            f"{{{incident.source}: '{incident.last}'}} (or {policy_name}: quarantine) and restart.")

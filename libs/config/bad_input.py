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
first incident: its source, kind, reason, the last binlog position it covers and, for a record
the job could not read as one of the pipeline's, its Kafka topic, partition and offset. The
operator looks at it in the quarantine and lets the job go past it by naming that position (or a
later one) in `accept_bad_input_through`; a restart then applies the batch as in quarantine
mode. Until then every restart stops at the same place, without looping. Two kinds of position
can be named:

    {SOURCE: 'FILE:POS'}            a binlog position of that source (a frame, a transaction)
    {'kafka:TOPIC:PARTITION': OFF}  a Kafka offset: every incident of records of that topic
                                    partition up to offset OFF (a record that is not a
                                    well-formed record of this pipeline, libs/stages/kafka_input.py:
                                    what its headers claim cannot be trusted, its offset can)

An incident is every quarantined frame of one source sharing a kind and a reason (a cut
transaction's frames share both; each decode error names its own position in its reason, each
rejected Kafka record its offset)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Mapping

from libs.contracts.position import KAFKA_PREFIX, BinlogPosition, KafkaPosition
from libs.settings.errors import quoted
from libs.stages.kafka_input import RECORD_KINDS

FAIL, QUARANTINE = "fail", "quarantine"
POLICIES = (FAIL, QUARANTINE)
UNKNOWN_EVENT = "unknown_event"  # libs/binlog/errors.py UnknownEventError.kind
CONSEQUENCE = "bad_transaction"  # libs/stream/assembler: the frames around a bad one


@dataclass(frozen=True)
class Incident:
    """Quarantined frames of one source sharing kind and reason; `last` is the furthest
    binlog position they cover (a transaction's end for a rows-stage rejection), None when
    they name none (a Kafka record without a usable position); `kafka` the furthest Kafka
    record among them, when known."""

    source: str
    kind: str
    reason: str
    first: BinlogPosition | None
    last: BinlogPosition | None
    kafka: KafkaPosition | None = None

    @property
    def named_by_offset(self) -> bool:
        """Is the way past it a Kafka offset? For a record the job could not read as one of
        the pipeline's records (RECORD_KINDS) its binlog position is only what its headers
        claim: accepting through it could accept much more than the record."""
        return self.kafka is not None and (self.last is None or self.kind in RECORD_KINDS)

    def order(self) -> tuple:
        """Per source, by binlog position; those without one after, by Kafka position."""
        if self.first is not None:
            return (self.source, 0, self.first, KafkaPosition("", 0, 0))
        return (self.source, 1, BinlogPosition("", 0), self.kafka or KafkaPosition("", 0, 0))


@dataclass(frozen=True)
class BadInputPolicy:
    unknown_events: str = FAIL
    other: str = QUARANTINE
    # (source, binlog position) and ('kafka:TOPIC:PARTITION', Kafka position), sorted
    accepted_through: tuple[tuple[str, "BinlogPosition | KafkaPosition"], ...] = ()

    @property
    def can_stop(self) -> bool:
        return FAIL in (self.unknown_events, self.other)

    def policy_for(self, kind: str) -> str:
        if kind == CONSEQUENCE:
            return QUARANTINE
        return self.unknown_events if kind == UNKNOWN_EVENT else self.other

    def stops_on(self, incident: Incident) -> bool:
        return self.policy_for(incident.kind) == FAIL and not self.accepts(incident)

    def accepts(self, incident: Incident) -> bool:
        """Is the incident at or before a position accept_bad_input_through names?"""
        accepted = dict(self.accepted_through)
        binlog = accepted.get(incident.source)
        if isinstance(binlog, BinlogPosition) and incident.last is not None and incident.last <= binlog:
            return True
        kafka = incident.kafka and accepted.get(incident.kafka.setting_key)
        return isinstance(kafka, KafkaPosition) and incident.kafka.offset <= kafka.offset

    def first_stop(self, incidents: Iterable[Incident]) -> tuple[Incident, int] | None:
        """The earliest incident (per source, by position) that stops the job, and how many
        more in the batch would; None when the batch may go on."""
        stopping = sorted((i for i in incidents if self.stops_on(i)), key=Incident.order)
        return (stopping[0], len(stopping) - 1) if stopping else None


def accepted_positions(value: Mapping[str, str] | None, *, kafka: bool = False
                       ) -> tuple[tuple[str, "BinlogPosition | KafkaPosition"], ...]:
    """An accept setting: {source: 'FILE:POS'} (and with `kafka`, also
    {'kafka:TOPIC:PARTITION': OFFSET}) -> sorted pairs. ValueError names the key whose
    position is malformed."""
    if value is None:
        return ()
    if not isinstance(value, Mapping):
        forms = "source: FILE:POS or 'kafka:TOPIC:PARTITION': OFFSET" if kafka else "source: FILE:POS"
        raise ValueError(f"must be a mapping of {forms}, got {quoted(value)}")
    pairs = []
    for key, position in value.items():
        try:
            if kafka and str(key).startswith(KAFKA_PREFIX):
                parsed = KafkaPosition.parse(str(key), position)
                pairs.append((parsed.setting_key, parsed))
            else:
                pairs.append((str(key), BinlogPosition.parse(position)))
        except ValueError as e:
            raise ValueError(f"{key}: {e}") from None
    return tuple(sorted(pairs, key=lambda pair: pair[0]))


def setting_for(kind: str) -> str:
    """The job setting (libs/config/job.py) whose policy applies to a quarantine kind."""
    return "unknown_event_policy" if kind == UNKNOWN_EVENT else "bad_input_policy"


def stop_message(incident: Incident, more: int, quarantine_table: str) -> str:
    """The one line an operator reads when bad input stops the job."""
    policy_name = setting_for(incident.kind)
    others = f" ({more} more in this batch)" if more else ""
    span = [] if incident.last is None else [
        str(incident.last) if incident.first == incident.last else f"{incident.first} to {incident.last}"]
    if incident.named_by_offset:  # a frame's binlog position names it; such a record, its offset
        span.append(str(incident.kafka))
        way = f"{{'{incident.kafka.setting_key}': {incident.kafka.offset}}}"
    else:
        way = f"{{{incident.source}: '{incident.last}'}}"
    return (f"stopped on bad input ({policy_name}: fail): source {', '.join([incident.source, *span])}, "
            f"{incident.kind}: {incident.reason}{others}. Nothing of this batch was applied; the "
            f"frames are in {quarantine_table}. To go past it, set accept_bad_input_through: "
            f"{way} (or {policy_name}: quarantine) and restart.")

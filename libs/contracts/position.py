"""Where a change stands in its source's stream, and the one commit order every stage uses.

A binlog position orders by file in the servers' order (binlog_sort_key: .1000000 after .999999,
a later epoch's files after an earlier one's), then by offset; a change by its transaction's
commit position, then its order inside the transaction. A Kafka position names a record by
topic, partition and offset. A GTID names a transaction on every
server of a replication topology; per domain (MariaDB) or server uuid (MySQL) its sequence
number grows."""
from __future__ import annotations

import re
from dataclasses import dataclass
from functools import total_ordering
from typing import Any, Iterable, Mapping, Protocol

from libs.binlog.file_names import binlog_sort_key
from libs.settings.errors import quoted


def position_key(file: str, pos: int) -> tuple:
    """The one order of binlog positions: the file in the servers' order (binlog_sort_key), then
    the byte offset. Every other order here extends it."""
    return (*binlog_sort_key(file), pos)


@total_ordering
@dataclass(frozen=True)
class BinlogPosition:
    """A place in a source's binlog: a file (`EPOCH/NAME` after a server move) and a byte offset,
    ordered by position_key."""

    file: str
    pos: int

    def key(self) -> tuple:
        return position_key(self.file, self.pos)

    def __lt__(self, other: "BinlogPosition") -> bool:
        return self.key() < other.key()

    @staticmethod
    def parse(text: str) -> "BinlogPosition":
        """'mdb-bin.000003:1234' -> the position; ValueError naming the expected form."""
        file, sep, pos = str(text).rpartition(":")
        if not sep or not file or not pos.isdigit():
            raise ValueError(f"must be FILE:POS (e.g. mdb-bin.000003:1234), got {quoted(text)}")
        return BinlogPosition(file, int(pos))

    def __str__(self) -> str:
        return f"{self.file}:{self.pos}"


def commit_key(trx_file: str, trx_end_pos: int, commit_ts, change_seq: int) -> tuple:
    """The commit order of a source's change records (Change.order, Commit.order), from the
    fields themselves: the transaction's commit position, then change_seq. commit_ts only orders
    records at one position: a snapshot run and the run that resumed it, taken later, can be
    consistent with the same position (libs/snapshot/changes.py); one binlog transaction ends
    at each position. Files in the servers' order (position_key), not as text."""
    return (*position_key(trx_file, trx_end_pos), commit_ts, change_seq)


def sort_key_of(source: str, trx_file: str, trx_end_pos: int, commit_ts, change_seq: int) -> tuple:
    """The order of change records of several sources (Change.source_order), from the fields
    themselves (a change Spark summed up, not collected): source by source, each in commit order
    (no cross-source order exists)."""
    return (source, *commit_key(trx_file, trx_end_pos, commit_ts, change_seq))


class InCommitOrder(Protocol):
    """A change record, or where one stands (libs/contracts/change.py Change, Commit)."""

    source: str
    gtid: str | None

    @property
    def order(self) -> tuple: ...


_MARIADB_GTID = re.compile(r"^(\d+)-(\d+)-(\d+)$")
_MYSQL_GTID = re.compile(r"^([0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"
                         r"(?::[A-Za-z_][A-Za-z0-9_]*)?):(\d+)$")


@dataclass(frozen=True, order=True)
class GtidPosition:
    """The last GTID of one GTID domain that a batch applied (schemas/progress_record.avsc
    GtidPosition): it and every earlier GTID of its domain are in Delta once the batch is.
    Ordered by domain, then seq."""

    gtid_domain: str  # the MariaDB domain id; the MySQL server uuid[:tag], lowercase
    gtid_seq: int
    gtid: str  # as the source wrote it

    def to_record(self) -> dict[str, Any]:
        return {"gtid_domain": self.gtid_domain, "gtid_seq": self.gtid_seq, "gtid": self.gtid}


class GtidFormatError(ValueError):
    """A text that is neither a MariaDB nor a MySQL GTID."""


def gtid_domain_seq(gtid: str) -> tuple[str, int]:
    """(domain, seq) of a GTID: MariaDB 'domain-server-seq' -> (domain, seq) (the server id does
    not order: a domain's seq grows across servers); MySQL 'uuid[:tag]:n' -> (lowercase
    uuid[:tag], n). GtidFormatError naming the forms otherwise."""
    text = gtid.strip() if isinstance(gtid, str) else ""
    maria = _MARIADB_GTID.match(text)
    if maria:
        return maria[1], int(maria[3])
    mysql = _MYSQL_GTID.match(text)
    if mysql:
        return mysql[1].lower(), int(mysql[2])
    raise GtidFormatError(f"not a GTID (MariaDB domain-server-seq or MySQL uuid:n): {gtid!r}")


def _domain(gtid: str | None) -> tuple[str, int] | None:
    if not gtid:
        return None
    try:
        return gtid_domain_seq(gtid)
    except GtidFormatError:
        return None  # a source's own identity of another form: recorded, not indexed by domain


def gtid_positions(changes: Iterable[InCommitOrder],
                   more: Mapping[str, tuple[InCommitOrder, int]] | None = None,
                   ) -> dict[str, list[dict[str, Any]]]:
    """source -> per GTID domain the batch's last GTID in commit order (GtidPosition records,
    sorted by domain), over `changes` (the driver's) and `more` (per source, the last change of
    the executors' part: libs.apply.plan.last_changes). A change without a GTID adds nothing."""
    last: dict[tuple[str, str], tuple[int, InCommitOrder]] = {}
    for change in [*changes, *(c for c, _ in (more or {}).values())]:
        parsed = _domain(change.gtid)
        if parsed is None:
            continue
        key = (change.source, parsed[0])
        if key not in last or change.order > last[key][1].order:
            last[key] = (parsed[1], change)
    out: dict[str, list[dict[str, Any]]] = {}
    for (source, domain), (seq, change) in sorted(last.items()):
        out.setdefault(source, []).append(GtidPosition(domain, seq, change.gtid).to_record())
    return out


KAFKA_PREFIX = "kafka:"  # accept_bad_input_through's key of a topic partition


@dataclass(frozen=True, order=True)
class KafkaPosition:
    """A record's place in the topic: what names a record whose headers cannot be trusted."""

    topic: str
    partition: int
    offset: int

    @property
    def setting_key(self) -> str:
        """Its key in accept_bad_input_through (a topic name has no ':', Kafka's legal
        characters are [a-zA-Z0-9._-])."""
        return f"{KAFKA_PREFIX}{self.topic}:{self.partition}"

    @staticmethod
    def parse(key: str, offset) -> "KafkaPosition":
        """('kafka:binlog:0', 1234) -> the position; ValueError naming the expected form."""
        topic, sep, partition = key[len(KAFKA_PREFIX):].rpartition(":")
        if not key.startswith(KAFKA_PREFIX) or not sep or not topic or not partition.isdigit():
            raise ValueError(f"must be kafka:TOPIC:PARTITION (e.g. kafka:binlog:0), got {quoted(key)}")
        if (isinstance(offset, bool) or not (isinstance(offset, int) or str(offset).isdigit())
                or int(offset) < 0):
            raise ValueError(f"must be a Kafka offset (an integer >= 0), got {quoted(offset)}")
        return KafkaPosition(topic, int(partition), int(offset))

    def __str__(self) -> str:
        return f"topic {self.topic} partition {self.partition} offset {self.offset}"

"""The Kafka record contract (DESIGN.md "Kafka record"), declared once.

One record per binlog event:
  key     = source id, UTF-8 (one source = one ordered stream = one partition)
  value   = the event's exact bytes as in the binlog file: 19-byte header, body, CRC32 if any
  headers = HEADER_* below, all UTF-8 text (decimal numbers), so any consumer (the Spark job's
            `headers` column, kcat, Java) reads them without a codec.

Snapshot records (cdc-ship --snapshot, schemas/snapshot_record.avsc) travel in the same stream:
header record_kind = "snapshot", value = the Avro record, binlog_file/binlog_pos = the position the
snapshot is consistent with (the next binlog event shipped starts there). So does the
Format_description a server sends when a dump starts in the middle of a file (record_kind =
"format", value = that event, binlog_pos = where the dump starts): it is not file content (its
log_pos is 0), but without it nothing after it can be decoded. So do heartbeats (record_kind =
"heartbeat", schemas/heartbeat_record.avsc, libs/contracts/heartbeat.py): at the position the
shipper has reached when the server says it has logged nothing more. A binlog event's record has no
record_kind header, so the raw-frame contract is unchanged: skip the side records and the topic
still rebuilds every shipped binlog file byte for byte.

binlog_pos is the event's START offset in binlog_file, computed by the shipper from the byte
stream (magic + sizes of the events before it), never from the header's log_pos (MariaDB 11.4+
writes 0 there for events inside transactions). The next event of the same file starts at
binlog_pos + len(value); that is what resume and rebuild rely on.

Where the record came from, on every record the shipper writes from a server (absent on older
topics and from binlog files):
  server_identity  the server the shipper was connected to (libs/source/server_identity.py),
                   e.g. "mariadb server_id=2 gtid_domain_id=0": a file:pos resume is only valid
                   against that server
  gtid_state       the GTID state of the transactions whole in the topic up to this record
                   (MariaDB domain-server-seq per domain; libs/shipper/gtid_state.py)
  gtid             the GTID of the transaction this record belongs to, when it has one
  binlog_epoch     how many times the source moved to another server's binlog (cdc-ship
                   --follow-gtid) before this record; absent = 0. binlog_file names a file of the
                   server of that epoch (libs/binlog/file_names.py: consumers name it EPOCH/NAME)

With a topic secret (cdc-ship --topic-secret-file), every record's LAST header is its
authenticity tag, cdc_tag (libs/contracts/topic_tag.py: an HMAC over key, value and every header
before it); without one, no record has it.
"""
from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from libs.binlog.constants import COMMON_HEADER_LEN
from libs.binlog.header import event_type, server_id

HEADER_BINLOG_FILE = "binlog_file"  # base name of the binlog file, e.g. "mdb-bin.000001"
HEADER_BINLOG_POS = "binlog_pos"    # start offset of the event in that file (decimal)
HEADER_SERVER_ID = "server_id"      # server_id from the event's common header (decimal)
HEADER_SOURCE = "source"            # the source id (same as the key)
HEADER_EVENT_TYPE = "event_type"    # type code byte of the event (decimal), for cheap filtering
HEADER_RECORD_KIND = "record_kind"  # absent: a binlog event; else a side TopicKind's value
HEADER_SERVER_IDENTITY = "server_identity"  # the server shipped from (see the module doc)
HEADER_GTID_STATE = "gtid_state"    # GTID state of the whole transactions up to this record
HEADER_GTID = "gtid"                # GTID of this record's transaction
HEADER_BINLOG_EPOCH = "binlog_epoch"  # server moves before this record (decimal; absent = 0)
HEADER_TAG = "cdc_tag"              # the record's authenticity tag, its last header (topic_tag.py)
HEADER_NAMES = (HEADER_BINLOG_FILE, HEADER_BINLOG_POS, HEADER_SERVER_ID, HEADER_SOURCE,
                HEADER_EVENT_TYPE, HEADER_RECORD_KIND, HEADER_SERVER_IDENTITY, HEADER_GTID_STATE,
                HEADER_GTID, HEADER_BINLOG_EPOCH)


class TopicKind(StrEnum):
    """What a record of the topic is: its record_kind header's value (the module doc; pinned by
    tests/unit/stream/test_record_kinds.py). All but BINLOG are side records: beside the binlog
    bytes, they take no room in a file."""

    BINLOG = "binlog"        # a binlog event, as in the file: the one kind without the header
    SNAPSHOT = "snapshot"    # a snapshot record (schemas/snapshot_record.avsc)
    FORMAT = "format"        # the Format_description a server sends when a dump starts mid-file
    HEARTBEAT = "heartbeat"  # the source is caught up to its position (schemas/heartbeat_record.avsc)


_KIND_OF = {kind.value: kind for kind in TopicKind}
_BINLOG = TopicKind.BINLOG  # looked up once: Python 3.11 takes ~0.13 us per member lookup, per record here


@dataclass(frozen=True)
class KafkaRecord:
    """One shipped event: where it lives in the source's binlog and its exact bytes; or a
    snapshot record (kind TopicKind.SNAPSHOT) and the position its snapshot is consistent with."""

    source: str
    binlog_file: str
    binlog_pos: int
    value: bytes
    kind: TopicKind = TopicKind.BINLOG
    origin: "Origin | None" = None  # where it came from: None from files and older topics

    @property
    def is_snapshot(self) -> bool:
        return self.kind == TopicKind.SNAPSHOT

    @property
    def is_side(self) -> bool:
        """A snapshot, format or heartbeat record: beside the binlog bytes, not in them."""
        return self.kind != _BINLOG

    @property
    def end_pos(self) -> int:
        """Where the next event of the same file starts (the resume point). A side record
        takes no room in the binlog: the next event starts at its own position."""
        return self.binlog_pos if self.is_side else self.binlog_pos + len(self.value)

    @property
    def server_id(self) -> int:
        return server_id(self.value)

    @property
    def event_type(self) -> int:
        return event_type(self.value)

    @property
    def epoch(self) -> int:
        return self.origin.epoch if self.origin is not None else 0

    def key(self) -> bytes:
        return self.source.encode("utf-8")

    def headers(self) -> list[tuple[str, bytes]]:
        if self.is_side:
            own = [(HEADER_BINLOG_FILE, self.binlog_file.encode("utf-8")),
                   (HEADER_BINLOG_POS, str(self.binlog_pos).encode()),
                   (HEADER_SOURCE, self.source.encode("utf-8")),
                   (HEADER_RECORD_KIND, self.kind.encode())]
        else:
            own = [(HEADER_BINLOG_FILE, self.binlog_file.encode("utf-8")),
                   (HEADER_BINLOG_POS, str(self.binlog_pos).encode()),
                   (HEADER_SERVER_ID, str(self.server_id).encode()),
                   (HEADER_SOURCE, self.source.encode("utf-8")),
                   (HEADER_EVENT_TYPE, str(self.event_type).encode())]
        return own + (self.origin.headers() if self.origin is not None else [])

    @classmethod
    def from_kafka(cls, key: bytes | None, value: bytes | None,
                   headers: list[tuple[str, bytes]] | None) -> "KafkaRecord":
        """Parse a consumed record; raises ValueError naming what is missing or malformed."""
        h = {k: v for k, v in (headers or [])}
        missing = [n for n in (HEADER_BINLOG_FILE, HEADER_BINLOG_POS, HEADER_SOURCE) if n not in h]
        if missing:
            raise ValueError(f"record without header(s) {', '.join(missing)}")
        text = h.get(HEADER_RECORD_KIND)
        kind = _BINLOG if text is None else _KIND_OF.get(text.decode("utf-8"))
        if kind is None:
            raise ValueError(f"record of unknown kind {text.decode('utf-8')!r}")
        if kind is _BINLOG and (value is None or len(value) < COMMON_HEADER_LEN):
            raise ValueError(f"record value of {0 if value is None else len(value)} bytes is not "
                             f"a binlog event")
        source = h[HEADER_SOURCE].decode("utf-8")
        if key is not None and key.decode("utf-8") != source:
            raise ValueError(f"record key {key!r} differs from source header {source!r}")
        return cls(source, h[HEADER_BINLOG_FILE].decode("utf-8"),
                   int(h[HEADER_BINLOG_POS].decode()), bytes(value or b""), kind, Origin.of(h))


@dataclass(frozen=True)
class Origin:
    """Where a record came from (the module doc's server_identity, gtid_state, gtid and
    binlog_epoch headers); all text, parsed by libs/source/server_identity.py and gtid_state.py
    where they are used."""

    identity: str | None = None
    gtid_state: str | None = None
    gtid: str | None = None
    epoch: int = 0

    def headers(self) -> list[tuple[str, bytes]]:
        out = [(name, value.encode("utf-8")) for name, value in (
            (HEADER_SERVER_IDENTITY, self.identity), (HEADER_GTID_STATE, self.gtid_state),
            (HEADER_GTID, self.gtid)) if value is not None]
        return out + ([(HEADER_BINLOG_EPOCH, str(self.epoch).encode())] if self.epoch else [])

    @staticmethod
    def of(headers: dict[str, bytes]) -> "Origin | None":
        """From a consumed record's headers; None when it has none of them (an older topic)."""
        text = {n: headers[n].decode("utf-8") for n in (
            HEADER_SERVER_IDENTITY, HEADER_GTID_STATE, HEADER_GTID, HEADER_BINLOG_EPOCH)
            if n in headers}
        if not text:
            return None
        epoch = text.get(HEADER_BINLOG_EPOCH, "0")
        if not epoch.isdigit():
            raise ValueError(f"{HEADER_BINLOG_EPOCH} header {epoch!r} is not a number")
        return Origin(text.get(HEADER_SERVER_IDENTITY), text.get(HEADER_GTID_STATE),
                      text.get(HEADER_GTID), int(epoch))

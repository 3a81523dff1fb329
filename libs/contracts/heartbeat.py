"""Heartbeat records (schemas/heartbeat_record.avsc): the shipper's word that it holds
everything the server had logged at a time (issue #20 item 1, DESIGN.md "Other records in the
same topic").

From a server: a master sends a heartbeat event after @master_heartbeat_period without events (MariaDB
sql/sql_repl.cc send_heartbeat_event): timestamp 0, log_pos = the position its dump thread has
reached, body = the binlog file name (+ CRC32). When that file and position are the replica's
own, nothing is in flight: the shipper publishes a heartbeat record at that position. A
heartbeat that names another position (the shipper is behind, or the master skipped events) is
not published: it would claim a freshness that is not true.

From files (--from-file --follow): a read of the newest file that found nothing new and no
partial event is the same claim, at the file's end, as of the time of that read
(libs/shipper/file_source.py). `FollowBeat` sends one after each `period` of such silence, as a
master does after @master_heartbeat_period.
"""
from __future__ import annotations

import io
from dataclasses import dataclass

import fastavro

from libs.contracts.avro_schemas import avro_schema
from libs.binlog.constants import COMMON_HEADER_LEN, EventType
from libs.binlog.errors import MalformedError
from libs.binlog.events_control import decode_heartbeat_v2

from libs.binlog.framing import crc_matches
from libs.binlog.header import event_type, header_fields

_SCHEMA = fastavro.parse_schema(avro_schema("heartbeat_record"))


@dataclass(frozen=True)
class HeartbeatRecord:
    source: str
    caught_up_as_of_micros: int
    server_heartbeat: bytes | None = None

    def encode(self) -> bytes:
        out = io.BytesIO()
        fastavro.schemaless_writer(out, _SCHEMA, vars(self))
        return out.getvalue()

    @classmethod
    def decode(cls, raw: bytes) -> "HeartbeatRecord":
        """Raises ValueError when `raw` is not a heartbeat record."""
        try:
            return cls(**fastavro.schemaless_reader(io.BytesIO(raw), _SCHEMA))
        except Exception as exc:  # noqa: BLE001 - fastavro raises several types for bad bytes
            raise ValueError(f"not a heartbeat record ({type(exc).__name__}: {exc})") from None


def server_position(frame: bytes) -> tuple[str, int]:
    """(binlog file, position) a server's heartbeat event names. With a CRC32 the last 4 bytes
    are the checksum, not the body: a matching CRC decides, as for the fake Rotate.
    Heartbeat (27, MariaDB and MySQL): the body is the file name, log_pos the position.
    Heartbeat_log_event_v2 (41, MySQL 8.0.26+): both are fields of the body, the position a u64
    (libs/binlog/events_control.py decode_heartbeat_v2). Raises MalformedError when a v2 body
    does not parse or names no position."""
    log_pos = header_fields(frame).log_pos
    body = frame[COMMON_HEADER_LEN:]
    if len(frame) > COMMON_HEADER_LEN + 4 and crc_matches(frame):
        body = body[:-4]
    if event_type(frame) == EventType.HEARTBEAT_V2:
        beat = decode_heartbeat_v2(None, bytes(body), None)
        if beat.log_position is None:
            raise MalformedError(f"Heartbeat_v2 of {beat.log_file!r} without a log position field")
        return beat.log_file, beat.log_position
    return body.decode("utf-8", errors="replace"), log_pos


def is_caught_up(frame: bytes, file: str | None, pos: int | None) -> bool:
    """The heartbeat names exactly the shipper's next position: it holds all the server logged."""
    return file is not None and server_position(frame) == (file, pos)


class FollowBeat:
    """When a file follower publishes a heartbeat: at idle reads `period_ns` after the later of
    the last heartbeat and the first idle read since an event was shipped (the follower's
    silence, like the master's). Asked with the shipper's event count, so the per-event path
    reads no clock."""

    def __init__(self, period_s: float):
        if period_s <= 0:
            raise ValueError(f"heartbeat period must be positive, got {period_s}")
        self.period_ns = int(period_s * 1e9)
        self._events = -1  # the event count at the start of the silence
        self._since = 0

    def due(self, at_ns: int, events: int) -> bool:
        """An idle read at `at_ns` (epoch ns) with `events` shipped so far: publish one now?"""
        if events != self._events:  # shipped something since: the silence starts here
            self._events, self._since = events, at_ns
            return False
        if at_ns - self._since < self.period_ns:
            return False
        self._since = at_ns
        return True

"""Heartbeat records (schemas/heartbeat_record.avsc): the shipper's word that it holds
everything the server had logged at a time (issue #20 item 1, DESIGN.md "Other records in the
same topic").

A master sends a heartbeat event after @master_heartbeat_period without events (MariaDB
sql/sql_repl.cc send_heartbeat_event): timestamp 0, log_pos = the position its dump thread has
reached, body = the binlog file name (+ CRC32). When that file and position are the replica's
own, nothing is in flight: the shipper publishes a heartbeat record at that position. A
heartbeat that names another position (the shipper is behind, or the master skipped events) is
not published: it would claim a freshness that is not true.
"""
from __future__ import annotations

import io
from dataclasses import dataclass

import fastavro

from libs.avro_schemas import avro_schema
from libs.binlog.constants import COMMON_HEADER, COMMON_HEADER_LEN

from .frame_check import crc_matches

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
    are the checksum, not the name: a matching CRC decides, as for the fake Rotate."""
    log_pos = COMMON_HEADER.unpack_from(frame, 0)[4]
    body = frame[COMMON_HEADER_LEN:]
    if len(frame) > COMMON_HEADER_LEN + 4 and crc_matches(frame):
        body = body[:-4]
    return body.decode("utf-8", errors="replace"), log_pos


def is_caught_up(frame: bytes, file: str | None, pos: int | None) -> bool:
    """The heartbeat names exactly the shipper's next position: it holds all the server logged."""
    return file is not None and server_position(frame) == (file, pos)

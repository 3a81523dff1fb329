"""The 19-byte common header every binlog event starts with, read in this one place for code
outside the codec (binlog_event.h Log_event_header: timestamp u32, type u8, server_id u32,
event_size u32, log_pos u32, flags u16, little endian). The shipper, the topic contract and the
stages ask these functions, never an offset (tests/unit/foundation/test_folder_order.py).

Each reads only the bytes it names: a frame too short for them raises IndexError/struct.error
like any slice past its end; callers that take untrusted bytes check the length first
(libs/contracts/topic.py, libs/stages/kafka_input.py)."""
from __future__ import annotations

from libs.binlog.constants import (
    COMMON_HEADER, COMMON_HEADER_LEN, EVENT_LEN_OFFSET, EVENT_TYPE_OFFSET, MARIA_FL_STANDALONE,
    SERVER_ID_OFFSET, EventType,
)
from libs.binlog.envelope import Header
from libs.binlog.wire import U32

# Where event_size sits, as (offset, length): for a reader that slices the bytes itself, such as
# the Spark decode stage's column expression (pipelines/stages/decode.py).
EVENT_SIZE_FIELD = (EVENT_LEN_OFFSET, 4)
_MARIA_GTID_FLAGS = COMMON_HEADER_LEN + 12  # MariaDB Gtid body: seq_no u64, domain_id u32, flags2 u8


def header_fields(frame: bytes) -> Header:
    """The header's six fields, as the codec's own Header (libs/binlog/envelope.py)."""
    return Header(*COMMON_HEADER.unpack_from(frame, 0))


def event_type(frame: bytes) -> int:
    return frame[EVENT_TYPE_OFFSET]


def event_size(buffer: bytes, at: int = 0) -> int:
    """event_size of the event whose header starts at `at` of `buffer` (a file being framed)."""
    return U32.unpack_from(buffer, at + EVENT_LEN_OFFSET)[0]


def server_id(frame: bytes) -> int:
    return U32.unpack_from(frame, SERVER_ID_OFFSET)[0]


def is_standalone_maria_gtid(frame: bytes) -> bool:
    """A MariaDB Gtid event with FL_STANDALONE: it opens no transaction (WL#4162 flavour)."""
    return (frame[EVENT_TYPE_OFFSET] == EventType.MARIA_GTID
            and bool(frame[_MARIA_GTID_FLAGS] & MARIA_FL_STANDALONE))

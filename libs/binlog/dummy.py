"""MariaDB dummy events (MariaDB task "Replace with dummy events an event that is not understood by a
slave", seed 003; sql/log_event.cc Query_log_event::dummy_event / begin_event,
sql/sql_repl.cc send_event_to_slave).

Decoding side: recognise a Query whose text is the dummy comment (padded with spaces, or cut
down to as little as "#": real servers send "# Du" and "# Dum") and a User_var named a prefix of
`!dummyvar` with a NULL value. Encoding side: build, from an event's exact bytes, the same-size
replacement a MariaDB master sends to a replica announcing a low @mariadb_slave_capability.
"""
from __future__ import annotations

import re
import struct
import zlib
from dataclasses import dataclass

from libs.binlog.constants import (BINLOG_SEND_ANNOTATE_ROWS_EVENT, COMMON_HEADER_LEN,
                        LOG_EVENT_SUPPRESS_USE_F, LOG_EVENT_THREAD_SPECIFIC_F, MARIA_FL_STANDALONE, EventType)
from libs.binlog.errors import MalformedError, UnsupportedError
from libs.binlog.events_mariadb import GTID_HEADER_LEN


# ---- records ----------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class Dummy:
    """MariaDB dummy event: a Query or User_var placeholder replacing an event a consumer with a
    low capability cannot handle (MariaDB task 'dummy events'). Never applied."""

    carrier: str  # "query" | "user_var"
    replaced_type: int | None  # from the comment text when it still holds it


@dataclass(frozen=True, slots=True)
class DummyEvent(Dummy):
    """Dummy plus the exact body bytes, for byte-exact re-encoding."""

    raw: bytes = b""

DUMMY_PREFIX = b"# Dummy event replacing event type "
DUMMY_SUFFIX = b" that slave cannot handle."
DUMMY_VAR = b"!dummyvar"
QUERY_HEADER_LEN = 13  # Query post-header (thread_id, exec_time, db_len, error_code, status len)
MIN_USER_VAR_EVENT = COMMON_HEADER_LEN + 4 + 1 + 1  # 25: name_len, "!", is_null
MIN_QUERY_EVENT = COMMON_HEADER_LEN + QUERY_HEADER_LEN + 1 + 1  # 34: empty db NUL + "#"
Q_DUMMY = 255  # MariaDB status-var code used to pad a BEGIN replacing a GTID with commit id
_DIGITS = re.compile(rb"\d{1,3}")

# @mariadb_slave_capability values (MariaDB log_event.h MARIA_SLAVE_CAPABILITY_*)
CAP_UNKNOWN, CAP_ANNOTATE, CAP_TOLERATE_HOLES, CAP_BINLOG_CHECKPOINT, CAP_GTID = 0, 1, 2, 3, 4


def dummy_text_type(text: bytes) -> tuple[bool, int | None]:
    """(is the dummy comment, replaced type if the text still holds all its digits)."""
    if len(text) <= len(DUMMY_PREFIX):
        return (bool(text) and DUMMY_PREFIX.startswith(text)), None
    if not text.startswith(DUMMY_PREFIX):
        return False, None
    m = _DIGITS.match(text, len(DUMMY_PREFIX))
    if not m:
        return False, None
    full = DUMMY_PREFIX + m[0] + DUMMY_SUFFIX
    if len(text) <= len(full):
        ok = full.startswith(text)
    else:
        ok = text.startswith(full) and not text[len(full):].strip(b" ")
    # the number is only complete when the character after it survived the cut ("type 16" may
    # be a truncated "type 160")
    complete = len(text) > m.end()
    return ok, (int(m[0]) if ok and complete else None)


def query_dummy(header, thread_id, exec_time, db, error_code, status_vars, text, body):
    """A DummyEvent when this Query is a dummy placeholder, else None. Texts shorter than
    "# Du" are only taken as dummies with the header flag the server sets (0x08)."""
    if thread_id or exec_time or db or error_code or status_vars:
        return None
    ok, replaced = dummy_text_type(text)
    if not ok or (len(text) < 4 and not header.flags & LOG_EVENT_SUPPRESS_USE_F):
        return None
    return DummyEvent("query", replaced, raw=bytes(body))


def user_var_dummy(name: bytes, is_null: bool, body) -> DummyEvent | None:
    if is_null and name and DUMMY_VAR.startswith(name):
        return DummyEvent("user_var", None, raw=bytes(body))
    return None


# ---- encoder: what a MariaDB master sends instead ---------------------------------------------

def _finish(frame: bytearray, checksum: bool) -> bytes:
    if checksum:
        struct.pack_into("<I", frame, len(frame) - 4, zlib.crc32(memoryview(frame)[:-4]))
    return bytes(frame)


def _rewrite_header(frame: bytes, new_type: int) -> bytearray:
    out = bytearray(frame)
    flags = struct.unpack_from("<H", out, 17)[0]
    flags = (flags & ~LOG_EVENT_THREAD_SPECIFIC_F) | LOG_EVENT_SUPPRESS_USE_F
    struct.pack_into("<H", out, 17, flags)
    out[4] = new_type
    return out


def make_dummy(frame: bytes, *, checksum: bool) -> bytes:
    """Query_log_event::dummy_event: the same-size placeholder for `frame` (exact bytes,
    with its 4-byte CRC when `checksum`). Raises UnsupportedError below 25 bytes of data."""
    data_len = len(frame) - (4 if checksum else 0)
    if data_len < MIN_USER_VAR_EVENT:
        raise UnsupportedError(f"event of {data_len} bytes too short for a dummy event",
                               type_code=frame[4] if len(frame) > 4 else None, raw=bytes(frame))
    old_type = frame[4]
    out = _rewrite_header(frame, EventType.QUERY)
    h = COMMON_HEADER_LEN
    if data_len < MIN_QUERY_EVENT:
        name_len = data_len - (MIN_USER_VAR_EVENT - 1)
        out[4] = EventType.USER_VAR
        struct.pack_into("<I", out, h, name_len)
        out[h + 4:h + 4 + name_len] = DUMMY_VAR[:name_len]
        out[h + 4 + name_len] = 1  # is_null
    else:
        out[h:h + QUERY_HEADER_LEN + 1] = bytes(QUERY_HEADER_LEN + 1)  # zero post-header, db NUL
        text = DUMMY_PREFIX + str(old_type).encode() + DUMMY_SUFFIX
        comment_len = data_len - (MIN_QUERY_EVENT - 1)
        text = text[:comment_len].ljust(comment_len, b" ")
        start = h + QUERY_HEADER_LEN + 1
        out[start:start + comment_len] = text
    return _finish(out, checksum)


def make_begin(frame: bytes, *, checksum: bool) -> bytes:
    """Query_log_event::begin_event: a transactional MariaDB GTID becomes a same-size BEGIN."""
    data_len = len(frame) - (4 if checksum else 0)
    if data_len not in (COMMON_HEADER_LEN + GTID_HEADER_LEN, COMMON_HEADER_LEN + GTID_HEADER_LEN + 2):
        raise MalformedError("Failed to replace GTID event with backwards-compatible event: "
                             "corrupt event.", type_code=frame[4], raw=bytes(frame))
    out = _rewrite_header(frame, EventType.QUERY)
    h = COMMON_HEADER_LEN
    out[h:h + 11] = bytes(11)  # thread_id, exec_time, db_len, error_code
    if data_len == COMMON_HEADER_LEN + GTID_HEADER_LEN:
        tail = b"\0\0" + b"\0"  # no status vars, db NUL
    else:
        tail = b"\x02\0" + bytes((Q_DUMMY, 0)) + b"\0"  # 2 status bytes of Q_DUMMY, db NUL
    body = tail + b"BEGIN"
    out[h + 11:h + 11 + len(body)] = body
    return _finish(out, checksum)


def substitute_for_replica(frame: bytes, capability: int, *, dump_flags: int = 0,
                           checksum: bool = True) -> bytes | None:
    """What a MariaDB master sends a replica with @mariadb_slave_capability = `capability` in
    place of `frame` (sql_repl.cc send_event_to_slave): the frame itself, a same-size dummy or
    BEGIN, or None when the event is omitted (capability >= TOLERATE_HOLES)."""
    etype = frame[4]

    def cannot_send() -> bytes | None:
        return None if capability >= CAP_TOLERATE_HOLES else make_dummy(frame, checksum=checksum)

    if etype == EventType.ANNOTATE_ROWS and not dump_flags & BINLOG_SEND_ANNOTATE_ROWS_EVENT:
        if capability >= CAP_TOLERATE_HOLES:
            return None
        if capability < CAP_ANNOTATE:
            return make_dummy(frame, checksum=checksum)
    if capability < CAP_GTID:
        if etype == EventType.MARIA_GTID:
            if len(frame) <= COMMON_HEADER_LEN + 12:
                raise MalformedError("Failed to replace GTID event with backwards-compatible "
                                     "event: corrupt event.", type_code=etype, raw=bytes(frame))
            if frame[COMMON_HEADER_LEN + 12] & MARIA_FL_STANDALONE:
                return cannot_send()
            return make_begin(frame, checksum=checksum)
        if etype == EventType.GTID_LIST:
            return cannot_send()
    if capability < CAP_BINLOG_CHECKPOINT and etype == EventType.BINLOG_CHECKPOINT:
        return cannot_send()
    return bytes(frame)

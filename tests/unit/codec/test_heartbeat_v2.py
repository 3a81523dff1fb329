"""MySQL 8's Heartbeat_log_event_v2 (type 41), body built by hand from the layout of MySQL's
codecs/binary.cpp (Heartbeat::encode writes these three items; Heartbeat::decode reads them):

    net_store_length(1) net_store_length(len(name)) name          OTW_HB_LOG_FILENAME_FIELD
    net_store_length(2) net_store_length(size(pos)) net_store_length(pos)   OTW_HB_LOG_POSITION_FIELD
    net_store_length(0)                                            OTW_HB_HEADER_END_MARK

net_store_length: < 251 one byte; 0xfc + 2 bytes; 0xfd + 3; 0xfe + 8 (little-endian).
The shipper reads the position a server's heartbeat names from it (libs/contracts/heartbeat.py)."""
import struct
import zlib

import pytest

from libs.binlog import decode_event
from libs.binlog.errors import MalformedError
from libs.binlog.events_control import Heartbeat, decode_heartbeat_v2, encode_heartbeat_v2
from libs.contracts.heartbeat import is_caught_up, server_position
from tests.unit.codec_fuzz.hostile import MYSQL8_FILE, context_after_fde

NAME = b"binlog.000041"


def frame(body: bytes, checksum: bool = True) -> bytes:
    """A heartbeat as the dump thread sends it: timestamp 0, log_pos 0 (the body has the position)."""
    size = 19 + len(body) + (4 if checksum else 0)
    head = struct.pack("<IBIIIH", 0, 41, 1, size, 0, 0) + body
    return head + struct.pack("<I", zlib.crc32(head)) if checksum else head


def body(name=NAME, pos_field=b"\x02\x01\x9c", end=b"\x00") -> bytes:
    return b"\x01" + bytes([len(name)]) + name + pos_field + end


def test_the_servers_three_items_give_name_and_position():
    raw = body(pos_field=b"\x02\x01\x9c")  # position 156: one byte
    beat = decode_heartbeat_v2(None, raw, None)
    assert (beat.log_file, beat.log_position) == ("binlog.000041", 156)
    assert beat.fields == ((1, NAME), (2, b"\x9c")) and beat.end_mark
    assert encode_heartbeat_v2(beat, None, None) == raw


@pytest.mark.parametrize("packed, position", [
    (b"\xfc\xfb\x00", 251),                                  # first two-byte value
    (b"\xfd\x00\x00\x01", 1 << 16),
    (b"\xfe" + (5 << 32 | 1234).to_bytes(8, "little"), 5 << 32 | 1234),  # past 4 GiB: why v2 exists
])
def test_wider_positions_are_packed_integers_of_the_fields_length(packed, position):
    raw = body(pos_field=b"\x02" + bytes([len(packed)]) + packed)
    assert decode_heartbeat_v2(None, raw, None).log_position == position


def test_a_field_type_it_does_not_know_is_skipped_by_its_length():
    raw = b"\x07\x03abc" + body()
    beat = decode_heartbeat_v2(None, raw, None)
    assert (beat.log_file, beat.log_position, beat.fields[0]) == ("binlog.000041", 156, (7, b"abc"))


def test_a_body_without_end_mark_is_read_to_its_end_and_written_back_the_same():
    raw = body(end=b"")  # codecs/binary.cpp decodes `while (reader.available_to_read())`
    beat = decode_heartbeat_v2(None, raw, None)
    assert not beat.end_mark and encode_heartbeat_v2(beat, None, None) == raw


@pytest.mark.parametrize("raw, message", [
    (b"", "without a log file name"),
    (b"\x02\x01\x9c\x00", "without a log file name"),
    (b"\x01\x20binlog\x00", "Heartbeat_v2 field 1: need 32 bytes"),            # name longer than the body
    (body(pos_field=b"\x02\x03\x9c"), "Heartbeat_v2 field 2: need 3 bytes"),     # position cut short
    (body(pos_field=b"\x02\x03\x9c\x00\x00"), "log position field of 3 bytes not fully consumed"),
    (body(pos_field=b"\x02\x01\xfe"), "Heartbeat_v2 log position: need 8 bytes"),  # prefix alone
    (body(pos_field=b"\x02\x01\xff"), "invalid packed-integer prefix 0xff"),
    (body(end=b"\x00\x01"), "after its end-of-fields mark not fully consumed: 1 bytes left"),
    (b"\x01", "Heartbeat_v2 field length: need 1 bytes"),
])
def test_a_malformed_body_is_a_clear_error(raw, message):
    with pytest.raises(MalformedError, match=message.replace("(", r"\(")):
        decode_heartbeat_v2(None, raw, None)


def test_the_codec_registry_decodes_a_whole_frame_past_its_crc32():
    ctx, _ = context_after_fde(MYSQL8_FILE)  # a MySQL 8.0 stream with CRC32
    event = decode_event(frame(body()), 0, ctx)
    assert event.body == Heartbeat("binlog.000041", 156, ((1, NAME), (2, b"\x9c")), True)


@pytest.mark.parametrize("checksum", [True, False])
def test_the_shipper_reads_the_position_from_the_body_not_the_header(checksum):
    beat = frame(body(pos_field=b"\x02\x03\xfc\x10\x27"), checksum)  # 10000; header log_pos is 0
    assert server_position(beat) == ("binlog.000041", 10000)
    assert is_caught_up(beat, "binlog.000041", 10000)
    assert not is_caught_up(beat, "binlog.000041", 0)


def test_a_heartbeat_v2_without_position_says_so():
    with pytest.raises(MalformedError, match="'binlog.000041' without a log position field"):
        server_position(frame(body(pos_field=b"")))

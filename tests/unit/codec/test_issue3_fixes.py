"""Issue #3 codec fixes: truncated vs malformed inside a complete frame, the MySQL 5.1 pre-GA
Table_map, an annotated MySQL Rows_query (29) vector, MariaDB Query status variable 131, and
MariaDB 5.3 temporal columns configured through DecodeContext.old_temporal_fsp."""
from __future__ import annotations

import struct
import zlib

import pytest

from libs.binlog import (DecodeContext, MalformedError, RowsQuery, TruncatedError, decode_event,
                         encode_event, iter_events)
from libs.binlog.events_statement import parse_status_vars

from .corpus import MARIADB

MYSQL = MARIADB.parent / "mysql"
PRE_GA = MYSQL / "mysql-5.7.22" / "suite" / "binlog" / "std_data" / "ver_5_1-wl2325_r.001"
MYSQL8 = MYSQL / "mysql-8.0.43" / "std_data" / "binlog_recovery" / "duplicate_xid.000001"
TEMPORAL_OLD = MARIADB / "temporal_old" / "mdb-bin.000006"
# From temporal_old/workload.sql CREATE TABLEs (0-based ordinals -> fsp).
TEMPORAL_OLD_FSP = {
    ("temporal_old", "t_temporal_old"): {2: 3, 3: 6, 5: 3, 6: 6, 8: 3, 9: 6},
    ("temporal_old", "t_mixed_fmt_old"): {1: 6, 2: 6, 3: 6},
}


def _ctx(path):
    """A context holding the FDE of a corpus file (its first event)."""
    ctx = DecodeContext()
    next(iter(iter_events(path.read_bytes(), ctx=ctx)))
    return ctx


def _frame(type_code, body, crc=True):
    size = 19 + len(body) + (4 if crc else 0)
    f = struct.pack("<IBIIIH", 1700000000, type_code, 1, size, 1000, 0) + body
    return f + struct.pack("<I", zlib.crc32(f)) if crc else f


# ---- truncated (stream ended) vs malformed (impossible bytes inside a complete frame) ----------

TABLE_MAP_BODY = (
    bytes.fromhex("2100000000000100")  # table_id u48 = 33, flags u16 = 1
    + b"\x04test\x00" + b"\x02t1\x00"  # db_len, db, NUL, table_len, table, NUL
    + b"\x02" + b"\x03\x0f"  # column_count 2: INT, VARCHAR
    + b"\x02" + b"\x1e\x00"  # metadata_len 2: VARCHAR max length 30 (u16 LE)
    + b"\x02"  # null bitmap: column 2 nullable
)


def test_table_map_vector_decodes_and_roundtrips():
    ctx = _ctx(MYSQL8)
    ev = decode_event(_frame(19, TABLE_MAP_BODY), 4, ctx)
    tm = ev.body
    assert (tm.table_id, tm.database, tm.table, tm.column_types, tm.column_metas, tm.nullable) == (
        33, "test", "t1", (3, 15), (0, 30), (False, True))
    assert encode_event(ev, ctx) == _frame(19, TABLE_MAP_BODY)


@pytest.mark.parametrize("cut", [3, 12, 17, 20])  # post-header, table name, column types, metadata
def test_short_table_map_body_is_malformed_not_truncated(cut):
    # The frame is complete (event_size matches, CRC good); only the body is too short for
    # its own fields: the bytes are impossible, the stream did not end.
    with pytest.raises(MalformedError) as info:
        decode_event(_frame(19, TABLE_MAP_BODY[:cut]), 4, _ctx(MYSQL8))
    assert not isinstance(info.value, TruncatedError)
    assert (info.value.pos, info.value.type_code) == (4, 19)


def test_rows_image_longer_than_its_body_is_malformed():
    ctx = _ctx(MYSQL8)
    decode_event(_frame(19, TABLE_MAP_BODY), 4, ctx)
    # Write_rows v1: table_id 33, flags STMT_END_F, width 2, present 0b11, then one image:
    # null bitmap 0, INT 7, VARCHAR length 5 but only 2 bytes follow
    body = bytes.fromhex("210000000000" "0100" "02" "03" "00" "07000000" "05") + b"ab"
    with pytest.raises(MalformedError) as info:
        decode_event(_frame(23, body), 60, ctx)
    assert not isinstance(info.value, TruncatedError) and info.value.pos == 60


def test_stream_cut_inside_a_frame_is_truncated():
    data = TEMPORAL_OLD.read_bytes()[:280]  # the 2nd event (Gtid_list at 256..299) is cut
    with pytest.raises(TruncatedError) as info:
        list(iter_events(data))
    assert info.value.pos == 256


# ---- MySQL 5.1 pre-GA Table_map (6-byte post-header per the FDE, no metadata block) ----------

def test_pre_ga_table_map_decodes_and_the_file_roundtrips():
    data = PRE_GA.read_bytes()
    ctx = DecodeContext()
    events = list(iter_events(data, ctx=ctx))
    maps = [e for e in events if e.type_code == 19]
    assert [e.pos for e in maps][:2] == [428, 511]
    tm = maps[0].body
    assert ctx.post_header_len(19, 8) == 6  # the FDE's table, permuted to real type codes
    assert (tm.table_id, tm.database, tm.table, tm.column_types) == (0, "test", "t1", (3, 254))
    assert tm.metadata_block is False and tm.column_metas == (0, 0)
    ctx = DecodeContext()
    for ev in iter_events(data, ctx=ctx):
        assert encode_event(ev, ctx) == data[ev.pos:ev.end_pos]
    assert events[-1].end_pos == len(data)


# ---- MySQL Rows_query (29): no MySQL-written one in the corpus, so an annotated vector --------

def test_rows_query_vector_per_rows_event_h():
    # rows_event.h Rows_query_event: body = 1 length byte (ignored: it cannot describe texts
    # over 255 bytes, MySQL reads the text up to the end of the body), then the query text.
    text = b"insert into t1(a,b) values(1,2)"  # the WL#4033 seed's example statement
    ctx = _ctx(MYSQL8)
    for length_byte in (len(text), 0xFF, 0):  # the true length, then values that disagree
        body = bytes((length_byte,)) + text
        frame = _frame(29, body)
        ev = decode_event(frame, 1183, ctx)
        assert ev.body == RowsQuery(text.decode(), body)
        assert ev.end_pos == 1183 + 19 + len(body) + 4
        assert encode_event(ev, ctx) == frame
    long_text = b"insert into t1 values " + b"(1)," * 100  # > 255 bytes: length byte wraps
    body = bytes((len(long_text) & 0xFF,)) + long_text
    ev = decode_event(_frame(29, body), 4, ctx)
    assert ev.body.text == long_text.decode()
    # re-encoding a record built from text alone (no raw bytes) gives the same layout
    fresh = type(ev)(ev.header, ev.pos, RowsQuery(text.decode()), ev.checksum_ok)
    assert encode_event(fresh, ctx)[19:-4] == bytes((len(text),)) + text


def test_empty_rows_query_body_is_malformed():
    with pytest.raises(MalformedError):
        decode_event(_frame(29, b""), 4, _ctx(MYSQL8))


# ---- MariaDB 11.x Query status var 131 (Q_CHARACTER_SET_COLLATIONS) ---------------------------

def _query_body(status: bytes, db=b"test", query=b"CREATE TABLE t (a VARCHAR(10))"):
    # post-header: thread_id u32, exec_time u32, db_len u8, error_code u16, status_vars_len u16
    post = struct.pack("<IIBHH", 5, 0, len(db), 0, len(status))
    return post + status + db + b"\0" + query


def test_status_var_131_character_set_collations():
    # MariaDB 11.5+ writes 131 before Q_CHARSET (4). Layout (charset_collations.h to_binary):
    # count u8, then per entry: charset default collation id u16, mapped collation id u16.
    status = (b"\x83" + b"\x02" + struct.pack("<HH", 45, 2305) + struct.pack("<HH", 33, 576)
              + b"\x04" + struct.pack("<HHH", 45, 45, 8))  # Q_CHARSET client/connection/server
    assert parse_status_vars(status) == {
        "character_set_collations": ((45, 2305), (33, 576)), "charset": (45, 45, 8)}
    ctx = _ctx(TEMPORAL_OLD)
    body = _query_body(status)
    ev = decode_event(_frame(2, body), 4, ctx)
    assert ev.body.query == b"CREATE TABLE t (a VARCHAR(10))"
    assert ev.body.status["character_set_collations"] == ((45, 2305), (33, 576))
    assert encode_event(ev, ctx) == _frame(2, body)


def test_unknown_status_code_keeps_the_query_text():
    status = b"\xc8\x01\x02\x03" + b"\x04" + struct.pack("<HHH", 45, 45, 8)  # code 200: unknown
    ev = decode_event(_frame(2, _query_body(status, query=b"SELECT 1")), 4, _ctx(TEMPORAL_OLD))
    assert ev.body.query == b"SELECT 1" and ev.body.status == {"unknown_code": 200}


# ---- MariaDB 5.3 temporal columns: fsp from configuration ---------------------------------------

def test_old_temporal_without_configuration_names_the_columns():
    with pytest.raises(MalformedError) as info:
        list(iter_events(TEMPORAL_OLD.read_bytes(), file="mdb-bin.000006"))
    err = info.value
    assert (err.pos, err.type_code, err.file) == (1688, 23, "mdb-bin.000006")
    assert "temporal_old.t_temporal_old" in err.message
    assert "@3 (TIME, ordinal 2)" in err.message and "old_temporal_fsp" in err.message


def test_old_temporal_file_decodes_fully_when_configured():
    data = TEMPORAL_OLD.read_bytes()
    ctx = DecodeContext(old_temporal_fsp=TEMPORAL_OLD_FSP)
    events = list(iter_events(data, ctx=ctx))
    assert events[-1].end_pos == len(data) and len(events) == 42  # README: 42 events
    rows = [e.body for e in events if e.type_code in (23, 24, 25)]
    assert sorted(r.kind for r in rows) == ["delete", "insert", "insert", "insert", "update"]
    first = rows[0].rows[0].after  # t_temporal_old, ordinal 2 is TIME(3)
    assert first[2].count(".") == 1 and len(first[2].split(".")[1]) == 3  # TIME(3)
    ctx = DecodeContext(old_temporal_fsp=TEMPORAL_OLD_FSP)
    for ev in iter_events(data, ctx=ctx):
        assert encode_event(ev, ctx) == data[ev.pos:ev.end_pos]

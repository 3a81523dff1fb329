"""libs/binlog/header.py, the one reader of the common header outside the codec, against the
codec's own decode of every event of the real MariaDB and MySQL corpus files."""
from __future__ import annotations

import dataclasses

import pytest

from libs.binlog import DecodeContext, decode_event, iter_frames
from libs.binlog.constants import EventType
from libs.binlog.events_control import wire_type
from libs.binlog.header import (
    EVENT_SIZE_FIELD, event_size, event_type, header_fields, is_standalone_maria_gtid, server_id,
)
from libs.binlog.wire import U32
from tests.unit.codec.corpus import BROKEN, MARIADB, MYSQL, binlog_files

FILES = [p for p in binlog_files(MARIADB) + binlog_files(MYSQL)[:40]
         if not any(p.as_posix().endswith(k) for k in BROKEN)]


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_every_field_is_what_the_codec_decodes(path):
    data = path.read_bytes()
    ctx, seen, permuted = DecodeContext(), 0, 0
    for pos, frame in iter_frames(data, file=path.name):
        try:
            event = decode_event(frame, pos, ctx, file=path.name)
        except Exception:  # an event the corpus holds that the codec refuses: its own tests say why
            continue
        header = event.header
        # the wire's type byte; the codec maps a 5.1 pre-GA server's permuted codes to real ones
        wire = wire_type(ctx.fde, header.type_code)
        assert header_fields(frame) == dataclasses.replace(header, type_code=wire)
        assert (event_type(frame), server_id(frame)) == (wire, header.server_id)
        permuted += wire != header.type_code
        assert event_size(frame) == header.event_size == len(frame)
        assert event_size(data, pos) == header.event_size  # from the header inside the file
        offset, length = EVENT_SIZE_FIELD
        assert U32.unpack(frame[offset:offset + length])[0] == header.event_size
        if header.type_code == EventType.MARIA_GTID:
            assert is_standalone_maria_gtid(frame) == event.body.standalone
        else:
            assert not is_standalone_maria_gtid(frame)
        seen += 1
    assert seen > 0
    assert permuted == 0 or path.name.startswith("ver_5_1")  # only those servers permute


def test_the_corpus_holds_standalone_and_transactional_maria_gtids():
    found = set()
    for path in binlog_files(MARIADB):
        for _, frame in iter_frames(path.read_bytes(), file=path.name):
            if event_type(frame) == EventType.MARIA_GTID:
                found.add(is_standalone_maria_gtid(frame))
    assert found == {True, False}

"""Bad input: stream started mid-transaction, broken boundaries, unknown events (both policies),
decode errors, duplicates, gaps, a file that starts while a transaction is open."""
import logging

import pytest

from libs.stream.assembler import (
    Assembler, AssemblerConfig, InMemorySpillStore, StreamGapError, UnknownEventPolicy,
)
from libs.binlog.errors import ChecksumError, UnknownEventError
from tests.unit.assembler.stream import place, summary
from tests.unit.boundary import events as e

TRX = [e.mysql_gtid(8), e.query("BEGIN"), e.table_map(), e.write_rows({0: 1}), e.xid()]


def assembler(**config):
    return Assembler("src1", InMemorySpillStore(), AssemblerConfig(**config))


def test_stream_started_mid_transaction_quarantines_up_to_first_boundary(caplog):
    a = assembler()
    with caplog.at_level(logging.WARNING, logger="libs.stream.assembler.assembler"):
        out = a.feed(place([e.table_map(), e.write_rows({0: 1}), e.xid()] + TRX))
    assert [(q.kind, q.binlog_pos, q.kafka_offset) for q in out.quarantined] == [
        ("boundary", 4, 0), ("boundary", 44, 1), ("boundary", 84, 2)]
    assert out.quarantined[0].reason.startswith("Unable to change boundary parser from Not Defined "
                                                "to Inside Transaction.")
    assert "source src1, file bin.000001, pos 4" in out.quarantined[0].reason
    assert ("Unable to change boundary parser from Not Defined to End Transaction. "
            "(source src1, file bin.000001, pos 84)") in caplog.text
    assert [t.gtid for t in out.transactions] == [f"{e.MYSQL_UUID}:8"]
    assert out.counters["invalid_transitions"] == 3 and out.counters["quarantined_frames"] == 3


def test_transaction_cut_by_a_new_gtid_is_quarantined_and_the_next_one_kept(caplog):
    broken = [e.mysql_gtid(7), e.query("BEGIN"), e.table_map(), e.write_rows({0: 9})]
    with caplog.at_level(logging.WARNING):
        out = assembler().feed(place(broken + TRX))
    assert [(q.kind, q.binlog_pos) for q in out.quarantined] == [
        ("boundary", 4), ("boundary", 44), ("boundary", 84), ("boundary", 124)]
    assert out.quarantined[0].raw[4] == 33  # the exact frame bytes: type byte of a GTID header
    assert "Unable to change boundary parser from Inside Transaction to Start Transaction." in caplog.text
    [trx] = out.transactions
    assert trx.gtid == f"{e.MYSQL_UUID}:8" and trx.start_pos == 164


def test_unknown_event_fails_by_default_naming_source_file_position_type():
    with pytest.raises(UnknownEventError) as raised:
        assembler().feed(place([e.query("BEGIN"), e.ev(99), e.xid()]))
    text = str(raised.value)
    assert "source src1" in text and "file bin.000001" in text and "pos 44" in text and "type 99" in text


def test_unknown_event_quarantined_by_policy_poisons_its_transaction():
    out = assembler(unknown_event_policy=UnknownEventPolicy.QUARANTINE).feed(
        place([e.query("BEGIN"), e.ev(99), e.table_map(), e.write_rows({0: 1}), e.xid()] + TRX, start=4))
    kinds = [(q.kind, q.binlog_pos) for q in out.quarantined]
    assert kinds == [("unknown_event", 44), ("bad_transaction", 4), ("bad_transaction", 84),
                     ("bad_transaction", 124), ("bad_transaction", 164)]
    assert [t.gtid for t in out.transactions] == [f"{e.MYSQL_UUID}:8"]
    assert out.counters["unknown_events"] == 1


def test_decode_error_row_is_quarantined_with_its_reason():
    bad = ChecksumError("CRC32 mismatch", type_code=30)
    out = assembler().feed(place([e.query("CREATE TABLE t (a INT)"), bad] + TRX))
    [q] = out.quarantined
    assert (q.kind, q.binlog_pos, q.type_code, q.kafka_offset) == ("checksum", 44, 30, 1)
    assert "source src1" in q.reason and "pos 44" in q.reason
    assert len(out.transactions) == 2 and out.counters["decode_errors"] == 1


def test_redelivered_frames_are_dropped_and_counted():
    inputs = place(TRX)
    clean = assembler().feed(inputs)
    out = assembler().feed(inputs[:3] + inputs[1:3] + inputs[3:] + inputs[:2])
    assert [summary(t) for t in out.transactions] == [summary(t) for t in clean.transactions]
    assert out.counters["duplicates_dropped"] == 4 and out.quarantined == []


def test_frames_of_an_earlier_file_are_duplicates():
    a = assembler()
    a.feed(place(TRX, file="bin.000002"))
    out = a.feed(place(TRX, file="bin.000001"))
    assert out.transactions == [] and out.counters["duplicates_dropped"] == 5


def test_gap_names_both_positions():
    inputs = place(TRX)
    with pytest.raises(StreamGapError) as raised:
        assembler().feed(inputs[:2] + inputs[3:])
    assert (raised.value.expected_pos, raised.value.got_pos) == (84, 124)
    assert "ended at 84" in str(raised.value) and "starts at 124" in str(raised.value)


def test_rotate_to_a_new_file_restarts_positions():
    out = assembler().feed(place(TRX + [e.rotate("bin.000002")]) + place([e.fde()] + TRX, file="bin.000002"))
    assert [t.file for t in out.transactions] == ["bin.000001", "bin.000002"]


def test_new_file_while_a_transaction_is_open_quarantines_it():
    a = assembler()
    out = a.feed(place(TRX[:4]) + place([e.fde("mariadb")] + [e.maria_gtid(3), e.table_map(),
                                                              e.write_rows({0: 1}), e.xid()],
                                        file="bin.000002"))
    assert [(q.binlog_file, q.binlog_pos) for q in out.quarantined] == [
        ("bin.000001", 4), ("bin.000001", 44), ("bin.000001", 84), ("bin.000001", 124)]
    assert "did not end before binlog file bin.000002" in out.quarantined[0].reason
    assert [t.gtid for t in out.transactions] == ["0-1-3"]
    assert a.state.flavour == "mariadb" and a.state.fde == place([e.fde("mariadb")], file="bin.000002")[0].raw


def test_incident_is_quarantined():
    out = assembler().feed(place([e.ev(26)]))
    assert [q.kind for q in out.quarantined] == ["incident"]


def test_a_move_to_another_server_restarts_positions_in_a_later_epoch():
    """cdc-ship --follow-gtid: the new server's files (EPOCH/NAME, libs/binlog/file_names.py)
    may have lower numbers than the old server's; they come after it all the same, and the
    transaction the move cut is quarantined as such (the new server sends it again whole)."""
    a = assembler()
    a.feed(place(TRX, file="bin.000007"))
    out = a.feed(place(TRX[:3], file="bin.000008") + place(
        [e.fde("mariadb"), e.maria_gtid(3), e.table_map(), e.write_rows({0: 1}), e.xid()],
        file="1/bin.000002"))
    assert [t.file for t in out.transactions] == ["1/bin.000002"]
    assert out.counters["duplicates_dropped"] == 0 and out.counters["cut_by_server_move"] == 1
    assert out.counters["invalid_transitions"] == 0
    assert {q.binlog_file for q in out.quarantined} == {"bin.000008"}
    assert all("moved to another server's binlog at 1/bin.000002" in q.reason for q in out.quarantined)

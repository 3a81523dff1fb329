"""Rebuilding files from records: byte for byte, and gaps/duplicates are errors."""
import pytest

from libs.source.errors import ShipError
from libs.shipper.rebuild import rebuild
from libs.contracts.topic import KafkaRecord

from .frames import MISC, ROW_FULL, frames_of


def records(path, frames=None):
    return [KafkaRecord("s", path.name, p, f) for p, f in (frames or frames_of(path))]


def test_rebuild_two_files_byte_identical():
    files = rebuild(records(ROW_FULL) + records(MISC))
    assert list(files) == [ROW_FULL.name, MISC.name]
    assert files[ROW_FULL.name].content() == ROW_FULL.read_bytes()
    assert files[MISC.name].content() == MISC.read_bytes()


def test_duplicate_record_is_an_error():
    recs = records(ROW_FULL)
    with pytest.raises(ShipError, match=f"duplicate.*file {ROW_FULL.name}, pos {recs[5].binlog_pos}"):
        rebuild(recs[:6] + recs[5:])


def test_gap_is_an_error():
    recs = records(ROW_FULL)
    with pytest.raises(ShipError, match=f"gap: expected an event at {recs[5].binlog_pos}"):
        rebuild(recs[:5] + recs[6:])


def test_file_shipped_from_the_middle_cannot_be_written_whole():
    files = rebuild(records(ROW_FULL)[3:])
    with pytest.raises(ShipError, match="shipped from position"):
        files[ROW_FULL.name].content()


def test_snapshot_records_between_events_are_skipped():
    from libs.contracts.topic import TopicKind
    from libs.snapshot.record import ROWS, SnapshotRecord
    recs = records(ROW_FULL)
    at = recs[5].binlog_pos
    snap = KafkaRecord("s", ROW_FULL.name, at, SnapshotRecord(ROWS, "r", ROW_FULL.name, at, 1, 0).encode(),
                       TopicKind.SNAPSHOT)
    files = rebuild(recs[:5] + [snap] + recs[5:])
    assert files[ROW_FULL.name].content() == ROW_FULL.read_bytes()

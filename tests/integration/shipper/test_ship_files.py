"""cdc-ship --from-file against the real broker: rebuild from the topic is byte-identical."""
import shutil
import time

import pytest

from libs.binlog import iter_frames
from libs.shipper.kafka_sink import last_record
from libs.shipper.rebuild import read_records, rebuild_topic
from pipelines.ship import main

from .helpers import start_shipper, stop_shipper, wait_shipped
from libs.runtime.paths import CORPUS_DIR

pytestmark = pytest.mark.integration

CORPUS = str(CORPUS_DIR / "mariadb")
ROW_FULL = f"{CORPUS}/row_full/mdb-bin.000001"
MISC = f"{CORPUS}/misc/mdb-bin.000012"
ROW_MINIMAL = f"{CORPUS}/row_minimal/mdb-bin.000002"


def ship(kafka_broker, topic, *paths, source="src-a"):
    return main(["--from-file", *map(str, paths), "--bootstrap", kafka_broker.bootstrap,
                 "--topic", topic, "--source", source])


def test_corpus_files_round_trip_byte_identical(kafka_broker, topic):
    assert ship(kafka_broker, topic, ROW_FULL, MISC) == 0
    files = rebuild_topic(kafka_broker.bootstrap, topic, "src-a")
    assert list(files) == ["mdb-bin.000001", "mdb-bin.000012"]
    assert files["mdb-bin.000001"].content() == open(ROW_FULL, "rb").read()
    assert files["mdb-bin.000012"].content() == open(MISC, "rb").read()
    # one record per event, each file's Format_description first at position 4
    records = list(read_records(kafka_broker.bootstrap, topic, "src-a"))
    n_events = sum(1 for _ in iter_frames(open(ROW_FULL, "rb").read())) + \
        sum(1 for _ in iter_frames(open(MISC, "rb").read()))
    assert len(records) == n_events == 403 + 244
    assert [(r.binlog_file, r.event_type) for r in records if r.binlog_pos == 4] == [
        ("mdb-bin.000001", 15), ("mdb-bin.000012", 15)]


def test_second_run_resumes_from_topic_without_duplicates(kafka_broker, topic):
    assert ship(kafka_broker, topic, ROW_FULL) == 0
    assert ship(kafka_broker, topic, ROW_FULL, ROW_MINIMAL) == 0  # only the new file goes out
    files = rebuild_topic(kafka_broker.bootstrap, topic, "src-a")  # raises on any duplicate
    assert files["mdb-bin.000001"].content() == open(ROW_FULL, "rb").read()
    assert files["mdb-bin.000002"].content() == open(ROW_MINIMAL, "rb").read()


def test_directory_with_index_and_two_sources_in_one_topic(kafka_broker, topic, tmp_path):
    for src in (ROW_FULL, ROW_MINIMAL):
        shutil.copy(src, tmp_path)
    (tmp_path / "mdb-bin.index").write_text("./mdb-bin.000001\n./mdb-bin.000002\n")
    assert ship(kafka_broker, topic, tmp_path, source="dir-src") == 0
    assert ship(kafka_broker, topic, MISC, source="other") == 0
    files = rebuild_topic(kafka_broker.bootstrap, topic, "dir-src")
    assert {n: f.content() for n, f in files.items()} == {
        "mdb-bin.000001": open(ROW_FULL, "rb").read(),
        "mdb-bin.000002": open(ROW_MINIMAL, "rb").read()}
    assert last_record(kafka_broker.bootstrap, topic, "dir-src").binlog_file == "mdb-bin.000002"


def test_follow_ships_a_growing_file_with_partial_events_then_sigterm(kafka_broker, topic,
                                                                       tmp_path):
    data = open(ROW_FULL, "rb").read()
    live = tmp_path / "mdb-bin.000001"
    live.write_bytes(data[:1000])  # cuts an event in the middle
    (tmp_path / "mdb-bin.index").write_text("./mdb-bin.000001\n")
    proc = start_shipper("--from-file", str(tmp_path), "--follow", "--bootstrap",
                         kafka_broker.bootstrap, "--topic", topic, "--source", "live")
    try:
        with open(live, "ab") as fh:
            for start in range(1000, len(data), 150_001):  # odd chunk: partial events each time
                fh.write(data[start:start + 150_001])
                fh.flush()
                time.sleep(0.1)
        wait_shipped(kafka_broker.bootstrap, topic, "live", "mdb-bin.000001", len(data), proc=proc)
    finally:
        rc, err = stop_shipper(proc)
    assert rc == 0, err
    assert "events/s" in err and "lag" in err
    assert rebuild_topic(kafka_broker.bootstrap, topic, "live")["mdb-bin.000001"].content() == data


def test_missing_file_is_a_clear_error(kafka_broker, topic, capsys):
    assert ship(kafka_broker, topic, "/nonexistent/mdb-bin.000001") == 1
    assert "binlog file(s) not found: /nonexistent/mdb-bin.000001" in capsys.readouterr().err


@pytest.mark.parametrize("damage, error", [
    (lambda data, pos: data[:pos + 7], "file ends inside an event"),        # truncated
    (lambda data, pos: data[:pos] + bytes([data[pos] ^ 1]) + data[pos + 1:], "CRC32 mismatch"),
])
def test_a_damaged_file_exits_1_with_one_line_and_the_topic_stops_before_it(
        kafka_broker, topic, tmp_path, capsys, damage, error):
    data = open(ROW_FULL, "rb").read()
    frames = list(iter_frames(data))
    bad_pos = frames[50][0]
    path = tmp_path / "mdb-bin.000001"
    path.write_bytes(damage(data, bad_pos))
    assert ship(kafka_broker, topic, path, source="damaged") == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert error in err and f"file mdb-bin.000001, pos {bad_pos}" in err
    last = last_record(kafka_broker.bootstrap, topic, "damaged")
    assert (last.binlog_file, last.end_pos) == ("mdb-bin.000001", bad_pos)
    # fixing the file and running again resumes exactly there
    path.write_bytes(data)
    assert ship(kafka_broker, topic, path, source="damaged") == 0
    assert rebuild_topic(kafka_broker.bootstrap, topic, "damaged")["mdb-bin.000001"].content() == data

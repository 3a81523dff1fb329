"""cdc-ship --server against a private MariaDB (libs/local/mariadb_server.py) and the real
broker: the topic rebuilds the server's binlog files byte for byte, also across a SIGKILL."""
import threading
import time

import pytest

from libs.binlog import DecodeContext, Dummy, decode_event, iter_frames, substitute_for_replica
from libs.shipper.kafka_sink import last_record
from libs.shipper.rebuild import read_records, rebuild_topic
from pipelines.ship import main

from .helpers import password_file, start_shipper, stop_shipper, wait_shipped
from .workload import row_image_round, schema

pytestmark = pytest.mark.integration


def server_args(db, kafka_broker, topic, source, *extra):
    return ["--server", f"{db.host}:{db.port}", "--user", db.user, "--password-file", password_file(db),
            "--bootstrap", kafka_broker.bootstrap, "--topic", topic, "--source", source, *extra]


def closed_files(db, first: str, current: str) -> list[str]:
    """Binlog files from `first` up to (not including) the active `current`."""
    names = [row[0] for row in db.query("SHOW BINARY LOGS")]
    return names[names.index(first):names.index(current)]


def assert_rebuilt_identical(db, kafka_broker, topic, source, files):
    rebuilt = rebuild_topic(kafka_broker.bootstrap, topic, source)  # raises on gap / duplicate
    for name in files:
        assert rebuilt[name].content() == db.binlog_path(name).read_bytes(), name
    return rebuilt


def test_full_and_minimal_workload_rebuilds_byte_identical(mariadb, kafka_broker, topic):
    start = mariadb.flush_binlogs()
    proc = start_shipper(*server_args(mariadb, kafka_broker, topic, "mdb1", "--start-file", start))
    try:
        mariadb.sql(schema("ship_a") + row_image_round("ship_a", "FULL", 1))
        mariadb.flush_binlogs()
        mariadb.sql(row_image_round("ship_a", "MINIMAL", 10))
        current = mariadb.flush_binlogs()
        files = closed_files(mariadb, start, current)
        last = files[-1]
        wait_shipped(kafka_broker.bootstrap, topic, "mdb1", last,
                     mariadb.binlog_path(last).stat().st_size, proc=proc)
    finally:
        rc, err = stop_shipper(proc)  # SIGTERM
    assert rc == 0, err
    assert len(files) == 2
    rebuilt = assert_rebuilt_identical(mariadb, kafka_broker, topic, "mdb1", files)
    records = list(read_records(kafka_broker.bootstrap, topic, "mdb1"))
    types = {r.event_type for r in records}
    assert {15, 160, 162, 19, 23, 24, 25, 16, 4} <= types  # FDE, Annotate, GTID, rows, Xid, Rotate
    # the active file: identical except the FDE's BINLOG_IN_USE flag, which the master clears
    # in what it sends (sql_repl.cc send_format_descriptor_event) and on disk at close
    if current in rebuilt:
        sent = rebuilt[current].content()
        disk = bytearray(mariadb.binlog_path(current).read_bytes()[:len(sent)])
        assert disk[4 + 17] & 1 == 1
        disk[4 + 17] &= 0xFE
        assert sent == bytes(disk)


def _workload_loop(db, stop: threading.Event, done: list, errors: list):
    try:
        conn = db.connect()
        with conn.cursor() as cur:
            for i in range(400):
                if stop.is_set():
                    break
                cur.execute("BEGIN")
                cur.execute("INSERT INTO ship_k.t_pk (id, name) VALUES (%s, 'x')", (i,))
                cur.execute("INSERT INTO ship_k.t_nokey (a, b) VALUES (%s, 'y')", (i,))
                cur.execute("COMMIT")
                if i == 200:
                    cur.execute("FLUSH BINARY LOGS")
                done.append(i)
                time.sleep(0.01)
        conn.close()
    except Exception as exc:  # noqa: BLE001 - surfaced by the test
        errors.append(exc)


def test_sigkill_mid_stream_then_restart_ships_every_event_exactly_once(mariadb, kafka_broker,
                                                                        topic):
    mariadb.sql(schema("ship_k"))
    start = mariadb.flush_binlogs()
    args = server_args(mariadb, kafka_broker, topic, "mdbk", "--start-file", start)
    stop, done, errors = threading.Event(), [], []
    worker = threading.Thread(target=_workload_loop, args=(mariadb, stop, done, errors))
    first = start_shipper(*args)
    worker.start()
    try:
        deadline, last = time.monotonic() + 30, None
        while (last is None or len(done) < 100) and time.monotonic() < deadline:
            time.sleep(0.1)
            last = last_record(kafka_broker.bootstrap, topic, "mdbk")
        assert last is not None, "nothing shipped before the kill"
        first.kill()  # SIGKILL: no flush, no goodbye
        first.communicate(timeout=10)
        killed_at = len(done)
        time.sleep(0.5)  # the workload keeps writing while no shipper runs
        second = start_shipper(*args)
        worker.join(60)
        assert not errors, errors
        assert len(done) == 400 and killed_at < 400
        current = mariadb.flush_binlogs()
        files = closed_files(mariadb, start, current)
        wait_shipped(kafka_broker.bootstrap, topic, "mdbk", files[-1],
                     mariadb.binlog_path(files[-1]).stat().st_size, proc=second)
        rc, err = stop_shipper(second)
    finally:
        stop.set()
        for p in (first,):
            if p.poll() is None:
                p.kill()
    assert rc == 0, err
    assert "resuming at" in err
    assert len(files) >= 2
    assert_rebuilt_identical(mariadb, kafka_broker, topic, "mdbk", files)
    shipped = [r for r in read_records(kafka_broker.bootstrap, topic, "mdbk") if r.binlog_file in files]
    records = [r for r in shipped if not r.is_side]
    n_events = sum(sum(1 for _ in iter_frames(mariadb.binlog_path(f).read_bytes())) for f in files)
    assert len(records) == n_events
    # the restarted dump began inside a file: its Format_description came along as a format
    # record at the resume position (the job decodes what follows with it)
    formats = [r for r in shipped if r.kind == "format"]
    assert len(formats) == 1 and formats[0].value[4] == 15 and formats[0].binlog_pos > 4


def test_capability_0_topic_holds_the_servers_dummy_events(mariadb, kafka_broker, topic):
    start = mariadb.flush_binlogs()
    mariadb.sql(schema("ship_c") + row_image_round("ship_c", "FULL", 1))
    current = mariadb.flush_binlogs()
    rc = main(server_args(mariadb, kafka_broker, topic, "cap0", "--start-file", start,
                          "--capability", "0", "--non-block"))
    assert rc == 0
    original = dict(iter_frames(mariadb.binlog_path(start).read_bytes()))
    records = [r for r in read_records(kafka_broker.bootstrap, topic, "cap0")
               if r.binlog_file == start]
    assert [r.binlog_pos for r in records] == list(original)  # same size: no hole
    ctx, dummies, begins = DecodeContext(), 0, 0
    for rec in records:
        # the codec's own substitution of the original event = what the server sent
        # (dump flag 2 = BINLOG_SEND_ANNOTATE_ROWS_EVENT, which cdc-ship always sets)
        assert substitute_for_replica(original[rec.binlog_pos], 0, dump_flags=2,
                                      checksum=True) == rec.value, rec.binlog_pos
        event = decode_event(rec.value, rec.binlog_pos, ctx, file=rec.binlog_file)
        dummies += isinstance(event.body, Dummy)
        begins += rec.event_type == 2 and original[rec.binlog_pos][4] == 162
    assert dummies > 0 and begins > 0
    assert sum(1 for f in original.values() if f[4] == 162) > 0
    assert current != start


def test_dropped_connection_reconnects_and_resumes_from_kafka(mariadb, kafka_broker, topic):
    """The server kills the dump thread (as on a network drop): cdc-ship reconnects, reads its
    position back from the topic and continues without gap or duplicate."""
    mariadb.sql(schema("ship_d"))
    start = mariadb.flush_binlogs()
    proc = start_shipper(*server_args(mariadb, kafka_broker, topic, "mdbd", "--start-file", start))
    try:
        mariadb.sql(row_image_round("ship_d", "FULL", 1))
        wait_shipped(kafka_broker.bootstrap, topic, "mdbd", *mariadb.master_status(), proc=proc)
        dumps = [row[0] for row in mariadb.query("SHOW PROCESSLIST") if row[4] == "Binlog Dump"]
        assert dumps, "no Binlog Dump thread on the server"
        for thread_id in dumps:
            mariadb.query(f"KILL {int(thread_id)}")
        mariadb.sql(row_image_round("ship_d", "MINIMAL", 10))
        current = mariadb.flush_binlogs()
        files = closed_files(mariadb, start, current)
        wait_shipped(kafka_broker.bootstrap, topic, "mdbd", files[-1],
                     mariadb.binlog_path(files[-1]).stat().st_size, proc=proc)
    finally:
        rc, err = stop_shipper(proc)
    assert rc == 0, err
    assert "reconnecting" in err
    assert_rebuilt_identical(mariadb, kafka_broker, topic, "mdbd", files)


def test_mariadb_gtid_start_ships_only_groups_after_the_state(mariadb, kafka_broker, topic):
    mariadb.sql("CREATE DATABASE ship_g; CREATE TABLE ship_g.t (id INT PRIMARY KEY);"
                "INSERT INTO ship_g.t VALUES (1);")
    state = mariadb.query("SELECT @@gtid_binlog_pos")[0][0]
    file = mariadb.master_status()[0]
    mariadb.sql("INSERT INTO ship_g.t VALUES (2); INSERT INTO ship_g.t VALUES (3);")
    mariadb.flush_binlogs()
    assert main(server_args(mariadb, kafka_broker, topic, "gtid", "--gtid", state,
                            "--non-block")) == 0
    disk = mariadb.binlog_path(file).read_bytes()
    records = [r for r in read_records(kafka_broker.bootstrap, topic, "gtid") if r.binlog_file == file]
    inserts = [r for r in records if r.event_type == 23]  # WRITE_ROWS_V1
    assert len(inserts) == 2  # only the two transactions after the GTID state
    # Nothing before the first group after the state is shipped: the file's FDE (sent with
    # `created` zeroed, sql_repl.cc) comes as a format record at that group's position, as a
    # file:pos dump starting there would send it; every binlog record is the file's bytes.
    fmt, first = records[0], records[1]
    assert fmt.kind == "format" and fmt.value[:21] == disk[4:25]
    assert fmt.binlog_pos == first.binlog_pos and first.event_type == 162
    for rec in records[1:]:
        assert rec.value == disk[rec.binlog_pos:rec.binlog_pos + len(rec.value)]
    assert records[-1].origin.gtid_state == mariadb.query("SELECT @@gtid_binlog_pos")[0][0]

"""cdc-ship --server --snapshot against the private MariaDB and the project's Kafka broker, while
a workload (MINIMAL row images) writes to the same tables: the snapshot holds exactly the rows
the server had at its position P (helpers.py explains how that content is obtained), no global
read lock is taken, the binlog continues at P byte for byte, and a SIGKILLed run is completed by
a second run of the remaining tables while the binlog continues at the first run's position."""
from __future__ import annotations

import re
import time

import pytest

from libs.binlog.file_names import binlog_sort_key
from libs.shipper.kafka_sink import last_record
from libs.shipper.rebuild import rebuild
from libs.snapshot.record import SnapshotRecord
from pipelines.ship import main

from ..shipper.helpers import password_file, shipper_output, start_shipper
from .helpers import (Reference, create_schema, gtid_positions, snapshot_rows, start_workload,
                      topic_records)

pytestmark = pytest.mark.integration

TABLES = ("t_blob", "t_cpk", "t_nokey", "t_pk", "t_uk")  # the order a run reads them
SIZES = dict(n_pk=8000, n_cpk=5000, n_uk=3000, n_nokey=2000, n_blob=2000)  # 20,000 rows
SMALL = dict(n_pk=3000, n_cpk=1000, n_uk=1000, n_nokey=500, n_blob=500)


def ship(db, kafka_broker, topic, source, *extra) -> int:
    return main(["--server", f"{db.host}:{db.port}", "--user", db.user,
                 "--password-file", password_file(db), "--bootstrap", kafka_broker.bootstrap,
                 "--topic", topic, "--source", source, "--progress", "1", *extra])


def assert_binlog_continues_at(db, records, file, pos):
    """(c) the first binlog record after the snapshot is at file:pos, and (d) the topic rebuilds
    the server's binlog byte for byte from there."""
    binlog = [r for r in records if not r.is_snapshot]
    assert records.index(binlog[0]) > max(i for i, r in enumerate(records) if r.is_snapshot)
    assert (binlog[0].binlog_file, binlog[0].binlog_pos) == (file, pos)
    rebuilt = rebuild(records)  # raises on a gap or a duplicate
    assert list(rebuilt)[0] == file and rebuilt[file].start_pos == pos
    for name, part in rebuilt.items():
        start = pos if name == file else 4
        assert b"".join(part.chunks) == db.binlog_path(name).read_bytes()[start:], name
    return len(binlog)


def test_snapshot_of_a_living_database(mariadb, kafka_broker, topic, capsys):
    name = "snap_i"
    create_schema(mariadb, name, SIZES, ref=f"{name}_ref")
    mariadb.query("SET GLOBAL log_output = 'TABLE'")
    mariadb.query("TRUNCATE TABLE mysql.general_log")
    mariadb.query("SET GLOBAL general_log = ON")
    recorder, stop, errors, thread = start_workload(mariadb, name, TABLES, seed=1)
    try:
        assert ship(mariadb, kafka_broker, topic, "snapi", "--snapshot", "--include",
                    rf"{name}\..*", "--non-block", "--snapshot-chunk-rows", "1000") == 0
        shipped = len(recorder.done)
        deadline = time.monotonic() + 20  # the workload goes on after P: changes for the binlog
        while len(recorder.done) < shipped + 10 and time.monotonic() < deadline and not errors:
            time.sleep(0.02)
        during = len(recorder.done)
    finally:
        stop.set()
        thread.join(30)
        mariadb.query("SET GLOBAL general_log = OFF")
    assert not errors, errors
    log = capsys.readouterr().err
    general = [row[0].decode() if isinstance(row[0], bytes) else row[0] for row in mariadb.query(
        "SELECT argument FROM mysql.general_log WHERE command_type = 'Query'")]
    # catch up with what the workload wrote after the first pass reached the binlog's end
    assert ship(mariadb, kafka_broker, topic, "snapi", "--snapshot", "--include", rf"{name}\..*",
                "--non-block") == 0
    assert "no snapshot (initial)" in capsys.readouterr().err
    records, snaps = topic_records(kafka_broker.bootstrap, topic, "snapi")
    run = snaps[0][1]
    assert [s.kind for _r, s in snaps][:2] == ["begin", "table"] and snaps[-1][1].kind == "end"
    assert {s.snapshot_id for _r, s in snaps} == {run.snapshot_id}
    assert {(r.binlog_file, r.binlog_pos) for r, _s in snaps} == {(run.binlog_file, run.binlog_pos)}
    assert [s.table for _r, s in snaps if s.kind == "table"] == list(TABLES)
    assert run.tables == tuple(f"{name}.{t}" for t in TABLES)

    # (a) each table's snapshot rows = the server's rows at P
    reference = Reference(mariadb, f"{name}_ref", recorder, gtid_positions(mariadb))
    try:
        before_p = reference.advance_to(run.binlog_file, run.binlog_pos)
        assert 20 <= before_p < during  # the workload committed before P and after it
        counts = {}
        for table in TABLES:
            expected = reference.rows(table)
            assert snapshot_rows(snaps, run.snapshot_id, table) == expected, table
            counts[table] = sum(expected.values())
    finally:
        reference.close()
    ends = {s.table: s.row_count for _r, s in snaps if s.kind == "table_end"}
    assert ends == counts and 19000 < sum(counts.values()) < 22000
    assert all(s.row_count <= 1000 for _r, s in snaps if s.kind == "rows")

    # (b) no global read lock; the consistent snapshot was taken
    assert any("START TRANSACTION WITH CONSISTENT SNAPSHOT" in q for q in general)
    assert not [q for q in general if re.search(r"FLUSH\s+TABLES", q, re.I)]

    # (c), (d)
    shipped = assert_binlog_continues_at(mariadb, records, run.binlog_file, run.binlog_pos)
    assert shipped > 100
    done = re.search(r"done: 5 table\(s\), ([\d,]+) rows in ([\d.]+) s", log)
    assert done, log
    assert int(done.group(1).replace(",", "")) == sum(counts.values())
    print(f"\nsnapshot: {done.group(1)} rows in {done.group(2)} s; "
          f"{before_p} workload transactions before P, {during - before_p} after it")


def wait_for_table_record(bootstrap, topic, source_id, table, proc, timeout=30.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert proc.poll() is None, shipper_output(proc)
        last = last_record(bootstrap, topic, source_id)
        if last is not None and last.is_snapshot:
            rec = SnapshotRecord.decode(last.value)
            if rec.kind == "table" and rec.table == table:
                return rec
        time.sleep(0.1)
    raise AssertionError(f"no table record of {table}: {shipper_output(proc)}")


def assert_killed_run_then_remaining_run(snaps, name):
    """Two runs: the killed one (t_blob, t_cpk finished, t_nokey begun), then one of the
    remaining tables at a later P2, every record with header position P1. (ids, P1, P2)."""
    ids = list(dict.fromkeys(s.snapshot_id for _r, s in snaps))
    assert len(ids) == 2
    first = [s for _r, s in snaps if s.snapshot_id == ids[0]]
    second = [s for _r, s in snaps if s.snapshot_id == ids[1]]
    p1 = (first[0].binlog_file, first[0].binlog_pos)
    p2 = (second[0].binlog_file, second[0].binlog_pos)
    assert (binlog_sort_key(p2[0]), p2[1]) > (binlog_sort_key(p1[0]), p1[1])
    # every snapshot record, of both runs, says the binlog continues at the first run's P
    assert {(r.binlog_file, r.binlog_pos) for r, _s in snaps} == {p1}
    assert [(s.kind, s.table) for s in first if s.kind != "rows"] == [
        ("begin", None), ("table", "t_blob"), ("table_end", "t_blob"), ("table", "t_cpk"),
        ("table_end", "t_cpk"), ("table", "t_nokey")]
    assert [(s.kind, s.table) for s in second if s.kind != "rows"] == [
        ("begin", None), ("table", "t_nokey"), ("table_end", "t_nokey"), ("table", "t_pk"),
        ("table_end", "t_pk"), ("table", "t_uk"), ("table_end", "t_uk"), ("end", None)]
    assert second[0].tables == tuple(f"{name}.{t}" for t in ("t_nokey", "t_pk", "t_uk"))
    assert first[-1].tables == second[0].tables  # the killed run's last record named them
    # nothing of the finished tables twice
    assert not [s for s in second if s.table in ("t_blob", "t_cpk")]
    return ids, p1, p2


def test_sigkill_mid_snapshot_then_restart(mariadb, kafka_broker, topic):
    name = "snap_k"
    create_schema(mariadb, name, SMALL, ref=f"{name}_ref")
    include = ("--include", rf"{name}\..*", "--snapshot-chunk-rows", "200")
    # the run publishes t_blob and t_cpk whole, then t_nokey's (third) table record, and stops
    # before its SELECT (stalled_ship.py); the SIGKILL lands there
    other = mariadb.connect()
    recorder, stop, errors, thread = start_workload(mariadb, name, set(TABLES) - {"t_nokey"}, 2)
    proc = start_shipper("--server", f"{mariadb.host}:{mariadb.port}", "--user", mariadb.user,
                         "--password-file", password_file(mariadb), "--bootstrap",
                         kafka_broker.bootstrap, "--topic", topic, "--source", "snapk",
                         "--snapshot", *include, module="tests.integration.snapshot.stalled_ship",
                         env={"STALL_TABLE": "t_nokey"})
    try:
        wait_for_table_record(kafka_broker.bootstrap, topic, "snapk", "t_nokey", proc)
        proc.kill()  # SIGKILL: no flush, no goodbye
        proc.wait(10)
        # while no shipper runs, the stalled table changes too
        recorder.commit(other, name, ["INSERT INTO {db}.t_nokey VALUES (99, 'while killed')",
                                     "DELETE FROM {db}.t_nokey WHERE a = 1 LIMIT 1"])
        time.sleep(0.3)
        assert ship(mariadb, kafka_broker, topic, "snapk", "--snapshot", "--non-block",
                    *include) == 0
    finally:
        stop.set()
        thread.join(30)
        other.close()
        if proc.poll() is None:
            proc.kill()
    assert not errors, errors
    assert ship(mariadb, kafka_broker, topic, "snapk", "--snapshot", "--non-block", *include) == 0
    records, snaps = topic_records(kafka_broker.bootstrap, topic, "snapk")
    ids, p1, p2 = assert_killed_run_then_remaining_run(snaps, name)
    assert_binlog_continues_at(mariadb, records, *p1)

    # every table's rows are those of its latest run, = the server's rows at that run's P
    reference = Reference(mariadb, f"{name}_ref", recorder, gtid_positions(mariadb))
    try:
        at_p1 = reference.advance_to(*p1)
        for table in ("t_blob", "t_cpk"):
            assert snapshot_rows(snaps, ids[0], table) == reference.rows(table), table
        at_p2 = reference.advance_to(*p2)
        assert at_p2 > at_p1  # the workload (and the killed-time change) lies between
        for table in ("t_nokey", "t_pk", "t_uk"):
            rows = snapshot_rows(snaps, ids[1], table)
            assert rows == reference.rows(table), table
            assert not snapshot_rows(snaps, ids[0], table)
        assert any(row[1][3] == "while killed" for row in snapshot_rows(snaps, ids[1], "t_nokey"))
    finally:
        reference.close()

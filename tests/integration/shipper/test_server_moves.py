"""cdc-ship against another server than the topic's last record came from, and against a server
that purged what the topic still needs: real MariaDB servers (libs/local/mariadb_server.py), the real
broker, the CLI's exit code and its one line."""
import time

import pytest

from libs.local.mariadb_server import MariaDBServer
from libs.shipper.kafka_sink import last_record
from pipelines.ship import main

from .helpers import password_file

pytestmark = pytest.mark.integration


def ship(db, kafka_broker, topic, source, *extra) -> int:
    return main(["--server", f"{db.host}:{db.port}", "--user", db.user, "--password-file",
                 password_file(db), "--bootstrap", kafka_broker.bootstrap, "--topic", topic,
                 "--source", source, "--non-block", *extra])


def purge_to(db, newest: str, timeout: float = 30.0) -> None:
    """PURGE BINARY LOGS TO `newest`: retried, because MariaDB keeps a file until its binlog
    checkpoint (InnoDB has made its transactions durable) has moved past it."""
    deadline = time.monotonic() + timeout
    while True:
        db.query(f"PURGE BINARY LOGS TO '{newest}'")
        left = [row[0] for row in db.query("SHOW BINARY LOGS")]
        if left == [newest]:
            return
        assert time.monotonic() < deadline, f"binlogs still there after PURGE: {left}"
        time.sleep(0.5)


def error_lines(capsys) -> list[str]:
    return [line for line in capsys.readouterr().err.splitlines() if line.startswith("cdc-ship: ")]


def test_a_file_pos_resume_against_another_server_is_refused_naming_both(
        mariadb, kafka_broker, topic, tmp_path, capsys):
    mariadb.sql("DROP DATABASE IF EXISTS mv_a; CREATE DATABASE mv_a; "
                "CREATE TABLE mv_a.t (id INT PRIMARY KEY); INSERT INTO mv_a.t VALUES (1)")
    assert ship(mariadb, kafka_broker, topic, "mv") == 0
    last = last_record(kafka_broker.bootstrap, topic, "mv")
    assert last.origin.identity == "mariadb server_id=1 gtid_domain_id=0"
    capsys.readouterr()
    with MariaDBServer.start(tmp_path / "other", server_id=7) as other:
        assert ship(other, kafka_broker, topic, "mv") == 1
    [line] = error_lines(capsys)
    assert ("the topic's last record came from mariadb server_id=1 gtid_domain_id=0 "
            f"({last.binlog_file}:{last.end_pos}) but {other.host}:{other.port} is mariadb "
            "server_id=7 gtid_domain_id=0") in line
    assert "--follow-gtid" in line and f"GTID state {last.origin.gtid_state}" in line
    assert line.endswith(f"(source mv, file {last.binlog_file}, pos {last.end_pos})")
    assert last_record(kafka_broker.bootstrap, topic, "mv") == last  # nothing shipped


def test_purged_binlog_warns_first_then_fails_naming_the_position_and_the_way_on(
        kafka_broker, topic, tmp_path, capsys):
    with MariaDBServer.start(tmp_path / "purging") as db:
        db.sql("CREATE DATABASE pg; CREATE TABLE pg.t (id INT PRIMARY KEY, v INT);"
               "INSERT INTO pg.t VALUES (1, 1)")
        assert ship(db, kafka_broker, topic, "pg") == 0
        shipped = last_record(kafka_broker.bootstrap, topic, "pg")
        first = db.master_status()[0]
        assert shipped.binlog_file == first
        newest = db.flush_binlogs()
        db.sql("INSERT INTO pg.t VALUES (2, 2)")
        capsys.readouterr()
        # the shipper still reads the oldest file, which is not the one being written: warned
        assert ship(db, kafka_broker, topic, "pg") == 0
        warned = [line for line in capsys.readouterr().err.splitlines() if "warning" in line]
        assert warned == [f"cdc-ship pg: warning: the server's oldest binlog is {first} and the "
                          f"shipper still reads {first} (1 file(s) behind the newest, {newest}): "
                          f"the next purge removes what it has not shipped"]
        stopped_at = last_record(kafka_broker.bootstrap, topic, "pg")
        db.sql("INSERT INTO pg.t VALUES (3, 3)")
        # the topic ends in `newest` now; move on two files and purge up to the last one
        db.flush_binlogs()
        db.sql("INSERT INTO pg.t VALUES (4, 4)")
        gone = stopped_at.binlog_file
        latest = db.flush_binlogs()
        purge_to(db, latest)
        assert ship(db, kafka_broker, topic, "pg") == 1
        [line] = error_lines(capsys)
        assert line == (
            f"cdc-ship: server {db.host}:{db.port} purged what the topic still needs: binlog "
            f"{gone} is gone, so are its events from position {stopped_at.end_pos} on (oldest "
            f"binlog on the server: {latest}); way on: cdc-ship --resnapshot with the same "
            f"--include/--exclude (publishes a new consistent snapshot of the tables through "
            f"the topic, then follows the binlog from the snapshot's position) "
            f"(source pg, file {gone}, pos {stopped_at.end_pos})")
        # the way on works: the run's binlog continues at its own position, in the newest file
        assert ship(db, kafka_broker, topic, "pg", "--resnapshot", "--include", r"pg\..*") == 0
        after = last_record(kafka_broker.bootstrap, topic, "pg")
        assert after.binlog_file == latest

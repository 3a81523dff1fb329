"""Issue #38 item 6 against the private MariaDB and the project's broker: a snapshot row over the
limit stops cdc-ship with one line naming table, key, size and limit; a restart with --exclude
takes that table out of the interrupted run and finishes the others. The limit is lowered to
100 KB (cdc-ship --max-event-bytes) so that a 200 KB row stands in for one of 64 MB."""
from __future__ import annotations

import re

import pytest

from .helpers import topic_records
from .test_ship_snapshot import ship

pytestmark = pytest.mark.integration

DB = "big_x"
LIMIT = 100_000


def test_a_row_over_the_limit_names_its_table_and_exclude_takes_it_out(mariadb, kafka_broker, topic, capsys):
    mariadb.sql(f"DROP DATABASE IF EXISTS {DB}; CREATE DATABASE {DB};"
                f"CREATE TABLE {DB}.a (id INT PRIMARY KEY, v VARCHAR(20));"
                f"CREATE TABLE {DB}.big (id INT PRIMARY KEY, body LONGBLOB);"
                f"CREATE TABLE {DB}.c (id INT PRIMARY KEY, v VARCHAR(20));"
                f"INSERT INTO {DB}.a VALUES (1, 'a1'), (2, 'a2');"
                f"INSERT INTO {DB}.big VALUES (1, 'small'), (2, REPEAT('x', 200000)), (3, 'small');"
                f"INSERT INTO {DB}.c VALUES (1, 'c1'), (2, 'c2'), (3, 'c3');")
    args = ("--snapshot", "--non-block", "--include", rf"{DB}\..*", "--max-event-bytes", str(LIMIT))

    assert ship(mariadb, kafka_broker, topic, "bigx", *args) == 1
    err = capsys.readouterr().err
    (line,) = [x for x in err.splitlines() if x.startswith("cdc-ship: ")]
    assert f"`{DB}`.`big`: primary key id=2" in line
    size = int(re.search(r"record of (\d+) bytes", line).group(1))
    assert size > 200_000 and f"limit of {LIMIT} bytes" in line
    assert rf"--exclude '{DB}\.big'" in line and "message.max.bytes" in line

    assert ship(mariadb, kafka_broker, topic, "bigx", *args, "--exclude", rf"{DB}\.big") == 0
    err = capsys.readouterr().err
    assert [x for x in err.splitlines() if "left out" in x] == [
        f"cdc-ship bigx: snapshot: `{DB}`.`big` left out of the interrupted run's remaining tables "
        f"(--exclude): its snapshot is abandoned, its binlog changes still flow"]

    _records, snaps = topic_records(kafka_broker.bootstrap, topic, "bigx")
    ids = list(dict.fromkeys(s.snapshot_id for _r, s in snaps))
    assert len(ids) == 2
    first = [(s.kind, s.table) for _r, s in snaps if s.snapshot_id == ids[0] and s.kind != "rows"]
    second = [s for _r, s in snaps if s.snapshot_id == ids[1]]
    assert first == [("begin", None), ("table", "a"), ("table_end", "a"), ("table", "big")]
    assert [(s.kind, s.table) for s in second if s.kind != "rows"] == [
        ("begin", None), ("table", "c"), ("table_end", "c"), ("end", None)]
    assert second[0].tables == (f"{DB}.c",)
    got = sorted((row[0]["text"], row[1]["text"])
                 for s in second if s.kind == "rows" for row in s.row_images())
    assert got == sorted((str(i), v) for i, v in mariadb.query(f"SELECT id, v FROM {DB}.c"))

"""Slave-side defaults (WL#5092 DEFAULT VALUES R1, R2), implicit defaults, NULL into NOT NULL."""

import datetime as dt
from decimal import Decimal

from libs.replay import replay
from replay_builders import Source, rows, table_of, target_from_ddl


def test_seed_extra_fields_on_slave_get_their_default():
    # MASTER> CREATE TABLE t1 (a int, b int);  SLAVE> CREATE TABLE t1 (a int, b int, c int DEFAULT 100);
    # MASTER> INSERT INTO t1 VALUES (1,1);     SLAVE> SELECT * FROM t1;  -> 1 1 100
    target = target_from_ddl("CREATE TABLE test.t1 (a int, b int, c int DEFAULT 100)")
    master = Source("test", "t1", ["a", "b"])
    result = replay(target, [], [master.insert({"a": 1, "b": 1})])
    assert table_of(result, [], target) == [(1, 1, 100)]


def test_seed_minimal_insert_takes_the_slave_default_900_not_the_master_100():
    # MASTER> CREATE TABLE t1 (a int DEFAULT 100, b int);  SLAVE> CREATE TABLE t1 (a int DEFAULT 900, b int);
    # MASTER> INSERT INTO t1(b) VALUES (1);  master has (100, 1); with MINIMAL the slave has (900, 1)
    target = target_from_ddl("CREATE TABLE test.t1 (a int DEFAULT 900, b int)")
    master = Source("test", "t1", ["a", "b"])
    result = replay(target, [], [master.insert({"b": 1})])  # minimal AI: only b was specified
    assert table_of(result, [], target) == [(900, 1)]


def test_absent_column_without_default_is_null_when_nullable():
    target = target_from_ddl("CREATE TABLE test.t (id int PRIMARY KEY, a varchar(3))")
    result = replay(target, [], [Source("test", "t", ["id", "a"]).insert({"id": 1})])
    assert table_of(result, [], target) == [(1, None)]
    assert result.warnings == ()


def test_not_null_without_default_takes_the_implicit_default_with_warning_1364():
    target = target_from_ddl(
        "CREATE TABLE test.t (id int NOT NULL, n int NOT NULL, s varchar(5) NOT NULL, d datetime NOT NULL,"
        " b blob NOT NULL, e enum('x','y') NOT NULL, PRIMARY KEY (id))")
    result = replay(target, [], [Source("test", "t", ["id"]).insert({"id": 1})])
    # 0, '', zero date (-> NULL: zero_dates to_null, Debezium's rule), b'', ENUM's first member
    assert table_of(result, [], target) == [(1, 0, "", None, b"", "x")]
    assert sorted(w.code for w in result.warnings) == [1364, 1364, 1364, 1364]  # not for the ENUM
    assert "Field 'n' doesn't have a default value" in [w.message for w in result.warnings]


def test_implicit_zero_date_stops_the_batch_under_zero_dates_fail():
    import dataclasses

    import pytest

    from libs.replay import ReplayStopped
    target = target_from_ddl("CREATE TABLE test.t (id int PRIMARY KEY, d date NOT NULL)")
    target = dataclasses.replace(target, columns=tuple(dataclasses.replace(c, zero_dates="fail")
                                                       for c in target.columns))
    with pytest.raises(ReplayStopped, match="zero or partial date"):
        replay(target, [], [Source("test", "t", ["id"]).insert({"id": 1})])


def test_default_current_timestamp_is_the_change_commit_time():
    target = target_from_ddl(
        "CREATE TABLE test.t (id int PRIMARY KEY, ts timestamp NOT NULL DEFAULT current_timestamp())")
    result = replay(target, [], [Source("test", "t", ["id"]).insert({"id": 1})])
    assert result.upserts[0].values["ts"] == dt.datetime(2024, 5, 6, 7, 8, 10)  # trx 1: COMMIT_TS + 1 s


def test_corpus_t_defaults_declared_defaults_are_used():
    target = target_from_ddl(
        "CREATE TABLE test.t_defaults (`id` int(11) NOT NULL AUTO_INCREMENT,"
        " `status` varchar(10) NOT NULL DEFAULT 'new', `cnt` int(11) NOT NULL DEFAULT 3,"
        " `ratio` double DEFAULT 1.5, `created` datetime(3) NOT NULL DEFAULT '2024-01-01 00:00:00.000',"
        " `flag` tinyint(1) DEFAULT 1, `payload` blob DEFAULT NULL, `tag` char(4) DEFAULT 'abcd',"
        " PRIMARY KEY (`id`))")
    master = Source("test", "t_defaults", list(target.column_names))
    changes = [master.insert({"id": 1}), master.insert({"id": 2, "status": "open"}),
               master.insert({"id": 3, "cnt": 5, "payload": b"\x00\x01\x02\x03"}),
               master.insert({"id": 4, "status": "x", "tag": None})]
    result = replay(target, [], changes)
    created = dt.datetime(2024, 1, 1)
    assert table_of(result, [], target) == [
        (1, "new", 3, 1.5, created, 1, None, "abcd"),
        (2, "open", 3, 1.5, created, 1, None, "abcd"),
        (3, "new", 5, 1.5, created, 1, b"\x00\x01\x02\x03", "abcd"),
        (4, "x", 3, 1.5, created, 1, None, None),
    ]


def test_update_keeps_absent_columns_current_values_not_defaults():
    # WL#5092 R2: UPDATEs unpack the AI on top of the row fetched from the SE.
    target = target_from_ddl("CREATE TABLE test.t (id int PRIMARY KEY, a int DEFAULT 900, b int)")
    current = rows(target, (1, 5, 6))
    result = replay(target, current, [Source("test", "t", ["id", "a", "b"]).update({"id": 1}, {"b": 7})])
    assert table_of(result, current, target) == [(1, 5, 7)]


def test_null_into_not_null_column_takes_its_default_with_warning_1048():
    target = target_from_ddl("CREATE TABLE test.t (id int PRIMARY KEY, n decimal(5,2) NOT NULL DEFAULT 1.25)")
    result = replay(target, [], [Source("test", "t", ["id", "n"]).insert({"id": 1, "n": None})])
    assert table_of(result, [], target) == [(1, Decimal("1.25"))]
    assert [w.code for w in result.warnings] == [1048]


def test_a_column_added_after_the_insert_holds_what_its_add_gave_it():
    """Change.filled (libs/contracts/change.py): a row inserted before an ADD COLUMN of its batch holds
    what that ALTER gave the rows that existed, not the target's DEFAULT at the batch's end
    (ADD c DEFAULT 1, then SET DEFAULT 2); a column the image carries keeps its value."""
    target = target_from_ddl("CREATE TABLE test.t (id int PRIMARY KEY, a int, c int DEFAULT 2)")
    source = Source("test", "t", ["id", "a"])
    changes = [source.insert({"id": 1, "a": 10}).with_filled({"c": 1, "a": 99}), source.insert({"id": 2})]
    assert table_of(replay(target, [], changes), [], target) == [(1, 10, 1), (2, None, 2)]

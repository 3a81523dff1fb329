"""1032 / 1062 in strict and idempotent mode (R7), statement-format and DDL records (WL#3303)."""

import pytest

from libs.replay import ReplayStopped, replay
from replay_builders import Source, rows, table_of, target_from_ddl

PK = "CREATE TABLE test.t (id int NOT NULL, name varchar(10), qty int, PRIMARY KEY (id))"
SRC = ["id", "name", "qty"]


def test_row_not_found_strict_stops_naming_table_key_gtid_and_position():
    target = target_from_ddl(PK)
    src = Source("test", "t", SRC)
    with pytest.raises(ReplayStopped) as stopped:
        replay(target, [], [src.update({"id": 7}, {"qty": 1}, statement="UPDATE t SET qty=1 WHERE id=7")])
    message = str(stopped.value)
    for part in ("1032", "test.t", "'id': '7'", "GTID 0-1-1", "mdb-bin.000002:1050", "UPDATE t SET qty=1"):
        assert part in message
    assert stopped.value.error.kind == "row_not_found"


def test_row_not_found_idempotent_skips_counts_and_reports():
    target = target_from_ddl(PK)
    current = rows(target, (1, "a", 1))
    src = Source("test", "t", SRC)
    result = replay(target, current, [src.delete({"id": 7}), src.update({"id": 8}, {"qty": 2}),
                                      src.update({"id": 1}, {"qty": 3})], mode="idempotent")
    assert table_of(result, current, target) == [(1, "a", 3)]
    assert [e.code for e in result.quarantine] == [1032, 1032]
    assert result.counts() == {"skipped_row_not_found": 2, "applied": 1}


def test_duplicate_insert_strict_stops_with_1062():
    target = target_from_ddl(PK)
    current = rows(target, (1, "a", 1))
    with pytest.raises(ReplayStopped, match="1062.*test.t.*'id': '1'"):
        replay(target, current, [Source("test", "t", SRC).insert({"id": 1, "name": "b", "qty": 2})])


def test_duplicate_insert_idempotent_overwrites_with_a_complete_image():
    target = target_from_ddl(PK)
    current = rows(target, (1, "a", 1))
    result = replay(target, current, [Source("test", "t", SRC).insert({"id": 1, "name": "b", "qty": 2})],
                    mode="idempotent")
    assert table_of(result, current, target) == [(1, "b", 2)]
    assert result.upserts[0].row_id == "r0"
    assert [e.code for e in result.quarantine] == [1062]
    assert result.counts() == {"overwritten": 1}


def test_duplicate_insert_idempotent_minimal_image_lands_on_the_existing_row():
    # write_row: !COMPLETE_ROWS_F -> restore_record(record[1]) then unpack the AI on top
    target = target_from_ddl(PK)
    current = rows(target, (1, "a", 1))
    result = replay(target, current,
                    [Source("test", "t", SRC).insert({"id": 1, "qty": 2})], mode="idempotent")
    assert table_of(result, current, target) == [(1, "a", 2)]


def test_duplicate_insert_on_two_unique_keys_idempotent_leaves_one_row():
    target = target_from_ddl("CREATE TABLE test.t (id int PRIMARY KEY, code char(2) NOT NULL, "
                             "UNIQUE KEY (code))")
    current = rows(target, (1, "aa"), (2, "bb"))
    src = Source("test", "t", ["id", "code"])
    result = replay(target, current, [src.insert({"id": 1, "code": "bb"})], mode="idempotent")
    assert table_of(result, current, target) == [(1, "bb")]


def test_update_creating_a_duplicate_key_strict_stops_and_idempotent_skips():
    target = target_from_ddl(PK)
    current = rows(target, (1, "a", 1), (2, "b", 2))
    change = Source("test", "t", SRC).update({"id": 1}, {"id": 2})
    with pytest.raises(ReplayStopped, match="1062"):
        replay(target, current, [change])
    result = replay(target, current, [change], mode="idempotent")
    assert table_of(result, current, target) == [(1, "a", 1), (2, "b", 2)]
    assert result.counts() == {"skipped_duplicate_key": 1}


def test_one_statement_key_swap_on_a_primary_key_stops_like_a_replica():
    # UPDATE t SET id = 3 - id: the first row event already duplicates id 2 (the replica checks per row)
    target = target_from_ddl(PK)
    current = rows(target, (1, "a", 1), (2, "b", 2))
    src = Source("test", "t", SRC)
    with pytest.raises(ReplayStopped, match="1062"):
        replay(target, current, [src.update({"id": 1}, {"id": 2}, trx=1, seq=0),
                                 src.update({"id": 2}, {"id": 1}, trx=1, seq=1)])


def test_unusable_before_image_stops():
    # WL#5092 R2: the master's PK lives entirely in columns the target does not have
    target = target_from_ddl("CREATE TABLE test.t (v int)")
    src = Source("test", "t", ["mid", "v"])
    with pytest.raises(ReplayStopped, match="unusable_before_image"):
        replay(target, rows(target, (1,)), [src.delete({"mid": 1})])


def test_statement_dml_for_rows_only_target_is_an_error_naming_table_statement_position():
    target = target_from_ddl(PK)
    change = Source("test", "t", SRC).change("statement", statement="UPDATE t SET qty = qty + 1")
    with pytest.raises(ReplayStopped) as stopped:
        replay(target, [], [change], mode="idempotent")
    for part in ("statement_format", "test.t", "UPDATE t SET qty = qty + 1", "mdb-bin.000002:1050"):
        assert part in str(stopped.value)


def test_statement_dml_quarantined_by_configuration():
    target = target_from_ddl(PK, on_statement="quarantine")
    change = Source("test", "t", SRC).change("statement", statement="DELETE FROM t")
    result = replay(target, rows(target, (1, "a", 1)), [change])
    assert result.upserts == () and result.deletes == ()
    assert [e.kind for e in result.quarantine] == ["statement_format"]
    assert result.counts() == {"quarantined_statement": 1}


def test_statement_capable_target_records_but_does_not_execute_statements():
    target = target_from_ddl(PK, apply="both")
    change = Source("test", "t", SRC).change("statement", statement="DELETE FROM t")
    result = replay(target, rows(target, (1, "a", 1)), [change])
    assert result.deletes == () and result.counts() == {"statement_not_executed": 1}


def test_row_change_for_statements_only_target_stops():
    target = target_from_ddl(PK, apply="statements")
    with pytest.raises(ReplayStopped, match="can only apply statements"):
        replay(target, [], [Source("test", "t", SRC).insert({"id": 1})])


def test_ddl_is_recorded_never_executed():
    target = target_from_ddl(PK)
    current = rows(target, (1, "a", 1))
    change = Source("test", "t", SRC).change("ddl", statement="ALTER TABLE t DROP COLUMN qty")
    result = replay(target, current, [change])
    assert table_of(result, current, target) == [(1, "a", 1)]
    assert [(e.outcome, e.lineage.statement) for e in result.change_log] == [
        ("ddl_recorded", "ALTER TABLE t DROP COLUMN qty")]


def test_bad_value_stops_in_both_modes():
    target = target_from_ddl(PK)
    change = Source("test", "t", SRC).insert({"id": "not a number"})
    for mode in ("strict", "idempotent"):
        with pytest.raises(ReplayStopped, match="bad_value.*'id'"):
            replay(target, [], [change], mode=mode)


def test_unknown_mode_and_foreign_table_are_programmer_errors():
    target = target_from_ddl(PK)
    with pytest.raises(ValueError, match="mode"):
        replay(target, [], [], mode="lenient")
    with pytest.raises(ValueError, match="other.t"):
        replay(target, [], [Source("other", "t", SRC).insert({"id": 1})])

"""Finding rows (WL#5092 PKE / find_row), keyless duplicates, key changes, several changes per row."""

from libs.replay import ROW_ID_COLUMN, make_row_id, replay
from replay_builders import Source, rows, table_of, target_from_ddl

PK = "CREATE TABLE test.t (id int NOT NULL, name varchar(10), qty int, PRIMARY KEY (id))"
NOKEY = "CREATE TABLE test.t (a int, b varchar(20), c double)"


def test_update_found_by_primary_key_even_if_other_before_columns_differ():
    # PK lookup: no record_compare of the other columns (WL#5092 find_row: is_PK -> ok)
    target = target_from_ddl(PK)
    current = rows(target, (1, "alpha", 10))
    src = Source("test", "t", ["id", "name", "qty"])
    result = replay(target, current, [src.update({"id": 1, "name": "stale", "qty": 0}, {"id": 1, "qty": 11})])
    assert table_of(result, current, target) == [(1, "alpha", 11)]


def test_update_found_by_not_null_unique_key_when_no_primary_key():
    target = target_from_ddl("CREATE TABLE test.t_uk (code char(8) NOT NULL, val int, "
                             "UNIQUE KEY uk_code (code))")
    assert target.lookup_keys == (("code",),)
    current = rows(target, ("A0000001", 1), ("A0000002", 2))
    src = Source("test", "t_uk", ["code", "val"])
    result = replay(target, current, [src.update({"code": "A0000002"}, {"val": 20})])
    assert table_of(result, current, target) == [("A0000001", 1), ("A0000002", 20)]


def test_nullable_unique_key_is_not_used_to_find_rows():
    target = target_from_ddl("CREATE TABLE test.t (u int, v int, UNIQUE KEY (u))")
    assert target.lookup_keys == ()
    current = rows(target, (1, 1), (2, 1))
    src = Source("test", "t", ["u", "v"])
    # before image holds only v=1: table scan, first row in scan order (WL#5092 R1 best effort)
    result = replay(target, current, [src.update({"v": 1}, {"v": 5})])
    assert [u.row_id for u in result.upserts] == ["r0"]


def test_keyless_identical_rows_update_changes_exactly_one_per_event():
    # corpus workload: INSERT (1,'x',1.0),(1,'x',1.0); UPDATE t_nokey SET c = 9.5 WHERE a = 1
    target = target_from_ddl(NOKEY)
    current = rows(target, (1, "x", 1.0), (1, "x", 1.0), (2, "y", None))
    src = Source("test", "t", ["a", "b", "c"])
    one = replay(target, current, [src.update({"a": 1, "b": "x", "c": 1.0}, {"a": 1, "b": "x", "c": 9.5})])
    assert table_of(one, current, target) == sorted([(1, "x", 9.5), (1, "x", 1.0), (2, "y", None)], key=repr)
    both = replay(target, current, [src.update({"a": 1, "b": "x", "c": 1.0}, {"a": 1, "b": "x", "c": 9.5}),
                                    src.update({"a": 1, "b": "x", "c": 1.0}, {"a": 1, "b": "x", "c": 9.5})])
    assert table_of(both, current, target) == sorted([(1, "x", 9.5), (1, "x", 9.5), (2, "y", None)], key=repr)


def test_keyless_identical_rows_delete_removes_exactly_one():
    target = target_from_ddl(NOKEY)
    current = rows(target, (1, "x", 1.0), (1, "x", 1.0))
    src = Source("test", "t", ["a", "b", "c"])
    result = replay(target, current, [src.delete({"a": 1, "b": "x", "c": 1.0})])
    assert [d.row_id for d in result.deletes] == ["r0"]
    assert table_of(result, current, target) == [(1, "x", 1.0)]


def test_keyless_null_compares_equal_to_null_in_the_before_image():
    target = target_from_ddl(NOKEY)
    current = rows(target, (None, None, None), (2, "y", None))
    src = Source("test", "t", ["a", "b", "c"])
    result = replay(target, current, [src.delete({"a": None, "b": None, "c": None})])
    assert table_of(result, current, target) == [(2, "y", None)]


def test_key_change_id_plus_one_over_many_rows_descending():
    # UPDATE t SET id = id + 1 ORDER BY id DESC: logged 5->6, 4->5, ... minimal images
    target = target_from_ddl(PK)
    current = rows(target, *[(i, f"n{i}", i * 10) for i in range(1, 6)])
    src = Source("test", "t", ["id", "name", "qty"])
    changes = [src.update({"id": i}, {"id": i + 1}, trx=1, seq=5 - i) for i in range(5, 0, -1)]
    result = replay(target, current, changes)
    assert table_of(result, current, target) == [(i + 1, f"n{i}", i * 10) for i in range(1, 6)]
    assert {u.row_id for u in result.upserts} == {f"r{i}" for i in range(5)}  # same rows, keys moved
    assert result.deletes == ()


def test_key_swap_on_keyless_table_in_either_order():
    # UPDATE t SET id = 3 - id over ids 1, 2 (full images, no key): any logging order
    target = target_from_ddl("CREATE TABLE test.t (id int, v varchar(3))")
    current = rows(target, (1, "a"), (2, "b"))
    src = Source("test", "t", ["id", "v"])
    first = src.update({"id": 1, "v": "a"}, {"id": 2, "v": "a"}, trx=1, seq=0)
    second = src.update({"id": 2, "v": "b"}, {"id": 1, "v": "b"}, trx=1, seq=1)
    for order in ([first, second], [second, first]):
        result = replay(target, current, order)
        assert table_of(result, current, target) == [(1, "b"), (2, "a")]


def test_key_swap_on_primary_key_through_a_temporary_key_in_either_order():
    target = target_from_ddl(PK)
    current = rows(target, (1, "a", 1), (2, "b", 2))
    src = Source("test", "t", ["id", "name", "qty"])
    a = [src.update({"id": 1}, {"id": 0}, trx=1, seq=0), src.update({"id": 2}, {"id": 1}, trx=1, seq=1),
         src.update({"id": 0}, {"id": 2}, trx=1, seq=2)]
    b = [src.update({"id": 2}, {"id": 0}, trx=1, seq=0), src.update({"id": 1}, {"id": 2}, trx=1, seq=1),
         src.update({"id": 0}, {"id": 1}, trx=1, seq=2)]
    for changes in (a, b):
        result = replay(target, current, changes)
        assert table_of(result, current, target) == [(1, "b", 2), (2, "a", 1)]


def test_insert_then_updates_under_minimal_images_layer_onto_each_other():
    target = target_from_ddl(PK)
    src = Source("test", "t", ["id", "name", "qty"])
    changes = [src.insert({"id": 10, "name": "trx1", "qty": 1}, trx=1, seq=0),
               src.update({"id": 10}, {"qty": 99}, trx=1, seq=1),
               src.update({"id": 10}, {"name": "renamed"}, trx=2, seq=0)]
    result = replay(target, [], changes)
    assert table_of(result, [], target) == [(10, "renamed", 99)]
    assert result.upserts[0].row_id == make_row_id("src1", "0-1-1", 0)
    assert result.upserts[0].lineage.trx_id == "0-1-2"  # last writer


def test_delete_then_reinsert_same_key_is_a_new_row():
    target = target_from_ddl(PK)
    current = rows(target, (1, "old", 1))
    src = Source("test", "t", ["id", "name", "qty"])
    result = replay(target, current, [src.delete({"id": 1}), src.insert({"id": 1, "name": "new", "qty": 2})])
    assert table_of(result, current, target) == [(1, "new", 2)]
    assert [d.row_id for d in result.deletes] == ["r0"]
    assert result.upserts[0].row_id != "r0"


def test_insert_then_delete_in_one_batch_leaves_nothing_to_write():
    target = target_from_ddl(PK)
    src = Source("test", "t", ["id", "name", "qty"])
    result = replay(target, [], [src.insert({"id": 1, "name": "x", "qty": 1}), src.delete({"id": 1})])
    assert result.upserts == () and result.deletes == ()
    assert [e.outcome for e in result.change_log] == ["applied", "applied"]


def test_noblob_update_without_the_blob_keeps_it():
    target = target_from_ddl("CREATE TABLE test.t_blob (id int PRIMARY KEY, "
                             "counter int NOT NULL DEFAULT 0, b blob)")
    current = rows(target, (3, 7, b"\xab" * 1000))
    src = Source("test", "t_blob", ["id", "counter", "b"])
    # noblob: BI = PKE + non-blob columns, AI = changed + non-blob columns; the blob is absent
    result = replay(target, current, [src.update({"id": 3, "counter": 7}, {"id": 3, "counter": 8})])
    assert table_of(result, current, target) == [(3, 8, b"\xab" * 1000)]


def test_full_nodup_full_before_image_changed_columns_after_image():
    target = target_from_ddl(PK)
    current = rows(target, (1, "alpha", 10))
    src = Source("test", "t", ["id", "name", "qty"])
    result = replay(target, current, [src.update({"id": 1, "name": "alpha", "qty": 10}, {"qty": 11})])
    assert table_of(result, current, target) == [(1, "alpha", 11)]


def test_columns_mapped_by_ordinal_without_names_and_extra_master_columns_ignored():
    target = target_from_ddl("CREATE TABLE test.t (id int PRIMARY KEY, v int, extra int DEFAULT 5)")
    master = Source("test", "t", ["id", "v"], names=False)
    result = replay(target, [], [master.insert({"id": 1, "v": 2})])
    assert table_of(result, [], target) == [(1, 2, 5)]
    # without names the mapping is positional, as on a replica: master ordinal 2 feeds the
    # target's third column, ordinal 3 (beyond the target's columns) is ignored
    wider = Source("test", "t", ["id", "v", "m1", "m2"], names=False)
    result = replay(target, [], [wider.insert({"id": 1, "v": 2, "m1": 3, "m2": 4})])
    assert table_of(result, [], target) == [(1, 2, 3)]


def test_named_master_columns_missing_on_the_target_are_ignored():
    target = target_from_ddl("CREATE TABLE test.t (id int PRIMARY KEY, v int, extra int DEFAULT 5)")
    master = Source("test", "t", ["id", "m1", "v", "m2"])
    result = replay(target, [], [master.insert({"id": 1, "m1": 9, "v": 2, "m2": 9})])
    assert table_of(result, [], target) == [(1, 2, 5)]


def test_columns_mapped_by_declared_source_names_when_table_map_has_none():
    target = target_from_ddl("CREATE TABLE test.t (id int PRIMARY KEY, v int)",
                             source_columns=["v", "gone", "id"])
    master = Source("test", "t", ["v", "gone", "id"], names=False)
    result = replay(target, [], [master.insert({"v": 7, "gone": 0, "id": 1})])
    assert table_of(result, [], target) == [(1, 7)]


def test_replay_is_deterministic_for_the_same_batch():
    target = target_from_ddl(PK)
    src = Source("test", "t", ["id", "name", "qty"])
    changes = [src.insert({"id": i, "name": "n", "qty": i}) for i in range(3)]
    first, second = replay(target, [], changes), replay(target, [], changes)
    assert [u.to_record() for u in first.upserts] == [u.to_record() for u in second.upserts]
    assert all(ROW_ID_COLUMN in u.to_record() and "_lineage" in u.to_record() for u in first.upserts)

"""The position index (libs/apply/position_index.py): `_row_id` -> (file, row index) at one Delta
version; a batch's deletion vectors from it; a commit applied; when it must be read again."""
import pytest

from libs.apply.position_index import DuplicateRowId, PositionIndex, Positions

# Two files: a holds rows 1, 2, 3 at 0, 1, 2; b holds 4 at 0 and 5 at 3 (rows 1, 2 of b deleted).
STORED = Positions(["1", "2", "3", "4", "5"], ["a", "a", "a", "b", "b"], [0, 1, 2, 0, 3])


def index() -> PositionIndex:
    return PositionIndex(7, STORED)


@pytest.mark.parametrize("upserts, deletes, expected", [
    ([], [], {}),
    (["9"], [], {}),  # a new row: nothing stored to mark
    (["3", "1"], [], {"a": [0, 2]}),  # sorted per file
    (["5"], ["2"], {"b": [3], "a": [1]}),
    (["9", "4"], ["1", "5"], {"b": [0, 3], "a": [0]}),
    ([], ["8"], None),  # a delete of a row the index does not know
    (["1"], ["1"], None),  # one row id twice
    (["1", "1"], [], None),
])
def test_touched_rows_by_file(upserts, deletes, expected):
    assert index().touched(upserts, deletes) == expected


@pytest.mark.parametrize("row_id, expected", [("1", ("a", 0)), ("5", ("b", 3)), ("6", None)])
def test_position(row_id, expected):
    assert index().position(row_id) == expected


@pytest.mark.parametrize("latest, valid", [(7, True), (8, False), (6, False), (None, False)])
def test_valid_only_at_its_version(latest, valid):
    assert index().valid_at(latest) is valid


def test_a_commit_moves_updated_rows_drops_deleted_ones_and_adds_new_ones():
    idx = index()
    # the batch: 1 updated, 4 deleted, 9 inserted; its new file c holds the images of 1 and 9
    idx.apply_commit(8, removed=["1", "4"], added=Positions(["9", "1"], ["c", "c"], [0, 1]))
    assert idx.version == 8 and idx.valid_at(8) and not idx.valid_at(7)
    assert [idx.position(r) for r in ("1", "2", "3", "4", "5", "9")] == [
        ("c", 1), ("a", 1), ("a", 2), None, ("b", 3), ("c", 0)]
    assert len(idx) == 5 and "4" not in idx and "9" in idx
    assert idx.touched(["1"], ["9"]) == {"c": [0, 1]}


def test_a_row_id_stored_twice_is_refused():
    with pytest.raises(DuplicateRowId):
        PositionIndex(0, Positions(["1", "1"], ["a", "b"], [0, 0]))
    with pytest.raises(DuplicateRowId):  # a commit adding a row it did not remove
        index().apply_commit(8, removed=[], added=Positions(["2"], ["c"], [0]))


def test_columns_of_different_lengths_are_refused():
    with pytest.raises(ValueError):
        PositionIndex(0, Positions(["1", "2"], ["a"], [0, 1]))


def test_an_empty_table():
    idx = PositionIndex(0)
    assert len(idx) == 0 and idx.touched(["1"], []) == {} and idx.touched([], ["1"]) is None


def test_placed_rows_are_those_it_holds():
    assert index().placed(["5", "9", "1"]) == {"5": ("b", 3), "1": ("a", 0)}
    assert index().placed([]) == {}


def test_positions_as_a_read_gives_them_column_wise_with_numbered_files():
    import numpy as np
    import pyarrow as pa
    read = Positions(pa.array(["1", "2", "3", "4", "5"]), np.array([0, 0, 0, 1, 1]),
                     np.array([0, 1, 2, 0, 3]), ["a", "b"])
    idx = PositionIndex(7, read)
    assert [idx.position(r) for r in ("1", "4", "5", "6")] == [("a", 0), ("b", 0), ("b", 3), None]
    assert idx.touched(["5"], ["2"]) == index().touched(["5"], ["2"])


@pytest.mark.parametrize("asked", ["12", "1" * 40, "", "1\u00e9"])
def test_an_id_longer_or_shorter_than_the_stored_ones_is_not_taken_for_one(asked):
    # the stored ids are one character wide: a longer one must not match its cut first character
    assert PositionIndex(0, STORED).position(asked) is None
    assert asked not in PositionIndex(0, STORED)


def test_wider_ids_added_later_keep_the_narrow_ones_findable():
    idx = index()
    idx.apply_commit(8, removed=["2"], added=Positions(["2" * 40, "\u00e9t\u00e9"], ["c", "c"], [0, 1]))
    assert [idx.position(r) for r in ("1", "2", "2" * 40, "\u00e9t\u00e9", "5")] == [
        ("a", 0), None, ("c", 0), ("c", 1), ("b", 3)]
    assert len(idx) == 6

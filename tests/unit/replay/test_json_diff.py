"""Partial JSON updates: the diff representation and JSON_SET/REPLACE/INSERT/REMOVE semantics."""

import json

import pytest

from libs.replay import apply_json_diff, encode_json_diff, replay
from libs.replay.json_diff import JsonDiffError, parse_path
from replay_builders import Source, rows, target_from_ddl

DOC = json.dumps({"a": [1, {"b": 2}], "c": "x"})


def _apply(*ops):
    return json.loads(apply_json_diff(DOC, encode_json_diff(list(ops))))


def test_paths():
    assert parse_path('$.a[1].b') == ["a", 1, "b"]
    assert parse_path('$."odd key"[0]') == ["odd key", 0]
    with pytest.raises(JsonDiffError):
        parse_path("a.b")


def test_replace_only_existing():
    assert _apply({"op": "replace", "path": "$.a[1].b", "value": 7})["a"][1]["b"] == 7
    assert "z" not in _apply({"op": "replace", "path": "$.z", "value": 1})


def test_set_replaces_or_adds_and_appends_past_array_end():
    doc = _apply({"op": "set", "path": "$.c", "value": "y"}, {"op": "set", "path": "$.n", "value": None},
                 {"op": "set", "path": "$.a[9]", "value": 3})
    assert doc == {"a": [1, {"b": 2}, 3], "c": "y", "n": None}


def test_insert_only_absent_and_remove():
    doc = _apply({"op": "insert", "path": "$.c", "value": "no"},
                 {"op": "insert", "path": "$.a[1].d", "value": 4},
                 {"op": "remove", "path": "$.a[0]"}, {"op": "remove", "path": "$.missing.x"})
    assert doc == {"a": [{"b": 2, "d": 4}], "c": "x"}


def test_diff_on_sql_null_stays_null_and_bad_ops_raise():
    assert apply_json_diff(None, encode_json_diff([{"op": "set", "path": "$.a", "value": 1}])) is None
    with pytest.raises(JsonDiffError):
        apply_json_diff(DOC, encode_json_diff([{"op": "merge", "path": "$"}]))


def test_update_applies_the_diff_to_the_current_value():
    target = target_from_ddl("CREATE TABLE test.t (id int PRIMARY KEY, j json, n int)")
    current = rows(target, (1, DOC, 5))
    src = Source("test", "t", ["id", "j", "n"])
    diff = encode_json_diff([{"op": "replace", "path": "$.a[1].b", "value": 3}])
    result = replay(target, current, [src.update({"id": 1}, {"j": diff})])
    assert json.loads(result.upserts[0].values["j"]) == {"a": [1, {"b": 3}], "c": "x"}
    assert result.upserts[0].values["n"] == 5


def test_binlog_diffs_from_the_codec_become_marked_text():
    from collections import namedtuple

    from libs.replay.json_diff import text_of_binlog_diffs

    Diff = namedtuple("Diff", "operation path value")  # shape of libs/binlog/rows_partial.py JsonDiff
    text = text_of_binlog_diffs([Diff("replace", "$.c", '"y"'), Diff("insert", "$.a[0]", "0"),
                                 Diff("remove", "$.a[2].b", None)])
    assert json.loads(apply_json_diff(DOC, text)) == {"a": [0, 1, {}], "c": "y"}

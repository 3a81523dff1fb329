"""libs/tables/commit_marks.py: the batch marks of idempotent appends."""
from __future__ import annotations

import json

from libs.tables.commit_marks import last_marked_batch, mark, marked_batch, parse_mark


def test_a_mark_names_its_app_and_batch():
    text = mark("cdc-replicate:_cdc_progress", 7)
    assert json.loads(text) == {"cdc_app_id": "cdc-replicate:_cdc_progress", "cdc_batch_id": 7}
    assert parse_mark(text) == ("cdc-replicate:_cdc_progress", 7)
    assert marked_batch(text, "cdc-replicate:_cdc_progress") == 7
    assert marked_batch(text, "cdc-replicate:_cdc_change_log") is None


def test_other_metadata_is_not_a_mark():
    for text in (None, "", "nightly backfill", "[1, 2]", '{"cdc_app_id": "a"}',
                 '{"cdc_app_id": "a", "cdc_batch_id": "3"}', '{"cdc_app_id": "a", "cdc_batch_id": true}',
                 '{"cdc_app_id": 5, "cdc_batch_id": 3}'):
        assert parse_mark(text) is None, text


def test_the_newest_mark_of_the_app_wins():
    history = [None, mark("other", 40), "manual fix", mark("app", 12), mark("app", 11), mark("app", 30)]
    assert last_marked_batch(history, "app") == 12
    assert last_marked_batch(history, "other") == 40
    assert last_marked_batch(history, "absent") is None
    assert last_marked_batch([], "app") is None

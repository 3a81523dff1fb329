"""libs/stream/assembler/release_log.py: releases of batch N are handed out only to a later batch, once,
survive a restart (files), and a rewritten batch (replay) keeps one copy."""

import os

import pytest

from libs.stream.assembler.file_spill import FileSpillStore
from libs.stream.assembler.release_log import Release, ReleaseLog
from tests.unit.stream.test_file_spill import private_modes


def test_the_log_is_0600_files_in_0700_directories_under_the_usual_umask(tmp_path):
    old = os.umask(0o022)
    try:
        ReleaseLog(tmp_path / "ckpt" / "spill_releases").record(3, [Release("s1", "0-1-7", 2)])
    finally:
        os.umask(old)
    modes = private_modes(tmp_path / "ckpt")
    assert len(modes) == 3 and {p: (got, want) for p, (got, want) in modes.items() if got != want} == {}


def test_releases_wait_for_a_later_batch_and_go_once_forgotten(tmp_path):
    log = ReleaseLog(tmp_path / "releases")
    assert log.pending_before(5) == []  # no directory yet
    log.record(3, [Release("s1", "0-1-7", 2)])
    log.record(4, [])  # nothing released: no file
    log.record(10, [Release("s1", "0-1-9", 1), Release("s2", "k", 4)])
    assert log.pending_before(3) == []
    assert log.pending_before(4) == [(3, [Release("s1", "0-1-7", 2)])]
    again = ReleaseLog(tmp_path / "releases")  # a new process sees the same
    assert [b for b, _ in again.pending_before(11)] == [3, 10]
    again.forget(3)
    again.forget(3)  # a crash between delete and forget repeats it: harmless
    assert again.pending_before(11) == [(10, [Release("s1", "0-1-9", 1), Release("s2", "k", 4)])]


def test_a_replayed_batch_overwrites_its_record(tmp_path):
    log = ReleaseLog(tmp_path)
    log.record(7, [Release("s", "a", 1)])
    log.record(7, [Release("s", "a", 1)])
    assert log.pending_before(8) == [(7, [Release("s", "a", 1)])]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["00000000000000000007.json"]


def test_an_unreadable_record_names_its_file(tmp_path):
    (tmp_path / "00000000000000000002.json").write_text("{not json")
    with pytest.raises(ValueError, match="00000000000000000002.json"):
        ReleaseLog(tmp_path).pending_before(3)


def test_chunks_released_by_batch_n_are_deleted_when_batch_n_plus_1_starts(tmp_path):
    store, log = FileSpillStore(tmp_path / "spill"), ReleaseLog(tmp_path / "releases")
    for chunk in range(2):
        store.put("s1", "0-1-7", chunk, b"x")
    store.put("s1", "0-1-8", 0, b"y")  # still open: never released
    log.record(3, [Release("s1", "0-1-7", 2)])
    assert log.delete_before(3, store) == 0 and store.chunk_count() == 3  # batch 3 replayed
    assert log.delete_before(4, store) == 1 and store.chunk_count() == 1
    assert store.get("s1", "0-1-8", 0) == b"y" and log.pending_before(10) == []

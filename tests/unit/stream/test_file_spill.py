import os
import stat

from libs.stream.assembler.file_spill import FileSpillStore
from libs.stream.assembler.spill import InMemorySpillStore

import pytest


def private_modes(top):
    """{path: mode} of `top` and everything under it: 0o700 for directories, 0o600 for files is
    what the spill (raw row images of open transactions) and its release log must show."""
    paths = [top, *top.rglob("*")]
    return {p: (stat.S_IMODE(p.stat().st_mode), 0o700 if p.is_dir() else 0o600) for p in paths}


@pytest.mark.parametrize("umask", [0o022, 0o000], ids=["umask-022", "umask-000"])
def test_chunks_are_0600_in_0700_directories_whatever_the_umask(tmp_path, umask):
    checkpoint = tmp_path / "ckpt"  # created by the store too, like a first run's checkpoint
    old = os.umask(umask)
    try:
        store = FileSpillStore(checkpoint / "spill")
        store.put("src/1", "f.000001:400", 0, b"row images")
        store.put("src/1", "f.000001:400", 0, b"row images")  # a retried batch's rewrite
        store.put("src/2", "f.000002:4", 1, b"more")
    finally:
        os.umask(old)
    modes = private_modes(checkpoint)
    assert sum(p.suffix == ".chunk" for p in modes) == 2 and len(modes) == 2 + 6
    assert {p: (got, want) for p, (got, want) in modes.items() if got != want} == {}


def test_put_get_delete_and_idempotent_rewrite(tmp_path):
    store = FileSpillStore(tmp_path)
    store.put("src/1", "f.000001:400", 0, b"abc")
    store.put("src/1", "f.000001:400", 0, b"abc")  # a retried batch writes the same chunk again
    store.put("src/1", "f.000001:400", 1, b"def")
    assert store.get("src/1", "f.000001:400", 1) == b"def"
    assert store.chunk_count() == 2
    store.delete("src/1", "f.000001:400", 2)
    assert store.chunk_count() == 0
    with pytest.raises(KeyError, match="chunk 0 of f.000001:400"):
        store.get("src/1", "f.000001:400", 0)


def test_source_ids_cannot_escape_the_root(tmp_path):
    store = FileSpillStore(tmp_path / "root")
    store.put("../../etc", "../x", 0, b"z")
    assert all(str(p).startswith(str(tmp_path / "root")) for p in (tmp_path / "root").rglob("*"))


def test_same_protocol_as_the_in_memory_store(tmp_path):
    for store in (FileSpillStore(tmp_path), InMemorySpillStore()):
        store.put("s", "k", 0, b"1")
        assert store.get("s", "k", 0) == b"1"


@pytest.mark.parametrize("source, trx_key", [("..", ".."), (".", "."), ("", ""), ("..", "x"),
                                             ("s", "..")])
def test_dot_names_stay_inside_the_root_and_delete_removes_nothing_outside(tmp_path, source, trx_key):
    root = tmp_path / "a" / "b" / "root"
    sibling = tmp_path / "a" / "b" / "keep.txt"
    sibling.parent.mkdir(parents=True)
    sibling.write_text("outside the spill root")
    store = FileSpillStore(root)
    store.put("other", "k", 0, b"other source")
    store.put(source, trx_key, 0, b"z")
    assert store.get(source, trx_key, 0) == b"z"
    assert [p.relative_to(tmp_path) for p in tmp_path.rglob("*.chunk")
            if not p.is_relative_to(root)] == []
    store.delete(source, trx_key, 1)
    assert sibling.read_text() == "outside the spill root"
    assert store.get("other", "k", 0) == b"other source"
    with pytest.raises(KeyError):
        store.get(source, trx_key, 0)


def test_distinct_names_get_distinct_directories(tmp_path):
    store = FileSpillStore(tmp_path)
    names = ["", ".", "..", "%2E", "%2E%2E", "%", "...", "a/b", "a%2Fb", "x" * 300, "x" * 301]
    for i, name in enumerate(names):
        store.put(name, name, 0, bytes([i]))
    assert [store.get(n, n, 0) for n in names] == [bytes([i]) for i in range(len(names))]
    assert all(len(p.name) <= 255 for p in tmp_path.rglob("*"))

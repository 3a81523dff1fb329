from libs.assembler.file_spill import FileSpillStore
from libs.assembler.spill import InMemorySpillStore

import pytest


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

"""The compiled row-image decoders (rows_images._compile_image: inline ints/strings, merged runs,
no-NULL fast path) give exactly what the reference per-column loop
(rows_images.loop_image_decoder) gives, on every
rows event of a spread of corpus files."""
from __future__ import annotations

import libs.binlog.rows as rows_mod
import libs.binlog.rows_images as images_mod
from libs.binlog import BinlogError, iter_events
from libs.runtime.paths import CORPUS_DIR

CORPUS = CORPUS_DIR
FILES = sorted(p for d in ("mariadb/all_types", "mariadb/all_types_fullmeta", "mariadb/row_minimal",
                           "mariadb/row_noblob", "mariadb/misc", "mariadb/compressed",
                           "mysql/rust_mysql_common-test-data", "mysql/mysql-8.0.43")
               for p in (CORPUS / d).glob("*") if p.is_file() and p.stat().st_size < 3_000_000)


def _clear():
    for cache in (images_mod._image_cache, images_mod._codec_cache, images_mod._tm_images,
                  rows_mod._bits_cache):
        cache.clear()


def _decode_all(paths) -> list:
    out = []
    for path in paths:
        data = path.read_bytes()
        if data[:4] != b"\xfebin":
            continue
        try:
            for ev in iter_events(data, file=path.name):
                if getattr(ev.body, "rows", None):
                    out.append((path.name, ev.pos, ev.body.rows))
        except BinlogError as err:
            out.append((path.name, "error", err.kind, err.pos))
    return out


def test_compiled_equals_reference(monkeypatch):
    # the Python decoders only: the C core (rows_core.py) has its own test, test_row_core.py
    monkeypatch.setattr(rows_mod, "_changes", rows_mod._read_changes)
    _clear()
    compiled = _decode_all(FILES)
    _clear()
    monkeypatch.setattr(images_mod, "_compile_image",
                        lambda present, decoders, key: images_mod.loop_image_decoder(present, decoders))
    try:
        reference = _decode_all(FILES)
    finally:
        _clear()
    assert sum(len(r[2]) for r in compiled if r[1] != "error") > 1000
    assert compiled == reference

"""Every binlog file of the corpus through the shipper's file reader: shipped whole (its frames
rebuild the file byte for byte), or refused with a typed error naming the file, for the reason
REFUSED_BY_SHIPPER records. Guards both ways: a real server's file is never refused by
mistake, a broken one is never shipped."""
from libs.binlog.constants import BINLOG_MAGIC
from libs.runtime.paths import CORPUS_DIR
from libs.source import errors
from libs.shipper.file_source import Inputs, iter_file_events
from tests.integration.replicate.corpus_files import (
    NOT_SHIPPABLE, REFUSED_BY_SHIPPER, corpus_binlogs,
)


def test_every_corpus_file_is_shipped_whole_or_refused_for_its_recorded_reason():
    refused, shipped = {}, 0
    for rel in corpus_binlogs():
        path = CORPUS_DIR / rel
        frames = []
        try:
            frames = [frame for _, _, frame in iter_file_events(Inputs([path]), "s")]
        except errors.ShipError as exc:
            assert f"file {path.name}" in str(exc)
            refused[rel] = exc
            continue
        assert BINLOG_MAGIC + b"".join(frames) == path.read_bytes(), rel
        shipped += 1
    assert sorted(refused) == sorted([*REFUSED_BY_SHIPPER, *NOT_SHIPPABLE])
    for rel, why in REFUSED_BY_SHIPPER.items():
        kind = why.split(":")[0]
        assert type(refused[rel]).__name__ == kind, (rel, refused[rel])
    assert shipped > 90

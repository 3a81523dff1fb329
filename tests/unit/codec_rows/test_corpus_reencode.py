"""Byte-exact re-encoding: encode(decode(body)) == body for every Table_map and rows event of
the MariaDB scenario files and of every MySQL test-suite / rust_mysql_common binlog."""
import pytest

from libs.binlog.rows import encode_rows
from libs.binlog.tablemap import encode_table_map

from .corpus import CORPUS, MARIADB, context_for, decoded_events, temporal_old_context

# Not readable by a plain frame walk: an encrypted binlog (no magic) and a MySQL 5.1 pre-GA
# file whose 6-byte Table_map post-header needs the file's own FDE table (the framing layer's job).
NOT_WALKABLE = {"rpl_nogtid_encryption_master-bin.000002", "ver_5_1-wl2325_r.001"}
MYSQL_FILES = sorted(
    p for p in (CORPUS / "mysql").rglob("*")
    if p.is_file() and not p.name.endswith((".txt", ".json", ".gz")) and p.name not in NOT_WALKABLE)
MARIADB_FILES = sorted(p for p in MARIADB.glob("*/mdb-bin.0000[0-9][0-9]") if p.name != "mdb-bin.000010")


def _reencode_all(path, limit=None):
    ctx = temporal_old_context(path) if path.parent.name == "temporal_old" else context_for(path)
    count = 0
    for frame, record in decoded_events(path, ctx, limit):
        encoded = (encode_rows(frame.type_code, record, ctx) if hasattr(record, "rows")
                   else encode_table_map(record, ctx))
        assert encoded == frame.body, f"{path.name} @ {frame.pos} type {frame.type_code}"
        count += 1
    return count


@pytest.mark.parametrize("path", MARIADB_FILES, ids=lambda p: p.parent.name + "/" + p.name)
def test_mariadb_events_reencode_byte_exact(path):
    expected_some = path.parent.name != "mixed_stmt" or path.name.endswith("8")
    assert (_reencode_all(path) > 0) == expected_some


def test_small_trx_file_sample_reencodes_byte_exact():
    assert _reencode_all(MARIADB / "big_trx" / "mdb-bin.000010", limit=2000) > 2000


@pytest.mark.parametrize("path", MYSQL_FILES, ids=lambda p: str(p.relative_to(CORPUS / "mysql")))
def test_mysql_events_reencode_byte_exact(path):
    _reencode_all(path)  # files without row events pass trivially; the count below guards that


def test_mysql_corpus_has_row_events_to_reencode():
    assert sum(_reencode_all(p) for p in MYSQL_FILES) > 150

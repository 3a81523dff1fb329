"""binlog-dump text output against the MariaDB corpus oracles (in-process).

Normalisation (documented in libs/dump/text_format.py): we compare three line families as
whole sequences - `# at POS`, every `###` row line, and the `#Q>` Annotate_rows lines - because
mariadb-binlog prints an Annotate_rows after the next Table_map's `# at` line, and its other
lines (SET @@session..., BINLOG) are replay SQL this tool does not print."""
from __future__ import annotations

import pytest

from .oracle import MARIADB, families, oracle_lines, oracle_prefix, our_lines

SMALL = ["row_full/mdb-bin.000001", "row_minimal/mdb-bin.000002", "row_noblob/mdb-bin.000003",
         "all_types/mdb-bin.000004", "all_types_fullmeta/mdb-bin.000005",
         "mixed_stmt/mdb-bin.000007", "mixed_stmt/mdb-bin.000008",
         "compressed/mdb-bin.000011", "misc/mdb-bin.000012", "nochecksum/mdb-bin.000014"]
# The big_trx files (9.6 MB / 19.5 MB, 200k rows each) are compared on a prefix to keep the
# suite fast: every event before the stop position (see oracle_prefix for the rows lines).
PREFIXES = [("big_trx/mdb-bin.000009", 1_500_000), ("big_trx/mdb-bin.000010", 600_000)]


@pytest.mark.parametrize("name", SMALL)
def test_whole_file_matches_oracle(name):
    path = MARIADB / name
    ours, theirs = families(our_lines(path)), families(oracle_lines(path))
    assert theirs["at"], "oracle has no events"
    assert ours["at"] == theirs["at"]
    assert ours["rows"] == theirs["rows"]
    assert ours["annotate"] == theirs["annotate"]


@pytest.mark.parametrize("name,stop", PREFIXES)
def test_big_file_prefix_matches_oracle(name, stop):
    path = MARIADB / name
    ours = families(our_lines(path, stop))
    theirs = oracle_prefix(path, stop, len(ours["rows"]))
    assert len(ours["rows"]) > 10_000
    assert ours["at"] == theirs["at"]
    assert ours["rows"] == theirs["rows"]


def test_annotate_and_rows_present_in_row_full():
    ours = families(our_lines(MARIADB / "row_full" / "mdb-bin.000001"))
    assert len(ours["annotate"]) >= 61 and any(b"### UPDATE" in line for line in ours["rows"])

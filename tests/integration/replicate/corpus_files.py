"""Which corpus files the replicate integration test ships, and how its output is compared
with the oracle (binlog_oracle.py): every binlog file of the corpus with a decoder text next to
it, one source id per file (they are independent streams)."""
from __future__ import annotations

import collections
import os
import re

from libs.runtime.paths import CORPUS_DIR
from tests.integration.replicate.binlog_oracle import Oracle, normalise_statement, read_oracle

# big_trx: one 200,000-row transaction (9.6 MB) and 50,000 one-row transactions (19.5 MB). Both
# are covered without Spark (tests/unit/stream); through Spark they cost minutes on 2 cores.
EXCLUDED = {
    "mariadb/big_trx/mdb-bin.000009": "200k-row transaction: tests/unit/stream covers it",
    "mariadb/big_trx/mdb-bin.000010": "50k transactions, 19.5 MB: benchmark file, tests/unit/stream",
}
# The shipper refuses these before anything reaches Kafka (its own tests cover the messages):
NOT_SHIPPABLE = {
    "mysql/mysql-8.0.43/std_data/rpl_nogtid_encryption_master-bin.000002":
        "encrypted binlog (magic fd 62 69 6e)",
}
# The shipper refuses these part-way (tests/unit/shipper/test_corpus_shipping.py checks exactly
# where and why): a corrupt or truncated file is an error, not a warning. The replicate test
# still feeds their complete frames to the topic, as a producer that does not verify would
# (a frame corrupted after the shipper), so the job's quarantine path is exercised on them.
REFUSED_BY_SHIPPER = {
    **{f"mysql/mysql-{v}/std_data/{name}": why for v in ("5.7.22", "8.0.43") for name, why in (
        ("binlog_no_fd_event.000001", "FrameError: event type 48 before any Format_description"),
        ("binlog_truncated_event.000001", "IncompleteFileError: 10 bytes after the magic"),
        ("binlog_truncated_prev_gtid_event.000001", "IncompleteFileError: 9-byte tail"),
    )},
    **{f"mysql/mysql-8.0.43/std_data/binlog_recovery/{name}.000001": "FrameError: CRC32 mismatch"
       for name in ("duplicate_xid", "duplicate_xid_ddl", "duplicate_xid_xa_prepare",
                    "malformed_xid_xa_commit", "malformed_xid_xa_rollback")},
}
_DATA = re.compile(r"\.(vv\.txt|txt|gz|json|tsv|sql)$")


def corpus_binlogs() -> list[str]:
    """Relative paths of every binlog file with an oracle, sorted."""
    out = []
    for root, _, names in os.walk(CORPUS_DIR):
        for name in names:
            rel = os.path.relpath(os.path.join(root, name), CORPUS_DIR)
            if _DATA.search(name) or "/tables/" in rel or rel.startswith(("bench/", "scripts/")):
                continue
            if any(os.path.exists(os.path.join(root, name) + s)
                   for s in (".vv.txt", ".vv.txt.gz", ".mariadb-binlog.vv.txt")):
                out.append(rel)
    if not out:
        raise FileNotFoundError(f"no corpus binlogs under {CORPUS_DIR}")
    return sorted(out)


def source_id(rel: str) -> str:
    return rel.replace("/", "__")


def our_transactions(changes: list[dict]) -> dict[int, tuple[str | None, tuple]]:
    """Change records of one source -> {trx_end_pos: (gtid, changes as the oracle spells them)}."""
    by_trx = collections.defaultdict(list)
    for c in changes:
        by_trx[(c["trx_id"], c["trx_end_pos"])].append(c)
    out = {}
    for (_, end), recs in by_trx.items():
        recs.sort(key=lambda c: c["change_seq"])
        spelled = tuple((c["database"], c["table"], c["op"], c["statement"])
                        if c["op"] in ("insert", "update", "delete")
                        else (None, None, "statement", normalise_statement(c["statement"])) for c in recs)
        assert end not in out, f"two transactions end at {end}"
        out[end] = (recs[0]["gtid"], spelled)
    return out


def differences(rel: str, oracle: Oracle, changes: list[dict], quarantined: set[int]) -> list[str]:
    """What differs between our output for one file and its oracle ([] when equal)."""
    limit = oracle.covered_until
    ours = {end: v for end, v in our_transactions(changes).items() if limit is None or end <= limit}
    expected = {t.end: (t.gtid, t.changes) for t in oracle.transactions if t.changes}
    problems = []
    for end in sorted(set(ours) | set(expected)):
        if end not in ours:
            problems.append(f"{rel}: missing transaction ending at {end}: {expected[end][1][:3]}")
        elif end not in expected:
            problems.append(f"{rel}: unexpected transaction ending at {end}: {ours[end][1][:3]}")
        else:
            (g1, c1), (g2, c2) = ours[end], expected[end]
            if g2 is not None and g1 != g2:
                problems.append(f"{rel}: transaction ending at {end}: GTID {g1} != oracle {g2}")
            if c1 != c2:
                diff = next(((a, b) for a, b in zip(c1, c2) if a != b), (len(c1), len(c2)))
                problems.append(f"{rel}: transaction ending at {end}: changes differ: {diff}")
    q = {p for p in quarantined if limit is None or p < limit}
    if q != oracle.quarantined:
        problems.append(f"{rel}: quarantine positions: extra {sorted(q - oracle.quarantined)}, "
                        f"missing {sorted(oracle.quarantined - q)}")
    return problems


def oracle_of(rel: str) -> Oracle:
    return read_oracle(str(CORPUS_DIR / rel))

"""Corpus helpers for the codec tests: file lists and oracle parsers (corpus/README.md)."""
from __future__ import annotations

import gzip
import os
import re
from pathlib import Path
from libs.runtime.paths import CORPUS_DIR

CORPUS = Path(os.environ.get("BINLOG_CORPUS", str(CORPUS_DIR)))
MARIADB = CORPUS / "mariadb"
MYSQL = CORPUS / "mysql"
_ORACLE_SUFFIXES = (".txt", ".gz", ".tsv", ".json", ".sql", ".md")

# Deliberately broken MySQL test files -> (error kind, position, events decoded before it).
BROKEN = {
    "std_data/binlog_no_fd_event.000001": ("no_format_description", 4, 0),
    "std_data/binlog_truncated_event.000001": ("truncated", 4, 0),
    "std_data/binlog_truncated_prev_gtid_event.000001": ("truncated", 120, 1),
    "std_data/bug40482-bin.000001": ("malformed", 106, 1),  # INCIDENT number 66 (rpl_binlog_corruption)
    "std_data/corrupt-relay-bin.000624": ("malformed", 91204, 872),  # garbage Query post-header
    # binlog_recovery files whose XIDs were edited by hand without fixing the CRC32
    "std_data/binlog_recovery/duplicate_xid.000001": ("checksum", 672, 11),
    "std_data/binlog_recovery/duplicate_xid_ddl.000001": ("checksum", 507, 8),
    "std_data/binlog_recovery/duplicate_xid_xa_prepare.000001": ("checksum", 884, 13),
    "std_data/binlog_recovery/malformed_xid_xa_commit.000001": ("checksum", 889, 14),
    "std_data/binlog_recovery/malformed_xid_xa_rollback.000001": ("checksum", 889, 14),
    "std_data/rpl_nogtid_encryption_master-bin.000002": ("unsupported", 0, 0),
}


def binlog_files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.is_file() and p.suffix not in _ORACLE_SUFFIXES
                  and not p.name.endswith(_ORACLE_SUFFIXES))


def mysql_key(path: Path) -> str:
    rel = path.relative_to(MYSQL).as_posix()
    return rel.split("/", 1)[1]


def read_text(path: Path) -> str:
    if path.suffix == ".gz":
        with gzip.open(path, "rt", encoding="utf-8", errors="surrogateescape") as fh:
            return fh.read()
    return path.read_text(encoding="utf-8", errors="surrogateescape")


def oracle(path: Path, suffix: str) -> Path | None:
    for cand in (path.with_name(path.name + suffix), path.with_name(path.name + suffix + ".gz")):
        if cand.exists():
            return cand
    return None


_UNESCAPE = {"n": "\n", "t": "\t", "\\": "\\", "0": "\0"}


def show_binlog_events(path: Path) -> list[dict]:
    """Rows of SHOW BINLOG EVENTS (mariadb -B: \\n \\t \\\\ \\0 escaped)."""
    rows = []
    text = read_text(oracle(path, ".show_binlog_events.tsv"))
    for line in text.split("\n")[1:]:
        parts = line.split("\t")
        if len(parts) >= 6 and parts[1].isdigit():
            info = re.sub(r"\\(.)", lambda m: _UNESCAPE.get(m[1], m[1]), "\t".join(parts[5:]))
            rows.append(dict(pos=int(parts[1]), type=parts[2], server_id=int(parts[3]),
                             end=int(parts[4]), info=info))
        elif rows and line:
            rows[-1]["info"] += "\n" + line
    return rows


_AT = re.compile(r"^# at (\d+)$", re.M)
_HDR = re.compile(r"^#\d{6} +\d+:\d\d:\d\d server id (\d+) +end_log_pos (\d+)")


def vv_positions(path: Path) -> list[tuple[int, int | None, int | None]]:
    """(pos, server_id, end_log_pos) per `# at POS` of a mariadb-binlog -vv output."""
    text = read_text(oracle(path, ".mariadb-binlog.vv.txt"))
    out = []
    for m in _AT.finditer(text):
        nxt = text[m.end() + 1:m.end() + 200].split("\n", 1)[0]
        h = _HDR.match(nxt)
        out.append((int(m[1]), int(h[1]) if h else None, int(h[2]) if h else None))
    return out

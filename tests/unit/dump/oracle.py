"""Helpers: our text dump and the corpus oracle (`mariadb-binlog --no-defaults -vv
--base64-output=decode-rows FILE`) reduced to the line families that must agree exactly."""
from __future__ import annotations

import gzip
from pathlib import Path

from libs.binlog.context import DecodeContext
from libs.dump.text_format import dump_text
from libs.dump.walk import walk
from libs.runtime.paths import CORPUS_DIR

CORPUS = CORPUS_DIR
MARIADB = CORPUS / "mariadb"


def oracle_path(path: Path) -> Path:
    for name in (path.name + ".vv.txt", path.name + ".vv.txt.gz"):
        if (path.parent / name).exists():
            return path.parent / name
    raise FileNotFoundError(path)


def oracle_lines(path: Path):
    """Oracle lines as bytes, streamed (the big oracles are ~100 MB uncompressed)."""
    p = oracle_path(path)
    opener = gzip.open if p.suffix == ".gz" else open
    with opener(p, "rb") as fh:
        for raw in fh:
            yield raw.rstrip(b"\n")


def oracle_prefix(path: Path, stop: int, n_rows: int) -> dict[str, list[bytes]]:
    """The oracle's `# at` lines before `stop` and its first `n_rows` `###` lines.
    mariadb-binlog prints the `###` lines of a statement's rows events only after the event
    carrying STMT_END_F (all `# at` lines of the statement come first), so the rows printed for
    the events before `stop` are a prefix of the oracle's `###` sequence, not a position cut."""
    out: dict[str, list[bytes]] = {"at": [], "rows": [], "annotate": []}
    for line in oracle_lines(path):
        if line.startswith(b"# at ") and int(line[5:]) < stop:
            out["at"].append(line)
        elif line.startswith(b"###") and len(out["rows"]) < n_rows:
            out["rows"].append(line)
        elif len(out["rows"]) >= n_rows and line.startswith(b"# at ") and int(line[5:]) >= stop:
            break
    return out


def our_lines(path: Path, stop: int | None = None, ctx: DecodeContext | None = None):
    for line in dump_text(walk(path.read_bytes(), path.name, stop=stop, ctx=ctx)):
        yield line.encode("latin-1")


def families(lines) -> dict[str, list[bytes]]:
    """The compared line families: `# at` positions, `###` row lines, `#Q>` Annotate text."""
    out: dict[str, list[bytes]] = {"at": [], "rows": [], "annotate": []}
    for line in lines:
        if line.startswith(b"# at "):
            out["at"].append(line)
        elif line.startswith(b"###"):
            out["rows"].append(line)
        elif line.startswith(b"#Q> "):
            out["annotate"].append(line)
    return out

"""Test helpers: decode every Table_map / rows event of a corpus file with our decoders and
render rows the way `mariadb-binlog -vv` does, for line-by-line oracle comparison."""
from __future__ import annotations

import gzip
from pathlib import Path
from types import SimpleNamespace

from libs.binlog.context import DecodeContext
from libs.binlog.rows import KIND_BY_TYPE, decode_rows
from libs.binlog.tablemap import decode_table_map
from libs.dump.vv_format import format_column_vv

from .frames import walk
from libs.runtime.paths import CORPUS_DIR

CORPUS = CORPUS_DIR
MARIADB = CORPUS / "mariadb"
MYSQL_RUST = CORPUS / "mysql" / "rust_mysql_common-test-data"
TABLE_MAP = 19


def context_for(path: Path, flavour: str | None = None) -> DecodeContext:
    """A DecodeContext standing in for the framing layer's FDE (only flavour/checksum matter)."""
    if flavour is None:
        flavour = "mariadb" if "mariadb" in str(path) else "mysql"
    ctx = DecodeContext(file=str(path))
    ctx.fde = SimpleNamespace(checksum_alg=1, flavour=flavour, post_header_lengths=b"")
    return ctx


def decoded_events(path: Path, ctx: DecodeContext | None = None, limit: int | None = None):
    """Yield (frame, TableMap | Rows) for every Table_map and rows event, in file order."""
    ctx = ctx or context_for(path)
    count = 0
    for frame in walk(path):
        if frame.type_code == TABLE_MAP:
            tm = decode_table_map(frame.body, ctx)
            ctx.table_maps[tm.table_id] = tm
            yield frame, tm
        elif frame.type_code in KIND_BY_TYPE:
            yield frame, decode_rows(frame.type_code, frame.body, ctx)
            count += 1
            if limit is not None and count >= limit:
                return


def vv_lines_of_rows(rows, tm) -> list[bytes]:
    """The `###   @N=...` lines mariadb-binlog prints for one rows event, as bytes."""
    out = []
    for change in rows.rows:
        for image in (change.before, change.after):
            if image is None:
                continue
            for ordinal, value in image.items():
                line = format_column_vv(ordinal, value, tm.column_types[ordinal],
                                        tm.column_metas[ordinal], tm.nullable[ordinal])
                out.append(line.encode("latin-1"))
    return out


def oracle_lines(path: Path) -> list[bytes]:
    """All `###   @N=` lines of the -vv oracle of a binlog file, as bytes."""
    for name in (path.name + ".vv.txt", path.name + ".vv.txt.gz"):
        p = path.parent / name
        if p.exists():
            data = gzip.decompress(p.read_bytes()) if name.endswith(".gz") else p.read_bytes()
            return [line for line in data.split(b"\n") if line.startswith(b"###   @")]
    raise FileNotFoundError(path)


def our_lines(path: Path, ctx: DecodeContext | None = None, limit: int | None = None) -> list[bytes]:
    out = []
    ctx = ctx or context_for(path)
    for _frame, record in decoded_events(path, ctx, limit):
        if hasattr(record, "rows"):
            out.extend(vv_lines_of_rows(record, ctx.table_maps[record.table_id]))
    return out


# temporal_old: MariaDB 5.3-format TIME/DATETIME/TIMESTAMP(n) carry no fsp in the Table_map;
# the fsp per column comes from the workload's CREATE TABLE (configuration, see rows.py).
TEMPORAL_OLD_FSP = {
    ("temporal_old", "t_temporal_old"): {2: 3, 3: 6, 5: 3, 6: 6, 8: 3, 9: 6},
    ("temporal_old", "t_mixed_fmt_old"): {1: 6, 2: 6, 3: 6},
}


def temporal_old_context(path: Path) -> DecodeContext:
    ctx = context_for(path)
    ctx.old_temporal_fsp = TEMPORAL_OLD_FSP
    return ctx

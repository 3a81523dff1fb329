"""The corpus' all_types workload (MariaDB 10.11, every column type) decoded with the server's
SHOW CREATE TABLE as declarations and replayed (no Spark), compared cell by cell with the
server's own table dumps (tables/*.hex.tsv). Two files: binlog_row_metadata=NO_LOG, where the
declaration alone says UNSIGNED, charset, ENUM/SET labels and UUID/INET; and FULL, where the
Table_map says most of it. The cells allowed to differ are listed and explained."""
from __future__ import annotations

from operator import attrgetter

import gzip
import struct

import pytest

from libs.stream.assembler import InMemorySpillStore
from libs.binlog import iter_frames
from libs.binlog.charsets import encode_text
from libs.replay.engine import replay
from libs.stages.assembly import InputFrame, assemble_group
from tests.change_builders import decoded
from libs.targets.decoding import DecodeHints
from tests.unit.replay.replay_builders import mariadb_corpus

ZERO_DATE_CELLS = {  # zero / partial dates: NULL in Delta (zero_dates: to_null)
    ("t_date", "4", "dt"), ("t_date", "5", "dt"), *(("t_datetime", "4", f"dt{i}") for i in range(7)),
    ("t_datetime", "5", "dt0"), *(("t_timestamp", "4", f"ts{i}") for i in range(7)),
    ("t_timestamp", "4", "ts_def")}
# The manifest's SHOW CREATE TABLE was fetched over a latin1 connection: the label 😀 became '?'
# in the declaration, so a NO_LOG binlog (no labels of its own) can only give '?'.
MANGLED_DECLARATION = {("t_enum_set", "2", "e_utf8")}


def _cell(column, value) -> str:
    """A replayed value in the dump's rendering (HEX() of strings, binaries, ENUM/SET, BIT)."""
    if value is None:
        return "NULL"
    family = column.family
    if family in ("binary", "geometry"):
        return bytes(value).hex().upper()
    if family in ("string", "enum", "set"):
        return encode_text(value, column.charset).hex().upper()
    if family == "bit":
        return format(int(value), "X")
    if family in ("datetime", "timestamp"):
        text = value.strftime("%Y-%m-%d %H:%M:%S") + f".{value.microsecond:06d}"
        return text[:len(text) - 6 + column.fsp].rstrip(".")
    if family == "year" and value == 0:
        return "0000"
    if family == "decimal":
        return format(value, "f")
    return str(value)


def _same(column, ours: str, server: str) -> bool:
    if column.family in ("float", "double") and "NULL" not in (ours, server):
        if column.family == "float":  # the dump prints 6 significant digits
            return f"{float(ours):.6g}".replace("e+", "e") == f"{float(server):.6g}".replace("e+", "e") or \
                float(ours) == struct.unpack("<f", struct.pack("<f", float(server)))[0]
        return float(ours) == float(server)
    if column.family == "int" and server.isdigit():  # ZEROFILL: display only
        return int(ours) == int(server)
    return ours == server


def _dump(path):
    gz = path.with_name(path.name + ".gz")
    text = path.read_text() if path.exists() else gzip.open(gz, "rt").read()
    lines = text.splitlines()
    return (lines[0].split("\t"),
            {line.split("\t")[0]: line.split("\t") for line in lines[1:]}) if lines else ([], {})


@pytest.mark.parametrize("scenario,allowed", [("all_types", ZERO_DATE_CELLS | MANGLED_DECLARATION),
                                              ("all_types_fullmeta", ZERO_DATE_CELLS)])
def test_replayed_corpus_equals_the_server_tables(scenario, allowed):
    catalog, binlog, database = mariadb_corpus(scenario)
    base = binlog.parent
    frames = [InputFrame(raw, binlog.name, pos)
              for pos, raw in iter_frames(binlog.read_bytes(), file=binlog.name)]
    records, _ = assemble_group(scenario, None, frames, InMemorySpillStore())
    hints = DecodeHints(catalog.targets)
    changes = decoded(records, hints)
    differing, cells = set(), 0
    for target in catalog.targets:
        group = sorted((c for c in changes if (c.database, c.table) == (target.database, target.table)),
                       key=attrgetter("order"))
        rows = replay(target, [], group).final_table([])
        header, server = _dump(base / "tables" / f"{database}.{target.table}.hex.tsv")
        assert sorted(str(r["id"]) for r in rows) == sorted(server), target.table
        for row in rows:
            for i, name in enumerate(header):
                cells += 1
                column = target.column(name)
                if not _same(column, _cell(column, row[name]), server[str(row["id"])][i]):
                    differing.add((target.table, str(row["id"]), name))
    assert cells > 1000
    assert differing == allowed

"""`binlog-dump` on hostile but decodable input, built with the codec's encoders: real JSON text
(any Unicode), crafted identifiers, non-finite JSON doubles, events kept as bytes."""
from __future__ import annotations

import json
import struct

import pytest

from libs.binlog.constants import ColumnType as T
from libs.binlog.constants import EventType
from libs.binlog.json_binary import JsonText
from libs.binlog import RowChange, Rows, TableMap
from pipelines.dump import main as dump_main
from tests.unit.codec_fuzz.hostile import (MYSQL8_FILE, PRE_GA_FILE, binlog_file,
                                           context_after_fde, frame, table_map)


def one_row_file(tmp_path, table: str, column_type: int, meta: int, value) -> tuple[str, int]:
    """A MySQL 8 binlog: the corpus FDE, a Table_map of `d`.`table` (one column), one
    Write_rows of `value`; (path, position of the Write_rows)."""
    ctx, fde = context_after_fde(MYSQL8_FILE)
    tm = TableMap(7, 1, "d", table, (column_type,), (meta,), (True,))
    tm_frame = table_map(ctx, tm)
    ctx.table_maps[7] = tm
    rows = Rows("insert", 7, 1, b"", 1, None, (True,), (RowChange(None, {0: value}),),
                type_code=EventType.WRITE_ROWS)
    data, positions = binlog_file(fde, [tm_frame, frame(ctx, EventType.WRITE_ROWS, rows)])
    path = tmp_path / "hostile-bin.000001"
    path.write_bytes(data)
    return str(path), positions[1]


def run_dump(capsysbinary, *argv) -> tuple[int, bytes, bytes]:
    code = dump_main(list(argv))
    out, err = capsysbinary.readouterr()
    return code, out, err


def test_json_with_any_unicode_prints_as_its_utf8_bytes(tmp_path, capsysbinary):
    doc = '{"name": "Zoë €uro 日本"}'
    path, _ = one_row_file(tmp_path, "t", T.JSON, 4, doc)
    code, out, err = run_dump(capsysbinary, path)
    assert (code, err) == (0, b"")
    assert f"###   @1='{doc}' /* JSON meta=4 nullable=1 is_null=0 */".encode() in out.splitlines()
    code, out, _ = run_dump(capsysbinary, "--json", path)
    rows = [json.loads(line)["rows"] for line in out.splitlines() if b'"rows"' in line]
    assert code == 0 and rows[0]["changes"][0]["after"] == {"1": {"name": "Zoë €uro 日本"}}


def test_a_crafted_table_name_cannot_forge_dump_lines(tmp_path, capsysbinary):
    path, _ = one_row_file(tmp_path, "t`\n### DELETE FROM `x`.`y`", T.LONG, 0, 1)
    code, out, _ = run_dump(capsysbinary, path)
    lines = out.decode("latin-1").splitlines()
    assert code == 0
    assert [line for line in lines if line.startswith("###")] == [
        "### INSERT INTO `d`.`t``\\x0a### DELETE FROM ``x``.``y```", "### SET",
        "###   @1=1 /* INT meta=0 nullable=1 is_null=0 */"]
    assert "Table_map: `d`.`t``\\x0a### DELETE FROM ``x``.``y``` mapped to number 7" in out.decode("latin-1")


def test_a_json_double_that_is_not_finite_is_a_decode_error_naming_its_position(tmp_path, capsysbinary):
    entry = bytes((0x0B,)) + struct.pack("<H", 7)
    doc = JsonText("[inf]")
    doc.binary = b"\x02" + struct.pack("<HH", 1, 15) + entry + struct.pack("<d", float("inf"))
    path, pos = one_row_file(tmp_path, "t", T.JSON, 4, doc)
    for flags in ((), ("--json",)):
        code, out, err = run_dump(capsysbinary, *flags, path)
        assert code == 1
        assert err.decode().startswith(f"binlog-dump: malformed error in {path} "
                                       f"at pos {pos} (type 30): JSON double")
        assert b"inf" not in out


@pytest.mark.parametrize("column_type, meta, value, what", [
    (T.DOUBLE, 8, float("-inf"), "FLOAT/DOUBLE"),
    (T.VECTOR, 4, (1.0, float("nan")), "VECTOR element"),  # found by bench/fuzz_chain.py
])
def test_a_non_finite_float_is_a_decode_error_in_json_not_invalid_json(tmp_path, capsysbinary,
                                                                       column_type, meta, value, what):
    path, pos = one_row_file(tmp_path, "t", column_type, meta, value)
    code, out, err = run_dump(capsysbinary, "--json", path)
    assert code == 1 and b"Infinity" not in out and b"NaN" not in out
    assert err.decode().startswith(f"binlog-dump: malformed error in {path} at pos {pos} (type 30): {what}")
    assert all(json.loads(line) for line in out.splitlines())  # what was printed is JSON


def test_events_kept_as_bytes_are_named_not_printed_as_rows(capsysbinary):
    code, out, _ = run_dump(capsysbinary, str(PRE_GA_FILE))
    text = out.decode("latin-1")
    assert code == 0
    for pos in (466, 549, 650):
        block = text.split(f"# at {pos}\n", 1)[1].split("# at ", 1)[0]
        assert "# MySQL 5.1 pre-GA rows event (WL#2325 draft format): body not decoded, cannot be " \
               "applied; not applied" in block
    code, out, _ = run_dump(capsysbinary, "--json", str(PRE_GA_FILE))
    undecoded = {e["pos"] for e in map(json.loads, out.splitlines()) if "undecoded" in e}
    assert (code, undecoded) == (0, {466, 549, 650})


@pytest.mark.parametrize("name", ["db\nx", "a`b"])
def test_use_lines_quote_the_database_name(tmp_path, capsysbinary, name):
    from tests.unit.codec_fuzz.hostile import query

    ctx, fde = context_after_fde(MYSQL8_FILE)
    data, _ = binlog_file(fde, [query(ctx, "CREATE TABLE t (a INT)", db=name)])
    path = tmp_path / "q-bin.000001"
    path.write_bytes(data)
    code, out, _ = run_dump(capsysbinary, str(path))
    quoted = name.replace("`", "``").replace("\n", "\\x0a")
    assert code == 0 and f"use `{quoted}`/*!*/;".encode() in out.splitlines()

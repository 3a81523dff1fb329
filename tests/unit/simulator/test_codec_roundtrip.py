"""The simulator's files decode with the codec's iter_events with zero errors, re-encode byte
for byte, chain their positions like a real server, and their FULL row images replayed in
order give exactly the expected-tables files."""
import json
from collections import Counter

import pytest

from libs.binlog import DecodeContext, Rows, encode_event, iter_events
from libs.simulator.expected import table_rows_json, write_expected
from libs.simulator.master import Master, Session
from libs.simulator.schema import standard_tables
from libs.simulator.sinks import FileSink
from libs.simulator.workload import Workload
from libs.simulator.run import SimulationOptions, simulate

CASES = [(f, img, crc, mk) for f in ("mariadb", "mysql") for img in ("full", "noblob", "minimal")
         for crc, mk in ((True, False), (False, True))]


@pytest.mark.parametrize("flavour,image,checksum,markers", CASES)
def test_decode_and_reencode_byte_exact(flavour, image, checksum, markers):
    opts = SimulationOptions(flavour=flavour, row_image=image, checksum=checksum,
                             markers=markers, transactions=80, seed=5, ignorable_rate=0.05,
                             binlog_format="MIXED")
    sink = FileSink()
    simulate(opts, sink)
    data = sink.bytes()
    ctx = DecodeContext()
    n = 0
    pos = 4
    for e in iter_events(data, ctx=ctx):
        frame = data[e.pos:e.end_pos]
        assert encode_event(e, ctx) == frame, (e.pos, e.type_name)
        assert e.pos == pos and e.header.log_pos == e.end_pos  # log_pos = end of the event
        assert e.checksum_ok is (True if checksum or e.type_code == 15 else None)
        pos = e.end_pos
        n += 1
    assert pos == len(data) and n == len(sink.frames)


def test_mysql_gtid_transaction_length_is_the_group_size():
    sink = FileSink()
    simulate(SimulationOptions(flavour="mysql", transactions=40, seed=2), sink)
    evs = list(iter_events(sink.bytes()))
    starts = [k for k, e in enumerate(evs) if e.type_name == "GTID"] + [len(evs) - 1]
    for a, b in zip(starts, starts[1:]):
        assert evs[a].body.transaction_length == evs[b].pos - evs[a].pos


def _replay_full_images(data: bytes, tables: dict) -> dict:
    """Apply FULL images by value: insert adds the row, update/delete remove one equal row."""
    content = {name: Counter() for name in tables}
    ctx = DecodeContext()
    for e in iter_events(data, ctx=ctx):
        if not isinstance(e.body, Rows):
            continue
        name = ctx.table_maps[e.body.table_id].table
        for rc in e.body.rows:
            if rc.before is not None:
                key = tuple(sorted(rc.before.items()))
                assert content[name][key] > 0, f"{name}: before image matches no row"
                content[name][key] -= 1
            if rc.after is not None:
                content[name][tuple(sorted(rc.after.items()))] += 1
    return content


@pytest.mark.parametrize("flavour", ["mariadb", "mysql"])
def test_full_images_replayed_give_the_expected_tables(flavour, tmp_path):
    sink = FileSink()
    tables = standard_tables(flavour)
    master = Master(tables, sink, flavour=flavour, session=Session("ROW", "full", True))
    workload = Workload(9, master, ddl_rate=0.0)  # DDL changes row shapes: not replayed here
    for _ in range(300):
        workload.run_transaction()
    master.close()
    content = _replay_full_images(sink.bytes(), {t.name: t for t in tables})
    out = write_expected(tmp_path, master.model, {}, master.statements)
    for t in tables:
        rows = [dict(k) for k, c in content[t.name].items() for _ in range(c)]
        table = master.model.table(t.name)
        lines = (out / f"sim.{t.name}.jsonl").read_text().splitlines()
        assert table_rows_json(table, rows) == [json.loads(x) for x in lines]
    assert sum(len(c) for c in content.values()) > 20


def test_expected_files_document_the_tables(tmp_path):
    sink = FileSink()
    result = simulate(SimulationOptions(transactions=30, seed=4), sink)
    out = write_expected(tmp_path, result.master.model, {"seed": 4}, result.master.statements)
    manifest = json.loads((out / "manifest.json").read_text())
    t_uk = manifest["tables"]["sim.t_uk"]
    assert t_uk["pke"] == ["code"] and t_uk["primary_key"] == []
    assert manifest["tables"]["sim.t_nokey"]["pke"] is None
    defaults = {c["name"]: c["default"] for c in manifest["tables"]["sim.t_defaults"]["columns"]}
    assert defaults["status"] == "new" and defaults["created"] == "2024-01-01 00:00:00.000"
    stmts = [json.loads(x) for x in (out / "statements.jsonl").read_text().splitlines()]
    assert stmts[0]["sql"].startswith("CREATE TABLE `t_pk`")
    assert {s["decision"] for s in stmts} <= {"row", "statement"}

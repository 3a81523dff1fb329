"""Lineage declared once (schemas/lineage.avsc) and change-log entries that validate against it."""

import dataclasses
import io
import json
from pathlib import Path

import fastavro

from libs.replay import ChangeLogEntry, Lineage, replay
from replay_builders import Source, rows, target_from_ddl

SCHEMAS = Path(__file__).resolve().parents[3] / "schemas"


def _schemas():
    """(Lineage, ChangeLogEntry, union of all three records for writing); ColumnValue is
    declared once, in change_record.avsc."""
    change_record = json.loads((SCHEMAS / "change_record.avsc").read_text())
    lineage, entry = json.loads((SCHEMAS / "lineage.avsc").read_text())
    union = fastavro.parse_schema([change_record, lineage, entry])
    return lineage, entry, union


def test_dataclasses_mirror_the_avro_records():
    lineage, entry, _ = _schemas()
    assert [f.name for f in dataclasses.fields(Lineage)] == [f["name"] for f in lineage["fields"]]
    assert [f.name for f in dataclasses.fields(ChangeLogEntry)] == [f["name"] for f in entry["fields"]]


def test_change_log_entries_serialize_with_the_schema_and_keep_images():
    _, _, union = _schemas()
    target = target_from_ddl("CREATE TABLE test.t (id int PRIMARY KEY, v varchar(5), b blob)")
    src = Source("test", "t", ["id", "v", "b"])
    changes = [src.insert({"id": 1, "v": "a", "b": b"\x01"}, statement="INSERT INTO t VALUES (1,'a',x'01')"),
               src.update({"id": 1}, {"v": None}), src.delete({"id": 1}),
               src.change("ddl", statement="TRUNCATE t")]
    result = replay(target, rows(target), changes)
    records = [e.to_dict() for e in result.change_log]
    buffer = io.BytesIO()
    fastavro.writer(buffer, union, [("binlog_cdc.ChangeLogEntry", r) for r in records])
    buffer.seek(0)
    back = list(fastavro.reader(buffer))
    assert [r["op"] for r in back] == ["insert", "update", "delete", "ddl"]
    assert back[0]["lineage"]["statement"] == "INSERT INTO t VALUES (1,'a',x'01')"
    assert back[0]["key"] == {"id": "1"} and back[1]["after"][0]["name"] == "v"
    assert back[0]["row_id"] == back[1]["row_id"] == back[2]["row_id"]
    assert back[3]["row_id"] is None


def test_every_written_row_carries_the_lineage_of_its_last_change():
    target = target_from_ddl("CREATE TABLE test.t (id int PRIMARY KEY, v int)")
    current = rows(target, (1, 1))
    src = Source("test", "t", ["id", "v"])
    result = replay(target, current, [src.update({"id": 1}, {"v": 2}, statement="UPDATE t SET v=2")])
    lineage = result.upserts[0].to_record()["_lineage"]
    assert (lineage["statement"], lineage["gtid"], lineage["binlog_pos"], lineage["operation"],
            lineage["server_id"], lineage["source"]) == (
        "UPDATE t SET v=2", "0-1-1", 1050, "update", 1, "src1")


def test_row_ids_of_many_changes_are_each_changes_row_id():
    from libs.replay.lineage import make_row_id, make_row_ids

    triples = [("src1", "0-1-5", 0), ("src1", "0-1-5", 1 << 20), ('s"q\\', "mdb-bin.000002:1234", 7),
               ("sö✓", "3E11FA47-71CA-11E1-9E33-C80AA9429562:23", 2 ** 40), ("", "", 0)]
    assert make_row_ids(*zip(*triples)) == [make_row_id(*t) for t in triples]

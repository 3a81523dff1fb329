"""Snapshot records -> assembled records and change records (libs/snapshot/changes.py), and
the apply stage's view of snapshot tables (libs/snapshot/tables.py)."""
import pytest

from libs.snapshot.changes import assembled_record, change_records
from libs.contracts.position import BinlogPosition
from libs.snapshot.record import BEGIN, END, ROWS, TABLE, TABLE_END, SnapshotRecord
from libs.schema_history.target_schemas import with_source_targets
from libs.snapshot.tables import SnapshotTable, SnapshotTables
from libs.snapshot.values import SourceColumn
from libs.targets import TargetCatalog, build_catalog, parse_ddl
from tests.change_builders import change_of

CREATE = "CREATE TABLE `t` (`id` int unsigned NOT NULL, `e` enum('a','b') DEFAULT 'b', PRIMARY KEY (`id`))"
COLUMNS = (SourceColumn(0, "id", "int", "int(10) unsigned", None),)
ROW = (b"7",)  # the server's bytes of one row


def record(kind, rows=None, **kw):
    head = dict(snapshot_id="run1", binlog_file="mdb-bin.000003", binlog_pos=777, server_id=5,
                snapshot_ts=1_700_000_000_000_000, gtid="0-5-9", database="d", table="t")
    if kind == ROWS:
        return SnapshotRecord.chunk(COLUMNS, rows, **head, **kw)
    return SnapshotRecord(kind, **head, **kw)


@pytest.mark.parametrize("kind, kw, ops, seqs", [
    (BEGIN, {"tables": ("d.t",)}, [], []),
    (TABLE, {"create_table": CREATE}, ["truncate"], [0]),
    (ROWS, {"chunk_no": 0, "statement": "SELECT 1", "rows": [ROW, ROW]}, ["snapshot", "snapshot"],
     [1 << 20, (1 << 20) + 1]),
    (ROWS, {"chunk_no": 2, "statement": "SELECT 1", "rows": [ROW]}, ["snapshot"], [3 << 20]),
    (TABLE_END, {"row_count": 3}, [], []),
    (END, {}, [], []),
])
def test_change_records_by_kind(kind, kw, ops, seqs):
    out = change_records("src", record(kind, **kw))
    assert [c["op"] for c in out] == ops and [c["change_seq"] for c in out] == seqs
    assert all(c["after"] == [{"ordinal": 0, "name": "id", "type_code": 3, "text": "7", "binary": None}]
               for c in out if c["op"] == "snapshot")
    for c in out:  # every record of a run is at its consistent position, with its time and GTID
        assert (c["trx_file"], c["trx_end_pos"], c["binlog_file"], c["binlog_pos"]) == (
            "mdb-bin.000003", 777, "mdb-bin.000003", 777)
        assert (c["trx_id"], c["gtid"], c["server_id"], c["commit_ts"]) == ("snapshot:run1:d.t", "0-5-9", 5,
                                                                           1_700_000_000_000_000)


def test_assembled_record_carries_the_head_and_the_bytes():
    raw = record(ROWS, chunk_no=4, statement="SELECT 1", rows=[ROW]).encode()
    assert len(SnapshotRecord.decode(raw, head_only=True).encode()) < len(raw)  # the head skips the chunk
    out = assembled_record("src", raw, "mdb-bin.000001", 120, 0, 42)
    assert (out["kind"], out["snapshot_kind"], out["segment_no"], out["trx_id"]) == ("snapshot", ROWS, 4,
                                                                                     "snapshot:run1:d.t")
    assert (out["snapshot_table"], out["snapshot_rows"]) == ("d.t", 1)  # what the fused snapshot plans by
    table = assembled_record("src", record(TABLE).encode(), "mdb-bin.000001", 120, 0, 41)
    assert (table["snapshot_table"], table["snapshot_rows"]) == ("d.t", None)
    assert (out["frames"][0]["raw"] == raw
            and (out["binlog_file"], out["binlog_pos"]) == ("mdb-bin.000001", 120))


def test_an_undecodable_snapshot_record_is_quarantined_with_its_bytes():
    out = assembled_record("src", b"\x07garbage", "mdb-bin.000001", 120, 0, 42)
    assert (out["kind"], out["q_kind"], out["raw"]) == ("quarantine", "bad_snapshot_record", b"\x07garbage")
    assert "offset 42" in out["reason"] and "src" in out["reason"]


def _table(pos, run="r"):
    return SnapshotTable("src", "d", "t", run, BinlogPosition("mdb-bin.000003", pos), CREATE)


def _change(op, pos, table="t"):
    return change_of(op, source="src", database="d", table=table, trx_file="mdb-bin.000003", trx_end_pos=pos)


def test_latest_snapshot_supersedes_changes_at_or_before_it():
    tables = SnapshotTables([_table(500, "old"), _table(900, "new"), _table(700, "mid")])
    assert tables.get("src", "d", "t").snapshot_id == "new"
    assert tables.add([_table(900, "new"), _table(700, "mid")]) is False  # kept already / older
    assert tables.add([_table(950, "newer")]) is True and tables.add([_table(900, "new")]) is False
    tables = SnapshotTables([_table(500, "old"), _table(900, "new")])
    assert [tables.is_superseded(_change("update", p)) for p in (899, 900, 901)] == [True, True, False]
    assert not tables.is_superseded(_change("snapshot", 100))  # its own rows never
    assert not tables.is_superseded(_change("update", 100, table="other"))


def test_source_schema_targets_and_a_declaration_wins():
    tables = SnapshotTables([_table(500)])
    derived = with_source_targets(TargetCatalog(()), tables, lambda d, t: True)
    target = derived.get("d", "t")
    assert target.primary_key == ("id",) and target.column("id").unsigned
    assert target.column("e").enum_values == ("a", "b")
    declared = build_catalog(None, "x.sql", parse_ddl("CREATE TABLE d.t (id bigint PRIMARY KEY, note text)"))
    assert with_source_targets(declared, tables, lambda d, t: True).get("d", "t").column_names == (
        "id", "note")
    assert with_source_targets(TargetCatalog(()), tables, lambda d, t: False).get("d", "t") is None
    assert with_source_targets(TargetCatalog(()), tables, lambda d, t: True,
                               from_source=False).get("d", "t") is None


@pytest.mark.parametrize("ops, kept", [
    (["update", "insert"], ["update", "insert"]),
    (["update", "truncate", "snapshot"], ["truncate", "snapshot"]),
    (["truncate", "snapshot", "truncate", "snapshot", "delete"], ["truncate", "snapshot", "delete"]),
    ([], []),
])
def test_since_last_truncate(ops, kept):
    from libs.snapshot.tables import since_last_truncate
    assert [c.op for c in since_last_truncate([change_of(op) for op in ops])] == kept

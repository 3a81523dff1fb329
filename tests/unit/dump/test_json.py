"""binlog-dump --json: the schema keys and the value mapping (libs/dump/json_format.py)."""
from __future__ import annotations

import json
import struct
from decimal import Decimal

from libs.binlog.constants import ColumnType as T
from libs.dump.json_format import dump_json, json_value
from libs.dump.text_format import dump_text
from libs.dump.walk import walk
from libs.binlog.json_binary import JsonText

from .oracle import MARIADB

FULLMETA = MARIADB / "all_types_fullmeta" / "mdb-bin.000005"
BASE_KEYS = {"file", "pos", "end_log_pos", "timestamp", "type_code", "type_name", "server_id",
             "flags", "boundary", "boundary_source", "boundary_warning", "ignorable", "dummy",
             "checksum_ok"}


def _events(path):
    return [json.loads(line) for line in dump_json(walk(path.read_bytes(), path.name))]


def _first_insert(events, table):
    return next(e["rows"] for e in events
                if "rows" in e and e["rows"]["table"] == table and e["rows"]["kind"] == "insert")


def test_every_event_has_the_base_keys_and_positions_chain():
    events = _events(MARIADB / "row_full" / "mdb-bin.000001")
    assert all(BASE_KEYS <= set(e) for e in events)
    assert events[0]["pos"] == 4 and events[0]["type_name"] == "FORMAT_DESCRIPTION"
    assert all(e["checksum_ok"] is True for e in events)
    kinds = {e["type_name"] for e in events if "rows_query" in e}
    assert kinds == {"ANNOTATE_ROWS"}
    gtid = next(e for e in events if "gtid" in e)
    assert gtid["boundary"] == "Start Transaction" and gtid["gtid"].startswith("0-1-")
    assert any(e["boundary"] == "End Transaction" and "xid" in e for e in events)


def test_row_values_by_type():
    events = _events(FULLMETA)
    notnull = _first_insert(events, "t_notnull")
    after = notnull["changes"][0]["after"]
    assert notnull["changes"][0]["before"] is None
    assert after["3"] == "-1.500"  # DECIMAL as string
    assert after["4"] == 2.5  # DOUBLE as number
    assert after["5"] == "2024-01-02T03:04:05.060708"  # DATETIME(6) ISO-8601
    assert after["6"] == 1704164645.678  # TIMESTAMP(3) epoch seconds with fraction
    assert after["7"] == "-01:00:00.50" and after["8"] == "2024-01-02"  # TIME, DATE
    assert after["9"] == "ab" and after["11"] == "00" and notnull["hex_columns"] == [11]
    assert after["12"] == 2 and after["13"] == 513  # ENUM index, SET bit mask as integers
    decimals = _first_insert(events, "t_decimal")["changes"][0]["after"]
    assert decimals["5"] == "0.000000000"  # DECIMAL(9,9) zero keeps its scale
    other = _first_insert(events, "t_char_other")["changes"][0]["after"]
    assert other["8"] == "Привет" and other["9"] == "中文"  # cp1251 and gbk columns as text
    geo = _first_insert(events, "t_geo")
    assert geo["changes"][0]["after"]["2"].startswith("00000000") and 2 in geo["hex_columns"]
    wide = _first_insert(events, "t_wide")["changes"][0]["after"]
    assert wide["3"] is None  # SQL NULL is JSON null


def test_images_hold_only_present_columns():
    events = _events(MARIADB / "row_minimal" / "mdb-bin.000002")
    updates = [e["rows"] for e in events if "rows" in e and e["rows"]["kind"] == "update"]
    partial = [c for u in updates for c in u["changes"]
               if len(c["before"]) < len(c["after"]) or len(c["after"]) < 3]
    assert partial, "minimal images must not be padded to the full row"


def test_json_value_mapping_edges():
    assert json_value(JsonText('{"a": [1, null]}'), T.JSON, None) == ({"a": [1, None]}, False)
    assert json_value(b"\xff\x00", T.VARCHAR, 33) == ("ff00", True)  # not UTF-8: hex
    assert json_value(b"caf\xe9", T.VARCHAR, 8) == ("café", False)  # latin1 collation
    assert json_value(b"abc", T.BLOB, None) == ("616263", True)  # charset unknown: hex
    assert json_value(Decimal("-0.000000001"), T.NEWDECIMAL, None) == ("-0.000000001", False)
    assert json_value("0", T.TIMESTAMP2, None) == (0, False)
    assert json_value(None, T.LONG, None) == (None, False)


def test_dummy_and_ignorable_events_are_marked():
    capture = MARIADB / "replica_captures" / "row_full.cap0.bin"
    events = _events(capture)
    # capability 0: 18 standalone GTIDs + 61 Annotate_rows + 1 checkpoint + 1 Gtid_list
    assert sum(e["dummy"] for e in events) == 81
    assert all(e["boundary"] == "Ignore Boundary" for e in events if e["dummy"])
    # an unknown type with LOG_EVENT_IGNORABLE_F (WL#4033) after a real FDE (no checksums)
    data = (MARIADB / "nochecksum" / "mdb-bin.000014").read_bytes()[:256]
    data += struct.pack("<IBIIIH", 1, 99, 1, 19 + 3, 278, 0x80) + b"abc"
    (item,) = [i for i in walk(data, "x") if i.event.type_code == 99]
    assert item.ignorable and item.boundary_name == "Ignore Boundary"
    assert "# ignorable event type 99 (LOG_EVENT_IGNORABLE_F): skipped" in list(dump_text([item]))

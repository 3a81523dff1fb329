"""Every Avro schema in schemas/ parses with fastavro (the schemas are the contract)."""
import json

import fastavro

from libs.runtime.paths import REPO_ROOT


def test_every_schema_parses_with_fastavro():
    names = sorted(p.stem for p in (REPO_ROOT / "schemas").glob("*.avsc"))
    assert {"change_record", "quarantine_record", "assembled_record"} <= set(names)
    named: dict = {}
    for name in ("change_record", "quarantine_record", "assembled_record"):
        fastavro.parse_schema(json.loads((REPO_ROOT / "schemas" / f"{name}.avsc").read_text()), named)


def test_change_record_round_trips_through_avro_with_absent_vs_null_columns():
    import io

    schema = fastavro.parse_schema(json.loads((REPO_ROOT / "schemas" / "change_record.avsc").read_text()))
    rec = {"source": "s", "trx_id": "0-1-5", "gtid": "0-1-5", "xid": 9, "server_id": 1,
           "commit_ts": 1_700_000_000_000_000,
           "trx_file": "f.000001", "trx_end_pos": 900, "change_seq": (3 << 20) | 1, "database": "d",
           "table": "t",
           "op": "update",
           "before": [{"ordinal": 0, "name": "id", "type_code": 3, "text": "1", "binary": None}],
           "after": [{"ordinal": 2, "name": "c", "type_code": 15, "text": None, "binary": None}],
           "statement": "UPDATE t SET c=NULL WHERE id=1", "binlog_file": "f.000001", "binlog_pos": 500}
    buf = io.BytesIO()
    fastavro.schemaless_writer(buf, schema, rec)
    buf.seek(0)
    back = fastavro.schemaless_reader(buf, schema, return_record_name=False)
    from datetime import datetime, timezone
    assert back.pop("commit_ts") == datetime.fromtimestamp(1_700_000_000, timezone.utc)  # timestamp-micros
    rec.pop("commit_ts")
    assert back == rec
    # column 1 is absent from both images; column 2 is present and NULL
    assert [c["ordinal"] for c in back["after"]] == [2] and back["after"][0]["text"] is None

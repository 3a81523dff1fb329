"""MySQL 8/9 files from rust_mysql_common (no usable -vv oracle: mariadb-binlog rejects JSON
partial updates, VECTOR, opaque JSON). Expected values come from the SQL each file records in
its Query events (CREATE TABLE / INSERT shown by SHOW BINLOG EVENTS-equivalent text) and from
the rust crate's tests for the same files; each test names what it checks."""
from libs.binlog import JsonDiff

from .corpus import MYSQL_RUST, decoded_events


def _rows(name):
    return [(rec.kind, c.before, c.after) for _f, rec in decoded_events(MYSQL_RUST / name)
            if hasattr(rec, "rows") for c in rec.rows]


def test_json_full_and_partial_updates():
    rows = _rows("json.binlog.000001")
    # INSERT ... JSON_OBJECT('name','Joe','age',24,'data','xxxxxxxxxx'): keys sorted by length
    assert rows[0] == ("insert", None, {0: 1, 1: '{"age": 24, "data": "xxxxxxxxxx", "name": "Joe"}',
                                        2: b"Joe", 3: 24})
    # UPDATE t SET json_col = JSON_REPLACE(json_col, '$.age', age + 1) with
    # binlog_row_value_options=PARTIAL_JSON: minimal before image (id), diff in the after image
    partial = rows[-6:]
    assert partial[0] == ("update", {0: 1}, {1: (JsonDiff("replace", "$.age", "26"),), 2: b"Joe", 3: 26})
    assert [r[2][3] for r in partial] == [26, 34, 42, 26, 34, 42]


def test_json_opaque_values():
    values = [after[0] for _k, _b, after in _rows("json-opaque.binlog")]
    assert values == ['{"a": "base64:type15:VQ=="}', '{"b": "2012-03-18"}',
                      '{"c": "2012-03-18 11:30:45.000000"}', '{"c": "87:31:46.654321"}',
                      '{"d": 123.456}', '{"e": 9.00}', '{"e": [0, 1, true, false]}', '{"e": null}']


def test_vector_columns():
    rows = _rows("vector.binlog")
    assert rows[0][2][1] == (1.100000023841858, 2.200000047683716, 3.299999952316284)  # float32
    assert rows[3][2] == {0: 2, 1: (1.0099999904632568, -1.0099999904632568), 2: b"bar",
                          3: (42.0, 43.0, 44.0, 45.0)}


def test_enum_set_and_long_strings_with_full_metadata():
    tms = [rec for _f, rec in decoded_events(MYSQL_RUST / "mysql-enum-string-set.000001")
           if not hasattr(rec, "rows")]
    assert tms[0].column_names == ("f1", "f2", "f3", "f4", "f5")
    rows = _rows("mysql-enum-string-set.000001")
    kind, before, _ = rows[-1]
    assert kind == "delete" and before[0] == b"field1" and before[2] == 2 and before[3] == 10


def test_bit_columns():
    # CREATE TABLE foo (a BIT(3), b TEXT, c BIT(8)); INSERT VALUES (b'100', 'foo', b'00100000')
    assert _rows("mysql_type_bit.000001") == [("insert", None, {0: 4, 1: b"foo", 2: 32})]


def test_minimal_metadata_unsigned_and_partial_image():
    # binlog_row_image=MINIMAL insert naming 3 of 5 columns; SIGNEDNESS marks column 4 unsigned
    assert _rows("minimal_row_metadata.000001") == [("insert", None, {0: 1, 2: b"a", 4: 3230202323})]


def test_invisible_columns_visibility_metadata():
    tms = [rec for _f, rec in decoded_events(MYSQL_RUST / "binlog-invisible-columns.000001")
           if not hasattr(rec, "rows")]
    assert tms[0].column_visibility == (False, False, True, True, True, False)
    rows = _rows("binlog-invisible-columns.000001")
    assert rows[-1][2] == {0: 111, 1: 222, 2: -333, 3: b"444", 4: b"U", 5: None}


def test_time2_negative_value():
    assert _rows("time_issue.000001") == [("insert", None, {0: "-507:48:27"})]

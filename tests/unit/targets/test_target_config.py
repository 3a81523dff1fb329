"""YAML target declarations: loading, merging with DDL, and errors naming file and field."""

import datetime as dt
from pathlib import Path

import pytest

from libs.targets import TargetConfigError, build_catalog, load_targets, parse_ddl
from libs.targets import values

CONF = Path(__file__).resolve().parents[3] / "conf"
DDL = parse_ddl("CREATE TABLE shop.orders (id int PRIMARY KEY, "
                "status varchar(9) DEFAULT 'new', n int)", "s.sql")


def test_example_configuration_loads():
    catalog = load_targets(str(CONF / "targets.example.yaml"))
    orders = catalog.get("shop", "orders")
    assert orders.delta_table == "shop__orders" and orders.primary_key == ("id",)
    assert (orders.column("region").default == 900 and orders.can_apply_rows
            and not orders.can_apply_statements)
    events = catalog.get("shop", "order_events")
    assert events.primary_key == ("order_id", "kind") and events.on_statement == "quarantine"
    audit = catalog.get("legacy", "audit")
    assert audit.source_column_names == ("id", "who", "what", "at")
    assert audit.column("at").default_kind == "current_timestamp" and audit.column("who").default == "system"
    assert catalog.get("shop", "nope") is None
    (customers,) = catalog.overrides  # no columns: waits for the source's schema
    assert customers.name == ("shop", "customers") and customers.entry["leave_out"] == ["legacy_flags"]


def test_ddl_tables_without_yaml_entry_get_default_name_and_settings():
    catalog = build_catalog({"defaults": {"apply": "both"}}, "t.yaml", DDL)
    (target,) = catalog.targets
    assert target.delta_table == "shop__orders" and target.apply == {"rows", "statements"}


def test_yaml_default_overrides_the_ddl_default():
    catalog = build_catalog({"targets": {"shop.orders": {"defaults": {"status": "open"}}}}, "t.yaml", DDL)
    assert catalog.get("shop", "orders").column("status").default == "open"


def test_ddl_file_from_the_command_line(tmp_path):
    ddl = tmp_path / "replica.sql"
    ddl.write_text("USE shop;\nCREATE TABLE t (id int NOT NULL, UNIQUE KEY (id));\n")
    (target,) = load_targets(None, [str(ddl)]).targets
    assert target.not_null_unique_keys == (("id",),) and target.declared_in.endswith("replica.sql")


@pytest.mark.parametrize("data,field,message", [
    ({"target": {}}, "", "unknown field"),
    ({"targets": {"orders": {}}}, "targets.orders", "db.table"),
    ({"targets": {"shop.orders": {"apply": "rowz"}}}, "targets.shop.orders.apply", "rows"),
    ({"targets": {"shop.orders": {"on_statement": "ignore"}}},
     "targets.shop.orders.on_statement", "quarantine"),
    ({"targets": {"shop.orders": {"key": ["nope"]}}}, "targets.shop.orders.key", "not a column"),
    ({"targets": {"shop.orders": {"key": ["n"]}}}, "targets.shop.orders.key", "PRIMARY KEY"),
    ({"targets": {"shop.orders": {"columns": [{"name": "x", "type": "INT"}]}}},
     "targets.shop.orders.columns", "once"),
    ({"targets": {"shop.orders": {"defaults": {"zz": 1}}}}, "targets.shop.orders.defaults", "unknown"),
    ({"targets": {"shop.orders": {"defaults": {"n": "abc"}}}},
     "targets.shop.orders.defaults.n", "cannot read"),
    ({"targets": {"x.y": {"columns": [{"name": "a", "type": "VARCHA(3)"}]}}},
     "targets.x.y.columns[0].type", "unsupported"),
    ({"targets": {"x.y": {"columns": [{"name": "a"}]}}}, "targets.x.y.columns[0].type", "required"),
    ({"targets": {"x.y": {"columns": [{"name": "a", "type": "INT", "nullable": "no"}]}}},
     "targets.x.y.columns[0].nullable", "true or false"),
    ({"targets": {"x.y": {"delta_table": "shop__orders", "columns": [{"name": "a", "type": "INT"}]}}},
     "delta_table", "also the Delta table"),
])
def test_invalid_declarations_name_file_and_field(data, field, message):
    with pytest.raises(TargetConfigError) as error:
        build_catalog(data, "conf/t.yaml", DDL)
    assert str(error.value).startswith("conf/t.yaml: ")
    assert error.value.field.endswith(field) and message in error.value.message


def test_unreadable_and_invalid_yaml_files(tmp_path):
    with pytest.raises(TargetConfigError, match="missing.yaml: cannot read"):
        load_targets(str(tmp_path / "missing.yaml"))
    bad = tmp_path / "bad.yaml"
    bad.write_text("targets: [unclosed\n")
    with pytest.raises(TargetConfigError, match="bad.yaml: invalid YAML"):
        load_targets(str(bad))


def test_values_of_binlog_text():
    (t,) = parse_ddl("CREATE TABLE d.t (ts timestamp(6) NULL, dn date, dz date NOT NULL, b bit(9), j json)")
    col = {c.name: c for c in t.columns}
    assert values.from_column_value(col["ts"], "1700000000.123456", None) == dt.datetime(
        2023, 11, 14, 22, 13, 20, 123456)
    assert values.from_column_value(col["dn"], "0000-00-00", None) is None  # zero date, nullable
    # NOT NULL too (zero_dates: to_null)
    assert values.from_column_value(col["dz"], "0000-00-00", None) is None
    assert values.from_column_value(col["b"], None, b"\x01\x01") == 257
    assert values.from_column_value(col["j"], '{"a": 1}', None) == '{"a": 1}'
    assert values.from_column_value(col["j"], None, None) is None

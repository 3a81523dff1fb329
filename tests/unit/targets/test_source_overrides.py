"""A YAML entry without columns overrides, field by field, the target the job derives from the
source's SHOW CREATE TABLE (libs/targets/target_entry.py TargetOverride; README "Onboarding")."""

import pytest

from libs.contracts.position import BinlogPosition
from libs.schema_history.target_schemas import with_source_targets
from libs.snapshot.tables import SnapshotTable, SnapshotTables
from libs.targets import TargetConfigError, build_catalog, parse_ddl

SOURCE = ("CREATE TABLE `c` (`id` int NOT NULL, `tier` varchar(9) DEFAULT 'gold', `n` int DEFAULT 3, "
          "`flags` blob, `legacy` text, PRIMARY KEY (`id`), UNIQUE KEY `u` (`n`, `legacy`))")
KEYLESS = "CREATE TABLE `log` (`at` int, `what` varchar(9))"


def _source(*tables):
    return SnapshotTables(SnapshotTable("src", "shop", name, "run", BinlogPosition("mdb-bin.000001", 4), ddl)
                          for name, ddl in tables)


def _derived(entry, *, settings=None, tables=(("c", SOURCE),)):
    data = {"targets": {f"shop.{tables[0][0]}": entry}}
    if settings:
        data["defaults"] = settings
    catalog = build_catalog(data, "t.yaml")
    assert catalog.targets == () and [o.name for o in catalog.overrides] == [("shop", tables[0][0])]
    return with_source_targets(catalog, _source(*tables), lambda d, t: True).get("shop", tables[0][0])


def test_no_override_takes_the_source_and_the_yaml_settings():
    catalog = build_catalog({"defaults": {"on_statement": "quarantine"}}, "t.yaml")
    target = with_source_targets(catalog, _source(("c", SOURCE)), lambda d, t: True).get("shop", "c")
    assert (target.column_names == ("id", "tier", "n", "flags", "legacy")
            and target.on_statement == "quarantine")
    assert target.delta_table == "shop__c" and target.column("tier").default == "gold"


def test_each_field_overrides_only_itself():
    target = _derived({"delta_table": "customers", "defaults": {"tier": "basic"}, "apply": "both"})
    assert target.delta_table == "customers" and target.apply == {"rows", "statements"}
    assert target.column("tier").default == "basic" and target.column("n").default == 3  # the source's
    assert target.primary_key == ("id",) and target.column_names == ("id", "tier", "n", "flags", "legacy")
    assert target.declared_in == ("t.yaml, SHOW CREATE TABLE of shop.c "
                                  "(source src, snapshot at mdb-bin.000001:4)")


def test_the_key_of_a_keyless_source_table():
    target = _derived({"key": ["at", "what"]}, tables=(("log", KEYLESS),))
    assert target.primary_key == ("at", "what")


def test_leave_out_drops_the_last_columns_and_keys_over_them():
    target = _derived({"leave_out": ["legacy", "flags"]})
    assert target.column_names == ("id", "tier", "n") and target.unique_keys == ()


@pytest.mark.parametrize("entry, field, message", [
    ({"defaults": {"nope": 1}}, "targets.shop.c.defaults", "unknown field"),
    ({"key": ["nope"]}, "targets.shop.c.key", "not a column"),
    ({"key": ["tier"]}, "targets.shop.c.key", "PRIMARY KEY"),
    ({"leave_out": ["tier"]}, "targets.shop.c.leave_out", "last column"),
    ({"leave_out": ["id", "tier", "n", "flags", "legacy"]}, "targets.shop.c.leave_out", "last column"),
    ({"leave_out": ["legacy"], "defaults": {"legacy": "x"}}, "targets.shop.c.defaults", "unknown field"),
])
def test_an_override_the_source_schema_contradicts_names_file_and_field(entry, field, message):
    with pytest.raises(TargetConfigError, match=message) as exc:
        _derived(entry)
    assert exc.value.path == "t.yaml" and exc.value.field == field


@pytest.mark.parametrize("entry, field, message", [
    ({"source_columns": ["id"]}, "targets.shop.c.source_columns", "source's names"),
    ({"key": "id"}, "targets.shop.c.key", "list of column names"),
    ({"leave_out": []}, "targets.shop.c.leave_out", "list of column names"),
    ({"defaults": ["tier"]}, "targets.shop.c.defaults", "mapping"),
    ({"delta_table": "a/b"}, "targets.shop.c.delta_table", "single path segment"),
    ({"delta_table": "_cdc_x"}, "targets.shop.c.delta_table", "reserved"),
])
def test_an_override_is_checked_as_far_as_it_can_be_when_loaded(entry, field, message):
    with pytest.raises(TargetConfigError, match=message) as exc:
        build_catalog({"targets": {"shop.c": entry}}, "t.yaml")
    assert exc.value.field == field


def test_two_sources_never_share_a_delta_table():
    with pytest.raises(TargetConfigError, match="also the Delta table of shop.a"):
        build_catalog({"targets": {"shop.a": {"delta_table": "x"}, "shop.b": {"delta_table": "x"}}}, "t.yaml")
    declared = build_catalog({"targets": {"shop.c": {"delta_table": "shop__log"}}}, "t.yaml")
    with pytest.raises(TargetConfigError, match="shop__log"):  # the derived default name of shop.log
        with_source_targets(declared, _source(("c", SOURCE), ("log", KEYLESS)), lambda d, t: True)


def test_leave_out_needs_a_schema_to_leave_columns_of():
    ddl = parse_ddl("CREATE TABLE shop.c (id int PRIMARY KEY, x int)", "c.sql")
    assert build_catalog({"targets": {"shop.c": {"leave_out": ["x"]}}}, "t.yaml", ddl).get(
        "shop", "c").column_names == ("id",)
    with pytest.raises(TargetConfigError, match="only the columns to keep"):
        build_catalog({"targets": {"shop.c": {"leave_out": ["x"],
                                              "columns": [{"name": "id", "type": "INT"}]}}},
                      "t.yaml")

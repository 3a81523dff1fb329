"""Issue #38 item 1: a target's source is the pair (database, table). `a`.`b.c` and `a.b`.`c`
(both 'a.b.c' when joined) are two targets with two Delta tables, each found by its own pair;
two source tables that would share a Delta table are one line naming both."""

import pytest

from libs.schema_history.target_schemas import with_source_targets
from libs.contracts.position import BinlogPosition
from libs.snapshot.tables import SnapshotTable, SnapshotTables
from libs.targets import TargetConfigError, build_catalog, default_delta_table_name

KEYED = "CREATE TABLE `{}` (`id` int NOT NULL, `v` varchar(9), PRIMARY KEY (`id`))"


def _derived(*pairs, yaml=None):
    snapshots = SnapshotTables(SnapshotTable("src", db, table, "run", BinlogPosition("mdb-bin.000001", 4),
                                             KEYED.format(table.replace("`", "``")))
                               for db, table in pairs)
    return with_source_targets(build_catalog(yaml, "t.yaml"), snapshots, lambda d, t: True)


def test_tables_whose_names_join_alike_are_two_targets():
    catalog = _derived(("a", "b.c"), ("a.b", "c"))
    first, second = catalog.get("a", "b.c"), catalog.get("a.b", "c")
    assert (first.database, first.table) == ("a", "b.c")
    assert (second.database, second.table) == ("a.b", "c")
    assert first.delta_table == default_delta_table_name("a", "b.c") == "a__b.c"
    assert second.delta_table == default_delta_table_name("a.b", "c") == "a.b__c"


def test_two_source_tables_that_would_share_a_delta_table_are_one_line_naming_both():
    with pytest.raises(TargetConfigError) as exc:
        _derived(("a__b", "c"), ("a", "b__c"))  # both a__b__c
    line = str(exc.value)
    assert "\n" not in line and "'a__b__c'" in line
    assert "`a__b`.`c`" in line and "`a`.`b__c`" in line


def test_a_yaml_key_names_a_dotted_database_quoted():
    yaml = {"targets": {"`a.b`.`c`": {"delta_table": "abc"}}}
    catalog = _derived(("a", "b.c"), ("a.b", "c"), yaml=yaml)
    assert catalog.get("a.b", "c").delta_table == "abc"
    assert catalog.get("a", "b.c").delta_table == "a__b.c"
    with pytest.raises(TargetConfigError, match="the key must be a source `db.table`"):
        build_catalog({"targets": {"a.b.c": {"delta_table": "x"}}}, "t.yaml")

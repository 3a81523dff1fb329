"""libs/tables/table_location.py: where a table lives (a path under delta_root, or a catalog name) is
decided in one place; the catalog_schema setting is validated with the other settings."""
import pytest

from libs.reads import lineage_sql as L
from libs.config.job import ConfigError, JobConfig, load_config
from libs.tables.system_tables import CHANGE_LOG, LINEAGE_VIEWS
from libs.tables.table_location import TableLocation, TableNameError, TableRoot, as_root, parse_catalog_schema


def test_path_tables_are_directories_under_delta_root_as_before():
    location = TableRoot.of("/data/delta/").table("shop__orders")
    assert location == TableLocation(path="/data/delta/shop__orders") and not location.is_catalog
    assert location.sql_ref() == "delta.`/data/delta/shop__orders`"
    assert as_root("/data/delta") == TableRoot("/data/delta") and TableRoot("/d").schema_ref() is None


def test_catalog_tables_are_named_by_catalog_schema_and_quoted():
    root = TableRoot.of("/ignored", "main.cdc")
    location = root.table(CHANGE_LOG)
    assert location == TableLocation(name=("main", "cdc", "_cdc_change_log")) and location.is_catalog
    assert location.sql_ref() == "`main`.`cdc`.`_cdc_change_log`"
    assert str(location) == "main.cdc._cdc_change_log" and str(root) == "main.cdc"
    assert root.schema_ref() == "`main`.`cdc`"
    assert all(root.table(view).is_catalog for view in LINEAGE_VIEWS)


@pytest.mark.parametrize("name", ["shop orders", "a`b", "x.y", "", "naïve", "a/b"])
def test_a_name_a_catalog_cannot_hold_is_refused_naming_the_way_out(name):
    with pytest.raises(TableNameError, match="delta_table:"):
        TableRoot.of("/d", "spark_catalog.cdc").table(name)


@pytest.mark.parametrize("name", ["", ".", "..", "a/b", "a\\b", "a\0b"])
def test_a_path_name_is_one_segment(name):
    with pytest.raises(TableNameError, match="single path segment"):
        TableRoot("/d").table(name)


def test_a_location_is_a_path_or_a_name():
    with pytest.raises(ValueError):
        TableLocation()
    with pytest.raises(ValueError):
        TableLocation(path="/p", name=("a", "b", "c"))


@pytest.mark.parametrize("text", [
    "main", "main.cdc.x", "main.", ".cdc", "ma in.cdc", "`main`.cdc", "main.c-dc",
])
def test_catalog_schema_is_two_plain_names(text):
    with pytest.raises(ValueError, match="must be 'catalog.schema'"):
        parse_catalog_schema(text)
    with pytest.raises(ConfigError, match=r"^command line: catalog_schema: must be 'catalog.schema'"):
        load_config(None, {"catalog_schema": text})


def test_catalog_schema_setting_defaults_to_paths_and_takes_a_name(tmp_path):
    assert JobConfig().catalog_schema is None
    f = tmp_path / "job.yaml"
    f.write_text("catalog_schema: spark_catalog.cdc\n")
    assert load_config(f).catalog_schema == "spark_catalog.cdc"
    assert parse_catalog_schema("main.cdc_1") == ("main", "cdc_1")
    with pytest.raises(ConfigError, match="catalog_schema: must be a string"):
        load_config(None, {"catalog_schema": 7})


def test_lineage_views_are_created_or_replaced_over_the_change_log_given():
    for view in LINEAGE_VIEWS:
        select = L.view_select(view, "`main`.`cdc`.`_cdc_change_log`")
        assert "FROM `main`.`cdc`.`_cdc_change_log`" in select
        assert L.create_view_sql("`v`", select).startswith("CREATE OR REPLACE VIEW `v` AS\nSELECT ")
        assert L.create_view_sql("`v`", select, temporary=True).startswith(
            "CREATE OR REPLACE TEMPORARY VIEW `v`")
    with pytest.raises(ValueError):
        L.view_select("_cdc_nope", "t")


def test_lineage_queries_bind_values_and_quote_nothing_from_data():
    sql, args = L.last_change_of_key("`_cdc_last_change`", "shop", "t", {"id": "7' OR 1=1"})
    assert "7'" not in sql and args == {"database": "shop", "table": "t", "k0": "id", "v0": "7' OR 1=1"}
    with pytest.raises(ValueError):
        L.last_change_of_key("v", "shop", "t", {})

"""`history: current | scd2` (README "History targets"): per target and in `defaults:` of the
targets YAML, checked with one line naming the field; the job's tables.history for targets
derived from the source where the YAML sets none."""
import dataclasses

import pytest

from libs.config.job import ConfigError, JobConfig
from libs.replay.versions import HISTORY_COLUMNS
from libs.targets import TargetConfigError, build_catalog, parse_ddl
from pipelines.apply.modes.columns import history_fields

DDL = "CREATE TABLE d.t (id INT PRIMARY KEY, v INT);\nCREATE TABLE d.u (id INT PRIMARY KEY)"
SOURCE = parse_ddl("CREATE TABLE d.s (id INT PRIMARY KEY)", "SHOW CREATE TABLE d.s")


def _histories(data, tables_history=None):
    catalog = build_catalog(data, "t.yaml", parse_ddl(DDL, "t.sql")).with_source(SOURCE, tables_history)
    return {t.table: t.history for t in catalog.targets}


@pytest.mark.parametrize("data, tables_history, expected", [
    (None, None, {"t": "current", "u": "current", "s": "current"}),
    ({"targets": {"d.t": {"history": "scd2"}}}, None, {"t": "scd2", "u": "current", "s": "current"}),
    ({"defaults": {"history": "scd2"}, "targets": {"d.u": {"history": "current"}}}, "current",
     {"t": "scd2", "u": "current", "s": "scd2"}),  # the YAML's default wins over the job's
    (None, "scd2", {"t": "current", "u": "current", "s": "scd2"}),  # the job's: derived targets only
    ({"targets": {"d.s": {"history": "current"}}}, "scd2", {"t": "current", "u": "current", "s": "current"}),
])
def test_which_history_a_target_keeps(data, tables_history, expected):
    assert _histories(data, tables_history) == expected


@pytest.mark.parametrize("data, where", [
    ({"targets": {"d.t": {"history": "scd3"}}}, "targets.d.t.history"),
    ({"defaults": {"history": True}}, "defaults.history"),
])
def test_an_unknown_history_is_one_line_naming_the_field(data, where):
    with pytest.raises(TargetConfigError, match=f"t.yaml: {where}: must be one of") as err:
        build_catalog(data, "t.yaml", parse_ddl(DDL, "t.sql"))
    assert "\n" not in str(err.value)


def test_the_jobs_history_default_is_checked():
    assert JobConfig().tables.history == "current"
    assert JobConfig(tables={"history": "scd2"}).tables.history == "scd2"
    with pytest.raises(ConfigError, match="history"):
        JobConfig(tables={"history": "full"})


def test_an_scd2_target_on_a_table_without_the_history_columns_is_a_mismatch():
    """Switching a target between current and scd2 in place is refused before anything is read."""
    import pipelines.apply.tables as D

    catalog = build_catalog({"targets": {"d.t": {"history": "scd2"}}}, "t.yaml", parse_ddl(DDL, "t.sql"))
    scd2, current = catalog.get("d", "t"), catalog.get("d", "u")
    assert D.schema_mismatches(D.target_schema(scd2), scd2) == []
    made_current = D.target_schema(dataclasses.replace(scd2, history="current"))
    assert D.schema_mismatches(made_current, scd2) == [
        f"column {name!r} is missing (a `history: scd2` target's, schemas/history_columns.avsc)"
        for name in HISTORY_COLUMNS]
    assert history_fields(current) == []


def _modes(data):
    catalog = build_catalog(data, "t.yaml", parse_ddl(DDL, "t.sql"))
    return {t.table: (t.history, t.delete) for t in catalog.targets}


@pytest.mark.parametrize("data, expected", [
    ({"defaults": {"delete": "soft"}, "targets": {"d.t": {"history": "scd2"}}},
     {"t": ("scd2", None), "u": ("current", "soft")}),  # the entry's history wins over the defaults' delete
    ({"defaults": {"history": "scd2"}, "targets": {"d.t": {"delete": "soft"}}},
     {"t": ("current", "soft"), "u": ("scd2", None)}),  # ... and its delete over the defaults' history
])
def test_an_entry_of_its_own_picks_history_or_soft_deletes_over_its_defaults(data, expected):
    assert _modes(data) == expected


@pytest.mark.parametrize("data, where", [
    ({"targets": {"d.t": {"history": "scd2", "delete": "soft"}}}, "targets.d.t"),
    ({"defaults": {"history": "scd2", "delete": "soft"}}, "defaults"),
])
def test_scd2_and_soft_deletes_together_are_one_line(data, where):
    with pytest.raises(TargetConfigError,
                       match=f"t.yaml: {where}: `history: scd2` and `delete: soft` together") as err:
        build_catalog(data, "t.yaml", parse_ddl(DDL, "t.sql"))
    assert "\n" not in str(err.value)

"""Declarations that cannot be honoured are refused with one clear ConfigError naming the file
and the field, never skipped and never left to fail inside Spark."""
import pytest

from libs.config.job import ConfigError
from libs.targets import TargetConfigError, build_catalog, load_targets, parse_ddl
from pipelines import replicate


def refused(ddl: str, match: str) -> str:
    with pytest.raises(TargetConfigError, match=match) as err:
        build_catalog(None, "t.yaml", parse_ddl(ddl, "t.sql"))
    message = str(err.value)
    assert "\n" not in message and isinstance(err.value, ConfigError)
    return message


def test_a_column_without_a_type_is_refused_not_dropped():
    message = refused("CREATE TABLE d.t (id INT, name)", "column has no type")
    assert message.startswith("t.sql: statement[0] CREATE TABLE t.name:")


@pytest.mark.parametrize("ddl", [
    "CREATE TABLE d.t (id INT, ID BIGINT)",
    "CREATE TABLE d.t (`Name` TEXT, id INT PRIMARY KEY, `nAME` INT)",
])
def test_duplicate_column_names_in_any_case_are_refused(ddl):
    refused(ddl, "duplicate column name")


def test_duplicate_yaml_columns_are_refused():
    data = {"targets": {"d.t": {"columns": [{"name": "a", "type": "INT"}, {"name": "A", "type": "INT"}]}}}
    with pytest.raises(TargetConfigError, match=r"targets.d.t.columns.A: duplicate column name"):
        build_catalog(data, "t.yaml")


@pytest.mark.parametrize("ddl, what", [
    ("CREATE TABLE d.t LIKE d.s", "LIKE"),
    ("CREATE TABLE d.t (LIKE d.s)", "LIKE"),
    ("CREATE TABLE d.t AS SELECT 1 AS a", "AS SELECT"),
    ("CREATE TABLE d.t SELECT 1 AS a", "AS SELECT"),
    ("CREATE TABLE d.t (a INT) AS SELECT 1 AS b", "AS SELECT"),
    ("CREATE TABLE d.t", "no column list"),
])
def test_like_and_as_select_are_refused_not_ignored(ddl, what):
    refused(ddl, what)


@pytest.mark.parametrize("yaml_targets, match", [
    ({"d.t": {"delta_table": "_cdc_progress"}}, "reserved"),
    ({"d.t": {"delta_table": "_CDC_Quarantine"}}, "reserved"),
    ({"d.t": {"delta_table": "_cdc_anything_new"}}, "reserved"),
    ({"_cdc.progress": {}}, "reserved"),  # the default name _cdc__progress
    ({"d.t": {"delta_table": "../outside"}}, "single path segment"),
    ({"d.t": {"delta_table": ".."}}, "single path segment"),
])
def test_a_target_may_not_take_a_system_table_name_or_leave_delta_root(yaml_targets, match):
    name = next(iter(yaml_targets))
    ddl = parse_ddl(f"CREATE TABLE {name} (id INT PRIMARY KEY)", "t.sql")
    with pytest.raises(TargetConfigError, match=match) as err:
        build_catalog({"targets": yaml_targets}, "t.yaml", ddl)
    assert f"targets.{name}.delta_table" in str(err.value)


def test_parser_and_encoding_failures_are_config_errors(tmp_path):
    with pytest.raises(TargetConfigError, match="cannot parse DDL"):
        parse_ddl("CREATE TABLE d.t (a INT DEFAULT 'unterminated", "t.sql")
    latin1 = tmp_path / "latin1.sql"
    latin1.write_bytes("CREATE TABLE d.t (a INT COMMENT 'caf\xe9')".encode("latin-1"))
    with pytest.raises(TargetConfigError, match="latin1.sql: not UTF-8"):
        load_targets(None, [str(latin1)])
    bad_yaml = tmp_path / "targets.yaml"
    bad_yaml.write_text("targets: {d.t: [unclosed\n")
    with pytest.raises(TargetConfigError) as err:
        load_targets(str(bad_yaml))
    assert str(err.value).startswith(f"{bad_yaml}: invalid YAML") and "\n" not in str(err.value)


def test_cdc_replicate_reports_a_bad_declaration_in_one_line_before_starting_spark(
        tmp_path, capfd, monkeypatch):
    def no_spark(*_args, **_kw):
        raise AssertionError("a Spark session was started for a configuration error")

    monkeypatch.setattr("pipelines.job.spark_session.build_session", no_spark)
    ddl = tmp_path / "targets.sql"
    ddl.write_text("CREATE TABLE shop.orders (id INT, status)")
    args = ["--target-ddl", str(ddl), "--delta-root", str(tmp_path / "d"),
            "--checkpoint", str(tmp_path / "c")]
    assert replicate.main(args) == 2
    err = capfd.readouterr().err
    assert err == f"cdc-replicate: {ddl}: statement[0] CREATE TABLE orders.status: column has no type\n"
    assert replicate.main(["--target-ddl", str(tmp_path / "missing.sql")]) == 2
    assert capfd.readouterr().err.count("\n") == 1


def test_cdc_replicate_reports_a_bad_job_setting_in_one_line(tmp_path, capfd):
    conf = tmp_path / "job.yaml"
    conf.write_text("delta_root: null\n")
    assert replicate.main(["--conf", str(conf)]) == 2
    assert capfd.readouterr().err == f"cdc-replicate: {conf}: delta_root: required, got null\n"


def test_an_override_without_a_source_schema_to_override_is_one_line(tmp_path, capfd):
    """A targets entry with no columns waits for the source's schema (tables.from_source); with
    from_source off nothing would ever give it columns."""
    conf, targets = tmp_path / "job.yaml", tmp_path / "targets.yaml"
    conf.write_text("tables: {from_source: false}\n")
    targets.write_text("targets:\n  shop.c: {delta_table: customers}\n")
    assert replicate.main(["--conf", str(conf), "--targets", str(targets)]) == 2
    assert capfd.readouterr().err == (
        f"cdc-replicate: {targets}: targets.shop.c: no columns: add `columns:`, declare the table in a "
        "DDL file, or let the job derive it from the source (tables.from_source: true)\n")

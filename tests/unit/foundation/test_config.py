import pytest

from libs.config.job import ConfigError, JobConfig, field_docs, load_config
from libs.runtime.paths import REPO_ROOT


def test_default_file_loads_and_matches_dataclass_defaults():
    cfg = load_config(REPO_ROOT / "conf" / "job.yaml")
    assert cfg.topic == "binlog" and cfg.exec_mode == "strict"
    assert cfg.bootstrap == JobConfig().bootstrap


def test_overrides_win_and_none_is_ignored(tmp_path):
    f = tmp_path / "c.yaml"
    f.write_text("topic: from_file\nexec_mode: idempotent\n")
    cfg = load_config(f, {"topic": "from_flag", "exec_mode": None})
    assert (cfg.topic, cfg.exec_mode) == ("from_flag", "idempotent")


@pytest.mark.parametrize("bad, match", [
    ({"exec_mode": "lenient"}, "exec_mode"),
    ({"unknown_event_policy": "skip"}, "unknown_event_policy"),
    ({"bootstrap": "nohostport"}, "bootstrap"),
    ({"trigger_seconds": 0}, "trigger_seconds"),
    ({"target_mirror_max_rows": -1}, "target_mirror_max_rows"),
    ({"target_overwrite_max_rows": -1}, "target_overwrite_max_rows"),
    ({"no_such_setting": 1}, "unknown setting"),
])
def test_invalid_values_are_rejected_with_the_field_name(bad, match):
    with pytest.raises(ConfigError, match=match):
        load_config(None, bad)


def test_file_errors_name_the_file(tmp_path):
    f = tmp_path / "broken.yaml"
    f.write_text("- a list\n")
    with pytest.raises(ConfigError, match="broken.yaml"):
        load_config(f)


def test_every_field_is_documented():
    assert all(doc.strip() for doc in field_docs().values())


@pytest.mark.parametrize("line, message", [
    ("trigger_seconds: .nan", "trigger_seconds: must be a finite number, got nan"),
    ("trigger_seconds: .inf", "trigger_seconds: must be a finite number, got inf"),
    ("max_offsets_per_trigger: true", "max_offsets_per_trigger: must be an integer, got True"),
    ("max_offsets_per_trigger: 1.5", "max_offsets_per_trigger: must be an integer, got 1.5"),
    ("idle_source_timeout_s: abc", "idle_source_timeout_s: must be an integer, got 'abc'"),
    ("idle_source_timeout_s: 0", "idle_source_timeout_s: must be >= 1, got 0"),
    ("available_now: 'false'", "available_now: must be true or false, got 'false'"),
    ("available_now: 1", "available_now: must be true or false, got 1"),
    ("delta_root: null", "delta_root: required, got null"),
    ("delta_root: 7", "delta_root: must be a string, got 7"),
    ("checkpoint: ''", "checkpoint: must not be empty"),
    ("target_ddl: [a.sql]", "target_ddl: must be a string, got ['a.sql']"),
    ("exec_mode: lenient", "exec_mode: must be one of ('strict', 'idempotent'), got 'lenient'"),
    ("max_offsets_per_trigger: 100000000000000000000", "max_offsets_per_trigger: must be at most"),
])
def test_every_field_is_type_checked_and_the_error_names_file_and_field(tmp_path, line, message):
    f = tmp_path / "job.yaml"
    f.write_text(line + "\n")
    with pytest.raises(ConfigError) as err:
        load_config(f)
    assert str(err.value).startswith(f"{f}: {message}")
    assert "\n" not in str(err.value)


def test_well_typed_values_pass_and_an_integer_is_a_number(tmp_path):
    f = tmp_path / "job.yaml"
    f.write_text("trigger_seconds: 2\navailable_now: true\ntarget_ddl: t.sql\ntargets: null\n")
    cfg = load_config(f)
    assert (cfg.trigger_seconds, cfg.available_now, cfg.target_ddl, cfg.targets) == (2, True, "t.sql", None)


def test_command_line_values_are_checked_and_named_as_such():
    with pytest.raises(ConfigError, match="^command line: delta_root: must not be empty"):
        load_config(None, {"delta_root": " "})


def test_yaml_syntax_errors_are_one_line(tmp_path):
    f = tmp_path / "job.yaml"
    f.write_text("topic: [unclosed\nexec_mode: strict\n")
    with pytest.raises(ConfigError) as err:
        load_config(f)
    assert (str(err.value).startswith(f"{f}: invalid YAML: line 2, column 10: expected")
            and "\n" not in str(err.value))


def test_accept_schema_changes_through_is_a_position_per_source():
    from libs.contracts.position import BinlogPosition
    cfg = JobConfig(schema_changes="fail", accept_schema_changes_through={"m1": "mdb-bin.000002:7"})
    assert cfg.accept_schema_changes_through == (("m1", BinlogPosition("mdb-bin.000002", 7)),)
    assert JobConfig().accept_schema_changes_through == ()
    with pytest.raises(ConfigError, match="accept_schema_changes_through: m1: must be FILE:POS"):
        JobConfig(accept_schema_changes_through={"m1": 7})

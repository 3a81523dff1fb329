import pytest

from libs.config import ConfigError, JobConfig, field_docs, load_config
from libs.paths import REPO_ROOT


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

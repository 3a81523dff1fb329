"""The job configuration's `decode_limits:` section (libs/binlog/limits.py DecodeLimits)."""
import pytest

from libs.binlog import DecodeLimits
from libs.config.job import ConfigError, JobConfig, load_config
from libs.runtime.paths import REPO_ROOT


def test_the_default_file_spells_out_the_default_limits():
    assert load_config(REPO_ROOT / "conf" / "job.yaml").decode_limits == DecodeLimits()


def test_a_partial_section_overrides_only_its_keys(tmp_path):
    path = tmp_path / "job.yaml"
    path.write_text("decode_limits:\n  max_columns: 8000\n  max_decompressed_bytes: 1048576\n")
    limits = load_config(path).decode_limits
    assert (limits.max_columns, limits.max_decompressed_bytes) == (8000, 1 << 20)
    assert limits.max_rows_per_event == DecodeLimits().max_rows_per_event


@pytest.mark.parametrize("section, match", [
    ({"max_columns": 0}, r"decode_limits\.max_columns must be a positive integer"),
    ({"max_columns": True}, r"decode_limits\.max_columns must be a positive integer"),
    ({"max_json_fields": 1.5}, r"decode_limits\.max_json_fields"),
    ({"max_payload_depth": 100}, r"decode_limits\.max_payload_depth must be at most"),
    ({"max_rows_per_event": 1 << 21}, r"change_seq"),
    ({"max_colums": 5000}, r"unknown setting\(s\) \['max_colums'\]"),
    ("big", r"decode_limits must be a mapping"),
])
def test_bad_limits_are_a_config_error_naming_the_key(section, match):
    with pytest.raises(ConfigError, match=match):
        JobConfig(decode_limits=section)

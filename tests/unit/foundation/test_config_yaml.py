"""Issue #38 item 9: no operator YAML file, however small or large, makes load_config or
load_targets run long, grow memory, or answer with more than one short line
(libs/settings/yaml_files.py, libs/settings/errors.quoted)."""
import json
import re
import subprocess
import sys

import pytest

from libs.config.job import ConfigError, load_config
from libs.runtime.paths import REPO_ROOT
from libs.targets.config import load_targets
from libs.targets.errors import TargetConfigError

SHORT = 300  # characters: "one line" of the brief


def alias_bomb(levels: int = 9, width: int = 9) -> str:
    """A flow list whose anchors each repeat the one before `width` times: width**levels
    (387 million) leaves in under 300 bytes ("billion laughs")."""
    names = "abcdefghijklmnopqrstuvwxyz"
    items = [f"&a [{','.join('x' * width)}]"]
    items += [f"&{names[i]} [{','.join([f'*{names[i - 1]}'] * width)}]" for i in range(1, levels)]
    return f"[{','.join(items)}]"


# (module, loader, file text with the bomb in a field whose check quotes the value it rejects)
BOMBED = {"job": ("libs.config.job", "load_config", "bootstrap: {bomb}\n"),
          "targets": ("libs.targets.config", "load_targets", "defaults: {{zero_dates: {bomb}}}\n")}

# Runs one loader in a child held to 1 GiB of address space, so the code before this change
# (minutes, past a gigabyte, then MemoryError) fails the test instead of stalling the suite.
# Its second is of CPU, not of the wall clock: the unit tier runs at idle priority (scripts/dev).
_CHILD = """
import json, resource, sys, time
resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))
module, name, path = sys.argv[1:]
load = getattr(__import__(module, fromlist=[name]), name)
start = time.process_time()
try:
    load(path)
    outcome = "loaded"
except BaseException as exc:
    outcome = f"{type(exc).__name__}: {exc}"
print(json.dumps({"seconds": time.process_time() - start, "length": len(outcome), "outcome": outcome[:2000]}))
"""


@pytest.mark.parametrize("kind", sorted(BOMBED))
def test_an_alias_bomb_is_refused_at_its_first_alias_within_a_second(tmp_path, kind):
    module, loader, template = BOMBED[kind]
    text = template.format(bomb=alias_bomb())
    path = tmp_path / f"{kind}.yaml"
    path.write_text(text)
    assert path.stat().st_size < 510
    try:
        child = subprocess.run([sys.executable, "-c", _CHILD, module, loader, str(path)], cwd=REPO_ROOT,
                               capture_output=True, text=True, timeout=120)
    except subprocess.TimeoutExpired:
        pytest.fail(f"{loader} still running after 120 s on a {len(text)}-byte file")
    assert child.returncode == 0, child.stderr[-2000:]
    result = json.loads(child.stdout)
    error = ("TargetConfigError" if kind == "targets" else "ConfigError")
    column = text.index("*") + 1  # the first alias; the file is one line
    assert result["outcome"].startswith(f"{error}: {path}: invalid YAML: line 1, column {column}: alias *a: "
                                        f"YAML aliases are not accepted"), result["outcome"][:300]
    assert result["length"] < SHORT and "\n" not in result["outcome"]
    assert result["seconds"] < 1


def _error(load, path) -> str:
    with pytest.raises(ConfigError) as err:
        load(path)
    return str(err.value)


@pytest.mark.parametrize("value", ["x" * 200_000, "[" + ", ".join(map(str, range(5_000))) + "]",
                                   "{" + ", ".join(f"k{i}: {i}" for i in range(2_000)) + "}"],
                         ids=["string", "list", "mapping"])
def test_a_huge_value_in_a_wrongly_typed_field_is_quoted_in_short(tmp_path, value):
    job, targets = tmp_path / "job.yaml", tmp_path / "targets.yaml"
    job.write_text(f"trigger_seconds: {value}\n")
    targets.write_text(f"defaults: {{zero_dates: {value}}}\n")
    for load, path, field in ((load_config, job, "trigger_seconds"), (load_targets, targets, "zero_dates")):
        message = _error(load, str(path))
        assert message.startswith(f"{path}: ") and field in message and "got " in message, message[:300]
        assert len(message) < SHORT and "\n" not in message, (len(message), message[:300])


def test_a_huge_list_in_a_setting_that_wants_a_word_is_a_config_error_not_a_type_error(tmp_path):
    targets = tmp_path / "targets.yaml"
    for setting in ("apply", "on_statement"):
        targets.write_text(f"defaults: {{{setting}: [{', '.join(['rows'] * 5_000)}]}}\n")
        with pytest.raises(TargetConfigError, match=f"defaults.{setting}: must be one of") as err:
            load_targets(str(targets))
        assert len(str(err.value)) < SHORT


@pytest.mark.parametrize("text, problem", [
    ("trigger_seconds: 0x" + "f" * 5000 + "\n", r"line 1, column 18: integer '0xfff"),  # repr() would raise
    ("trigger_seconds: " + "1" * 5000 + "\n", r"line 1, column 18: cannot read '111"),
    ("trigger_seconds: " + "[" * 200 + "\n", r"line 1, column \d+: nested deeper than \d+ levels"),
    ("a: &x {b: 1}\nc:\n  <<: *x\n", r"line 3, column 7: alias \*x: YAML aliases are not accepted"),
    ("topic: b\0\n", r"unacceptable character #x0000"),
], ids=["hex-integer", "decimal-integer", "nesting", "merge-key-alias", "nul"])
def test_what_python_cannot_hold_or_print_is_a_one_line_yaml_error(tmp_path, text, problem):
    job, targets = tmp_path / "job.yaml", tmp_path / "targets.yaml"
    job.write_text(text)
    targets.write_text(text)
    for load, path in ((load_config, job), (load_targets, targets)):
        message = _error(load, str(path))
        assert re.match(f"{re.escape(str(path))}: invalid YAML: {problem}", message), message[:300]
        assert len(message) < SHORT and "\n" not in message


def test_an_integer_past_the_range_of_a_float_in_a_number_field_is_a_config_error(tmp_path):
    job = tmp_path / "job.yaml"
    job.write_text("trigger_seconds: 1" + "0" * 400 + "\n")  # math.isfinite(10**400) raises OverflowError
    message = _error(load_config, job)
    assert (message.startswith(f"{job}: trigger_seconds: must be a finite number, got 1000")
            and len(message) < SHORT)


def test_an_anchor_without_alias_and_nesting_within_the_bound_still_load(tmp_path):
    from libs.settings.yaml_files import MAX_DEPTH, read_yaml_file
    job = tmp_path / "job.yaml"
    job.write_text("topic: &t binlog\ndecode_limits: {max_json_depth: 50}\n")
    assert load_config(job).topic == "binlog"
    deep = tmp_path / "deep.yaml"
    deep.write_text("a: " + "[" * (MAX_DEPTH - 1) + "]" * (MAX_DEPTH - 1) + "\n")
    value = read_yaml_file(deep)["a"]
    for _ in range(MAX_DEPTH - 2):
        value = value[0]
    assert value == []


def test_the_nesting_bound_is_reported_where_it_is_crossed(tmp_path):
    from libs.settings.yaml_files import MAX_DEPTH
    job = tmp_path / "job.yaml"
    job.write_text("trigger_seconds: " + "[" * (MAX_DEPTH + 5) + "\n")
    column = len("trigger_seconds: ") + MAX_DEPTH  # the top mapping is the first level
    assert _error(load_config, job).endswith(
        f"line 1, column {column}: nested deeper than {MAX_DEPTH} levels")


def test_quoted_is_short_and_fast_for_any_value():
    from libs.settings.errors import quoted
    shared = ["x"] * 9
    for _ in range(9):  # 9**10 leaves, built the way an alias would share them
        shared = [shared] * 9
    for value in (shared, "y" * 10_000_000, int("f" * 5000, 16), {"k" * 10_000: shared}, set(range(10_000))):
        assert len(quoted(value)) <= 130
    assert quoted("rows") == "'rows'" and quoted(None) == "None" and quoted(-7) == "-7"


def test_a_config_error_never_grows_past_a_couple_of_lines_whatever_it_carries():
    # a nested error's text or a list of names is not quoted through quoted(): the error caps it
    message = str(ConfigError("targets: " + "x" * 100_000))
    assert message.startswith("targets: xxx") and message.endswith("(98009 more characters)")
    assert len(message) < 2100

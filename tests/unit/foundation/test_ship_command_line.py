"""cdc-ship's command line (issue #39 item 6): --help's usage is the README's "Commands" line, and
it names every option the parser takes."""
import re
import subprocess
import sys

from libs.runtime.paths import REPO_ROOT
from pipelines.ship import build_parser


def _usage() -> str:
    shown = subprocess.run([sys.executable, "-m", "pipelines.ship", "--help"], cwd=REPO_ROOT,
                           capture_output=True, text=True, check=True).stdout
    return " ".join(re.match(r"usage: (.*?)\n\n", shown, re.S).group(1).split())


def test_the_usage_line_of_help_is_the_readme_commands_line():
    readme = re.findall(r"^\| `(cdc-ship [^`]*)` \|", (REPO_ROOT / "README.md").read_text(), re.M)
    assert [line.replace("\\|", "|") for line in readme] == [_usage()]


def test_the_usage_names_every_option():
    usage = _usage()
    options = {o for action in build_parser()._actions if action.help != "==SUPPRESS=="
               for o in action.option_strings if o.startswith("--") and o != "--help"}
    assert options and {o for o in options if not re.search(rf"{re.escape(o)}\b(?!-)", usage)} == set()

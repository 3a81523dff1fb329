"""cdc-replicate's command line (issue #39 item 6): --help's usage is the README's, with the
target declarations optional; a checkout without the Spark jars stops with one line naming the
command that fetches them, exit 1, before any JVM starts."""
import re
import subprocess
import sys

from libs.runtime.paths import REPO_ROOT


def test_the_usage_line_of_help_is_the_readme_commands_line():
    shown = subprocess.run([sys.executable, "-m", "pipelines.replicate", "--help"], cwd=REPO_ROOT,
                           capture_output=True, text=True, check=True).stdout
    usage = re.match(r"usage: (.*?)\n\n", shown, re.S).group(1)
    readme = re.findall(r"^\| `(cdc-replicate [^`]*)` \|", (REPO_ROOT / "README.md").read_text(), re.M)
    assert readme == [" ".join(usage.split())]
    assert "[--target-ddl F.sql]" in usage and "[--targets F.yaml]" in usage


def test_missing_jars_stop_with_one_line_naming_the_setup_command(tmp_path):
    empty = tmp_path / "jars"
    empty.mkdir()
    code = ("import sys; from pathlib import Path; from pipelines.replicate import main; "
            f"sys.exit(main(['--delta-root', {str(tmp_path / 'delta')!r}, '--checkpoint', "
            f"{str(tmp_path / 'ckpt')!r}], jars_dir=Path({str(empty)!r})))")
    run = subprocess.run([sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True, text=True,
                         timeout=120)
    assert run.returncode == 1, run.stderr
    assert run.stderr.splitlines() == [
        f"cdc-replicate: Delta/Kafka jars missing in {empty}: run `scripts/dev setup`"], run.stderr

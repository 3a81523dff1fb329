"""Every file or folder the READMEs name by path exists at that path (issue #55 acceptance: a
move must take its mentions along). A path is a token starting with one of the repository's
top folders; `libs/X/` style placeholders and globs are not paths."""
from __future__ import annotations

import re

import pytest

from tests.unit.foundation.code_graph import ROOT

TOP = ("libs", "pipelines", "tests", "bench", "schemas", "conf", "scripts", "jvm")
PATH = re.compile(r"(?<![\w./-])((?:" + "|".join(TOP) + r")/[\w./-]*[\w/])")
PLACEHOLDERS = {"libs/X/", "pipelines/X/"}


def named_paths(text: str) -> set[str]:
    return {p for p in PATH.findall(text) if p not in PLACEHOLDERS}


@pytest.mark.parametrize("doc", ["README.md", "bench/README.md"])
def test_every_path_a_readme_names_exists(doc):
    paths = named_paths((ROOT / doc).read_text(encoding="utf-8"))
    assert len(paths) > 50  # the document was read
    assert sorted(p for p in paths if not (ROOT / p.rstrip("/")).exists()) == []


def test_a_path_is_found_in_prose_and_code_spans():
    text = "see `libs/contracts/change.py` (and libs/stream/, not xlibs/a.py or libs/X/) in tests/unit."
    assert named_paths(text) == {"libs/contracts/change.py", "libs/stream/", "tests/unit"}

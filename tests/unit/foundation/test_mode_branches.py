"""Target modes decide in their own folders (issue #55 item 3; README "Architecture"): outside
libs/apply/modes/ and pipelines/apply/modes/, no `if`, conditional expression, `while` or
comprehension filter tests for SCD2, soft delete, a carried table or a shadow table, except the
named sites below, each with why it is not a mode choosing on the shared write path. A new branch
fails here: give the mode a method (pipelines/apply/modes/writes.py ModeWrites, libs/apply/modes/mode.py)
instead, or name the site here with its reason."""
from __future__ import annotations

import ast
import re

from tests.unit.foundation.code_graph import ROOT, tracked

MODE_WORDS = re.compile(r"scd2|soft|carried|shadow", re.IGNORECASE)

# (file, the test's source text on one line): why it may stay where it is
ALLOWED = {
    ("libs/targets/config.py",
     'out.get("history") == model.HISTORY_SCD2 and out.get("delete") == model.DELETE_SOFT'):
        "validation: a declaration asking for both modes at once is refused",
    ("pipelines/apply/applier.py", "soft_default"):
        "the declarations resolved: the job's `tables.delete` fills a target's unset `delete` when its "
        "mode takes it (TargetMode.takes_job_delete)",
    ("libs/apply/target_mirror.py", "soft and row_id in soft"):
        "data, not a mode: the rows the soft-delete mode's own mirror_apply flags are kept apart",
    ("pipelines/apply/shadow_writes.py", "config.shadow_tables == SHADOW_KEEP"):
        "the shadow tables' own module: what happens to an online schema change tool's table",
    ("pipelines/apply/shadow_writes.py",
     "catalog.get(database, table) is not None and ends_as_shadow(table, followed.get(database, set()), "
     "gone)"):
        "the shadow tables' own module: which of the batch's tables end as a tool's working table",
    ("pipelines/apply/batch_ddl.py", "(carried := done.result()) is not None"):
        "the carry's own module: the tables the batch's DDL carries to a new schema",
    ("pipelines/apply/batch_ddl.py", "carried is not None"):
        "the carry's own module: a carried table's rows are read from it",
    ("pipelines/apply/schema_changes.py", "carried_from is None"):
        "the carry's own module: a table renamed into the target brings its rows, or none",
}


def _mode_tests() -> set[tuple[str, str]]:
    found = set()
    for path in tracked("*.py"):
        if not path.startswith(("libs/", "pipelines/")) or "/modes/" in path:
            continue
        source = (ROOT / path).read_text()
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, (ast.If, ast.IfExp, ast.While)):
                tests = [node.test]
            elif isinstance(node, ast.comprehension):
                tests = node.ifs
            else:
                continue
            for test in tests:
                text = " ".join((ast.get_source_segment(source, test) or "").split())  # one line
                if MODE_WORDS.search(text):
                    found.add((path, text))
    return found


def test_no_mode_is_decided_outside_the_modes_folders():
    assert sorted(_mode_tests() - ALLOWED.keys()) == []


def test_every_allowed_site_is_still_there():
    assert sorted(ALLOWED.keys() - _mode_tests()) == []  # a site gone: drop it from ALLOWED

"""libs.replay's modules never import the package itself: its __init__ re-exports them, so a
module importing `libs.replay` (e.g. `from libs.replay import errors`) would make the cycle
libs.replay -> module -> libs.replay, which only works while the import order happens to suit."""
import ast
from pathlib import Path

import libs.replay

PACKAGE = Path(libs.replay.__file__).parent


def test_no_replay_module_imports_its_own_package():
    offenders = []
    for path in sorted(PACKAGE.glob("*.py")):
        if path.name == "__init__.py":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module == "libs.replay":
                offenders.append(f"{path.name}:{node.lineno}")
            if isinstance(node, ast.ImportFrom) and node.level == 1 and node.module is None:
                offenders.append(f"{path.name}:{node.lineno}")
    assert offenders == []

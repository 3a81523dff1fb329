"""The project's own import graph, read with `ast` (the edge rules: test_code_shape.py's docstring),
for the shape checks: test_code_shape.py (cycles, sizes) and test_folder_order.py (floors)."""
from __future__ import annotations

import ast
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


def tracked(pattern: str, root: Path = ROOT) -> list[str]:
    """Every file git tracks outside tests/ that matches `pattern` (repository-relative)."""
    out = subprocess.run(["git", "ls-files", "-z", "--", pattern], cwd=root, check=True,
                         capture_output=True).stdout.decode()
    return sorted(p for p in out.split("\0") if p and not p.startswith("tests/") and (root / p).is_file())


def module_name(path: str) -> str:
    parts = path.rpartition(".")[0].split("/")
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_of(path: str, root: Path, modules: set[str]) -> set[str]:
    """The project's modules that the file at `path` imports (the edge rules: test_code_shape.py)."""
    name = module_name(path)
    package = name if path.endswith("__init__.py") else name.rpartition(".")[0]
    folder = path.rpartition("/")[0].replace("/", ".")
    script_folder = folder if folder and folder not in modules else None  # no package: sys.path[0]

    def project(candidate: str) -> str | None:
        for full in (candidate, f"{script_folder}.{candidate}" if script_folder else candidate):
            if full in modules:
                return full
        return None

    found: set[str] = set()
    for node in ast.walk(ast.parse((root / path).read_text(encoding="utf-8"), filename=path)):
        if isinstance(node, ast.Import):
            found.update(m for m in (project(a.name) for a in node.names) if m)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[:len(package.split(".")) - (node.level - 1)] if package else []
                base = ".".join([*anchor, *([base] if base else [])])
            for alias in node.names:
                target = project(f"{base}.{alias.name}") if base else project(alias.name)
                target = target or project(base)
                if target:
                    found.add(target)
    found.discard(name)
    return found


def import_graph(paths: list[str], root: Path = ROOT, extensions: list[str] = ()) -> dict[str, set[str]]:
    """Module -> the project modules it imports. `extensions`: the C sources that setup.py builds
    into modules of their own name (libs/binlog/_frames.c is libs.binlog._frames): modules that
    import nothing of the project."""
    modules = {module_name(p) for p in [*paths, *extensions]}
    return {**{module_name(p): set() for p in extensions},
            **{module_name(p): imports_of(p, root, modules) for p in paths}}


def import_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm, iterative:
    no recursion limit on a deep import chain), each sorted, largest first."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, edges = work[-1]
            child = next((e for e in edges if e in graph), None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    out.append(sorted(component))
    return sorted(out, key=lambda c: (-len(c), c))


def cycle_report(graph: dict[str, set[str]], component: list[str]) -> str:
    members = set(component)
    edges = [f"{a} -> {b}" for a in component for b in sorted(graph[a] & members)]
    return f"{len(component)} modules: " + "; ".join(edges)

"""The code's shape (developers' guide: small files; STYLE.md practice 14): every Python file
that git tracks outside tests/ is at most MAX_LINES lines, no function of the product (libs/,
pipelines/, schemas/) is over MAX_FUNCTION_LINES (issue #37 item 6), and the project's own
modules import each other without a cycle.

Imports read with `ast`, wherever they stand: at module level, under `if TYPE_CHECKING:`, and
inside functions. An import inside a function only moves the cycle from import time to call
time; the two modules still need each other, so such a cycle counts as one, and the way out is
to move the piece both need into a module of its own (or into the one that owns it), not to
import later.

Edges are what a statement names: `import a.b` -> a.b; `from a.b import c` -> a.b.c when that is
a module of the project, else a.b (c is a name a.b defines or re-exports); relative imports are
resolved against the importing module's package. A package's __init__.py is the module of the
package's name, so `from pipelines.apply import DeltaApplier` depends on pipelines/apply/__init__.py
(and through it on applier.py). The parent packages Python also runs on the way to a.b are not
counted: a submodule importing a sibling is no dependency on the package's re-exports. A bench
script's bare `import bench_support` is its own folder's module (the script's folder is sys.path[0]).
"""
from __future__ import annotations

import ast
import subprocess
from pathlib import Path

MAX_LINES = 400
MAX_FUNCTION_LINES = 60
PRODUCT = ("libs/", "pipelines/", "schemas/")  # bench/ and scripts/ are measurement tools, not held to it
ROOT = Path(__file__).resolve().parents[3]


def _tracked(pattern: str) -> list[str]:
    """Every file git tracks outside tests/ that matches `pattern` (repository-relative)."""
    out = subprocess.run(["git", "ls-files", "-z", "--", pattern], cwd=ROOT, check=True,
                         capture_output=True).stdout.decode()
    return sorted(p for p in out.split("\0") if p and not p.startswith("tests/") and (ROOT / p).is_file())


def _module_name(path: str) -> str:
    parts = path.rpartition(".")[0].split("/")
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _oversized(paths: list[str], root: Path = ROOT) -> dict[str, int]:
    sizes = {p: len((root / p).read_text(encoding="utf-8").splitlines()) for p in paths}
    return {p: n for p, n in sizes.items() if n > MAX_LINES}


def _long_functions(paths: list[str], root: Path = ROOT) -> dict[str, int]:
    """"<path>:<function>" -> its lines (decorators left out), for each function over MAX_FUNCTION_LINES."""
    out = {}
    for path in paths:
        for node in ast.walk(ast.parse((root / path).read_text(encoding="utf-8"), filename=path)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                lines = node.end_lineno - node.lineno + 1
                if lines > MAX_FUNCTION_LINES:
                    out[f"{path}:{node.name}"] = lines
    return out


def _imports(path: str, root: Path, modules: set[str]) -> set[str]:
    """The project's modules that the file at `path` imports (see the module docstring)."""
    name = _module_name(path)
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


def _import_graph(paths: list[str], root: Path = ROOT, extensions: list[str] = ()) -> dict[str, set[str]]:
    """Module -> the project modules it imports. `extensions`: the C sources that setup.py builds
    into modules of their own name (libs/binlog/_frames.c is libs.binlog._frames): modules that
    import nothing of the project."""
    modules = {_module_name(p) for p in [*paths, *extensions]}
    return {**{_module_name(p): set() for p in extensions}, **{_module_name(p): _imports(p, root, modules) for p in paths}}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
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


def _cycle_report(graph: dict[str, set[str]], component: list[str]) -> str:
    members = set(component)
    edges = [f"{a} -> {b}" for a in component for b in sorted(graph[a] & members)]
    return f"{len(component)} modules: " + "; ".join(edges)


def test_no_source_file_is_over_max_lines():
    offenders = _oversized(_tracked("*.py"))
    assert not offenders, (f"{len(offenders)} file(s) over {MAX_LINES} lines; split them by meaning:\n"
                           + "\n".join(f"  {p}: {n} lines" for p, n in sorted(offenders.items(), key=lambda kv: -kv[1])))


def test_no_product_function_is_over_max_function_lines():
    """Issue #37 item 6: no function over 60 lines in the product's code."""
    product = [p for p in _tracked("*.py") if p.startswith(PRODUCT)]
    assert len(product) > 100  # the files were found
    offenders = _long_functions(product)
    assert not offenders, (f"{len(offenders)} function(s) over {MAX_FUNCTION_LINES} lines; split them by meaning:\n"
                           + "\n".join(f"  {f}: {n} lines" for f, n in sorted(offenders.items(), key=lambda kv: -kv[1])))


def test_the_project_modules_import_each_other_without_a_cycle():
    graph = _import_graph(_tracked("*.py"), ROOT, _tracked("*.c"))
    assert len(graph) > 100 and sum(map(len, graph.values())) > 300  # the graph was read, not empty
    cycles = _cycles(graph)
    assert not cycles, (f"{len(cycles)} import cycle(s); move what both modules need into one of its own:\n"
                        + "\n".join(f"  {_cycle_report(graph, c)}" for c in cycles))


def test_the_checks_see_a_long_file_a_cycle_and_each_import_form(tmp_path):
    """The checks themselves, on a small tree: a 401-line file, a 61-line function, a cycle through a function-level
    import, a relative import and a `from package import module` edge."""
    files = {
        "pkg/__init__.py": "",
        "pkg/a.py": "from pkg.b import thing\n",
        "pkg/b.py": "def f():\n    from . import c\n",
        "pkg/c.py": "import pkg.a\nfrom pkg import _ext\n",
        "pkg/d.py": "from pkg import a\nfrom .c import x\n",
        "pkg/long.py": "x = 1\n" * (MAX_LINES + 1),
        "pkg/fits.py": "x = 1\n" * MAX_LINES,
        "pkg/funcs.py": ("def long():\n" + "    x = 1\n" * MAX_FUNCTION_LINES
                         + "def short():\n" + "    x = 1\n" * (MAX_FUNCTION_LINES - 1)),
    }
    for path, text in files.items():
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text(text)
    assert _oversized(list(files), tmp_path) == {"pkg/long.py": MAX_LINES + 1}
    assert _long_functions(list(files), tmp_path) == {"pkg/funcs.py:long": MAX_FUNCTION_LINES + 1}
    graph = _import_graph(list(files), tmp_path, ["pkg/_ext.c"])
    assert graph["pkg.d"] == {"pkg.a", "pkg.c"}
    assert graph["pkg.c"] == {"pkg.a", "pkg._ext"}  # a C extension module, not the package
    assert _cycles(graph) == [["pkg.a", "pkg.b", "pkg.c"]]

"""The code's shape (developers' guide: small files; STYLE.md practice 14): every Python and C
file that git tracks outside tests/ is at most MAX_LINES lines, no function of the product (libs/,
pipelines/, schemas/) is over MAX_FUNCTION_LINES (issue #37 item 6) nor takes more than
MAX_PARAMETERS parameters (issue #55 item 5; the exceptions are named, each with its reason), and
the project's own modules import each other without a cycle. Which folder may import which:
test_folder_order.py.

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
from pathlib import Path

from tests.unit.foundation.code_graph import ROOT, cycle_report, import_cycles, import_graph, tracked

MAX_LINES = 400
MAX_FUNCTION_LINES = 60
MAX_PARAMETERS = 7  # self and cls not counted; *args and **kwargs are one each
PRODUCT = ("libs/", "pipelines/", "schemas/")  # bench/ and scripts/ are measurement tools, not held to it
SOURCES = ("*.py", "*.c", "*.h")
# "<path>:<function>" -> why it takes more than MAX_PARAMETERS. A new entry needs a reason as good
# as these; the way out of the list is a value that groups what travels together.
MANY_PARAMETERS = {
    "libs/simulator/master.py:__init__": "the simulated master's knobs, each a cdc-simulate flag",
    "libs/shipper/shipper.py:ship_server": "cdc-ship --server's options, each a command-line flag",
    "libs/shipper/server_dump.py:stream_once": "one replication connection: server, start point, "
                                                "sink, tracker and the follow/heartbeat options",
    "libs/shipper/server_dump.py:_pump": "stream_once's state handed to its read loop",
    "libs/shipper/server_dump.py:_start_point": "stream_once's resume inputs",
    "libs/shipper/snapshot_run.py:_run": "one snapshot run: server, sink, tables, chunking and limits",
    "libs/shipper/progress.py:progress_line": "every figure of cdc-ship's progress line",
    "libs/simulator/sinks.py:__init__": "the simulator's binlog sink: file naming, rotation, flavour",
    "libs/binlog/rows.py:_read_changes": "the codec's hot loop: the row event's fields, passed flat "
                                         "to spare an object per event",
    "libs/binlog/rows.py:_changes": "as _read_changes, whose caller it is",
    "libs/binlog/dummy.py:query_dummy": "a Query event's header and body fields (MariaDB dummy task)",
    "libs/stream/assembler/model.py:__new__": "the assembler's input frame: a NamedTuple's fields",
    "libs/stream/assembler/groups.py:_emit": "a finished transaction's parts as the assembler holds them",
    "libs/stages/kafka_input.py:rejected_record": "a quarantine row's fields "
                                                  "(schemas/quarantine_record.avsc)",
    "pipelines/stages/sink.py:__init__": "the sink's stages and settings; the ApplyStage protocol "
                                         "(issue #55 item 2) is to take their place",
    "pipelines/apply/batch_writes.py:write": "a batch's writes in their parts; a plan value "
                                             "(issue #55 items 3-4) is to take their place",
    "pipelines/apply/schema_changes.py:carried_table": "a table carried across DDL in its parts; "
                                                       "as batch_writes.write",
    "pipelines/apply/executor_replay.py:replay_on_executors": "the executors' replay inputs; as "
                                                              "batch_writes.write",
    "pipelines/apply/snapshot_rows.py:snapshot_rows_on_executors": "as replay_on_executors",
    "pipelines/apply/snapshot_rows.py:chunk_rows_on_executors": "as replay_on_executors",
    "pipelines/apply/snapshot_fusion.py:plan_fusion": "the sink's fusion inputs; as batch_writes.write",
}


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


def _many_parameters(paths: list[str], root: Path = ROOT) -> dict[str, int]:
    """"<path>:<function>" -> its parameters, for each function with more than MAX_PARAMETERS."""
    out = {}
    for path in paths:
        for node in ast.walk(ast.parse((root / path).read_text(encoding="utf-8"), filename=path)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                a = node.args
                names = [p.arg for p in (*a.posonlyargs, *a.args, *a.kwonlyargs, a.vararg, a.kwarg) if p]
                count = len([n for n in names if n not in ("self", "cls")])
                if count > MAX_PARAMETERS:
                    out[f"{path}:{node.name}"] = count
    return out


def _listing(offenders: dict[str, int], unit: str) -> str:
    return "\n".join(f"  {p}: {n} {unit}" for p, n in sorted(offenders.items(), key=lambda kv: -kv[1]))


def test_no_source_file_is_over_max_lines():
    sources = [p for pattern in SOURCES for p in tracked(pattern)]
    assert any(p.endswith(".c") for p in sources)  # the C cores are measured too
    offenders = _oversized(sources)
    assert not offenders, (f"{len(offenders)} file(s) over {MAX_LINES} lines; split them by meaning:\n"
                           + _listing(offenders, "lines"))


def test_no_product_function_is_over_max_function_lines():
    """Issue #37 item 6: no function over 60 lines in the product's code."""
    product = [p for p in tracked("*.py") if p.startswith(PRODUCT)]
    assert len(product) > 100  # the files were found
    offenders = _long_functions(product)
    assert not offenders, (f"{len(offenders)} function(s) over {MAX_FUNCTION_LINES} lines; "
                           "split them by meaning:\n" + _listing(offenders, "lines"))


def test_no_product_function_takes_more_than_max_parameters_unless_named_with_its_reason():
    product = [p for p in tracked("*.py") if p.startswith(PRODUCT)]
    found = _many_parameters(product)
    unnamed = {f: n for f, n in found.items() if f not in MANY_PARAMETERS}
    assert not unnamed, (f"{len(unnamed)} function(s) take more than {MAX_PARAMETERS} parameters; pass a "
                         "value that groups what travels together:\n" + _listing(unnamed, "parameters"))
    stale = sorted(set(MANY_PARAMETERS) - set(found))
    assert not stale, f"named in MANY_PARAMETERS but no longer over {MAX_PARAMETERS}: {stale}"


def test_the_project_modules_import_each_other_without_a_cycle():
    graph = import_graph(tracked("*.py"), ROOT, tracked("*.c"))
    assert len(graph) > 100 and sum(map(len, graph.values())) > 300  # the graph was read, not empty
    cycles = import_cycles(graph)
    assert not cycles, (f"{len(cycles)} import cycle(s); move what both modules need into one of its own:\n"
                        + "\n".join(f"  {cycle_report(graph, c)}" for c in cycles))


def test_the_checks_see_a_long_file_a_cycle_and_each_import_form(tmp_path):
    """The checks themselves, on a small tree: a 401-line file, a 61-line function, a function of 8
    parameters, a cycle through a function-level import, a relative import and a `from package
    import module` edge."""
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
        "pkg/params.py": ("class K:\n    def m(self, a, b, c, d, e, f, *g):\n        pass\n"
                          "def wide(a, b, c, d, e, f, g, **h):\n    pass\n"),
    }
    for path, text in files.items():
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text(text)
    assert _oversized(list(files), tmp_path) == {"pkg/long.py": MAX_LINES + 1}
    assert _long_functions(list(files), tmp_path) == {"pkg/funcs.py:long": MAX_FUNCTION_LINES + 1}
    graph = import_graph(list(files), tmp_path, ["pkg/_ext.c"])
    assert graph["pkg.d"] == {"pkg.a", "pkg.c"}
    assert graph["pkg.c"] == {"pkg.a", "pkg._ext"}  # a C extension module, not the package
    assert import_cycles(graph) == [["pkg.a", "pkg.b", "pkg.c"]]

"""Which folder may import which (issue #55 item 1; README "Architecture"): the house has floors,
and a folder imports only folders on floors below its own, never one beside it or above it. libs/
is the pure half: no module at its root, and it never imports pipelines/, pyspark or delta.
pipelines/ stands on top of every libs/ folder; at its root only entry points (a `main`).

A folder is libs/<name>/ or pipelines/<name>/ with everything under it (libs/apply/modes/ is
part of libs/apply/). Edges are the import graph's (code_graph.py: module level, under
TYPE_CHECKING and inside functions alike). A new folder gets its floor here, with one line on
its role; an import that would go up says which piece to move down instead.

The bench scripts are measurement tools outside the house; the binlog header's layout (the
offsets of the 19-byte common header, read by hand) is the codec's own: outside libs/binlog/ a
frame's header is read through libs/binlog/header.py.
"""
from __future__ import annotations

import ast

from tests.unit.foundation.code_graph import ROOT, import_graph, module_name, tracked

# Bottom to top; folders on one floor do not import each other.
LIBS_FLOORS: tuple[dict[str, str], ...] = (
    {"runtime": "the process around the code: paths, metrics, gauges, thread dumps, stops",
     "settings": "how any setting is declared, read from YAML and refused",
     "local": "the project's own Kafka broker, MariaDB server and demo database"},
    {"binlog": "the binlog codec: frames, events, row images (and its C cores)"},
    {"contracts": "what the stages speak: change, position, topic record, heartbeat, names",
     "source": "talking to a server as a replica: connection, protocol, privileges, credentials"},
    {"tables": "the job's own Delta tables: names, locations, commit marks"},
    {"targets": "target declarations: columns, keys, defaults, values, decode hints",
     "reads": "SQL a reader runs: lineage views, consistent reads across tables"},
    {"replay": "the per-change replay (WL#5092, WL#3303), lineage, SCD2 versions",
     "stream": "binlog transactions: the boundary parser (WL#4162) and the assembler"},
    {"snapshot": "the consistent snapshot of a living source",
     "dump": "binlog-dump's formats"},
    {"schema_history": "each source table's schema by position, DDL followed",
     "stages": "the pure core of the Spark stages: Kafka input, assembly, counters",
     "shipper": "the shipping loops: files and servers to the topic"},
    {"config": "the job's configuration and its bad-input policy",
     "simulator": "the seeded master that writes real binlog bytes"},
    {"apply": "the pure plan of the apply stage: fold, partition, DDL plan, change log, modes"},
)
PIPELINES_FLOORS: tuple[dict[str, str], ...] = (
    {"job": "the Spark process: session, stopping, metrics, the Spark schemas"},
    {"delta": "Delta reads and writes shared by every stage: transactions, appends, quarantine"},
    {"apply": "the apply stage's Spark half: the applier and its writes"},
    {"reads": "what a reader runs on Spark: consistent reads, lineage views"},
    {"stages": "the streaming stages: decode, assemble, rows, and the sink that calls apply"},
)
FORBIDDEN_IN_LIBS = ("pyspark", "delta", "pipelines")
HEADER_NAMES = ("COMMON_HEADER",)  # plus every *_OFFSET name of libs/binlog/constants.py


def floors() -> dict[str, int]:
    """'libs/apply' -> its floor (pipelines' floors above every libs/ floor; its root on top)."""
    out = {f"libs/{name}": i for i, floor in enumerate(LIBS_FLOORS) for name in floor}
    out |= {f"pipelines/{name}": len(LIBS_FLOORS) + i
            for i, floor in enumerate(PIPELINES_FLOORS) for name in floor}
    return out | {"pipelines": len(LIBS_FLOORS) + len(PIPELINES_FLOORS)}


def folder_of(module: str) -> str:
    """libs.apply.modes.scd2 and libs.apply (its __init__) -> 'libs/apply'; pipelines.replicate
    (a module at the root) -> 'pipelines'."""
    parts = module.split(".")
    if len(parts) == 1 or (len(parts) == 2 and not (ROOT / parts[0] / parts[1]).is_dir()):
        return parts[0]
    return "/".join(parts[:2])


def upward(graph: dict[str, set[str]], floor_of: dict[str, int]) -> list[str]:
    """Every import between two folders that does not go down a floor (or names no floor)."""
    out = []
    for module, targets in sorted(graph.items()):
        here = folder_of(module)
        for target in sorted(targets):
            there = folder_of(target)
            if here == there or not module.startswith(("libs.", "pipelines.")):
                continue
            if here not in floor_of or there not in floor_of or floor_of[there] >= floor_of[here]:
                out.append(f"{module} ({here}) -> {target} ({there})")
    return out


def foreign_imports(path: str, root=ROOT) -> list[str]:
    """What a libs/ module imports of Spark, Delta or pipelines/."""
    found = []
    for node in ast.walk(ast.parse((root / path).read_text(encoding="utf-8"), filename=path)):
        names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                 else [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level else [])
        found += [n for n in names if n.split(".")[0] in FORBIDDEN_IN_LIBS]
    return found


def header_reads(path: str, offsets: set[str], root=ROOT) -> list[str]:
    """Where a module outside libs/binlog/ reads the common header by hand: it imports a header
    layout name, or indexes a frame-like value at the type byte (4) or past the header (19 + n)."""
    out = []
    for node in ast.walk(ast.parse((root / path).read_text(encoding="utf-8"), filename=path)):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("libs.binlog"):
            out += [f"{path}:{node.lineno} imports {a.name}" for a in node.names if a.name in offsets]
        if isinstance(node, ast.Subscript) and _frame_like(node.value):
            index = node.slice
            past_header = (isinstance(index, ast.BinOp) and isinstance(index.left, ast.Constant)
                           and index.left.value == 19)
            if (isinstance(index, ast.Constant) and index.value == 4) or past_header:
                out.append(f"{path}:{node.lineno} reads {ast.unparse(node)}")
    return out


def _frame_like(value: ast.expr) -> bool:
    text = ast.unparse(value).lower()
    return any(word in text for word in ("frame", "raw", "value", "header", "event"))


def _header_layout_names() -> set[str]:
    tree = ast.parse((ROOT / "libs/binlog/constants.py").read_text(encoding="utf-8"))
    names = {t.id for node in ast.walk(tree) if isinstance(node, ast.Assign)
             for t in node.targets if isinstance(t, ast.Name)}
    return {n for n in names if n.endswith("_OFFSET")} | set(HEADER_NAMES)


def _product() -> list[str]:
    return [p for p in tracked("*.py") if p.startswith(("libs/", "pipelines/"))]


def test_every_folder_has_a_floor_and_libs_keeps_no_loose_module():
    paths = _product()
    folders = {folder_of(module_name(p)) for p in paths} - {"libs", "pipelines"}
    assert len(folders) >= 20  # the tree was read
    assert sorted(folders - set(floors())) == [], "a folder without a floor: give it one in this file"
    loose = [p for p in paths if p.count("/") == 1 and p.startswith("libs/") and p != "libs/__init__.py"]
    assert loose == [], "libs/ keeps no module at its root: each belongs to a folder of its role"


def test_no_import_goes_up_or_sideways_between_folders():
    graph = import_graph(tracked("*.py"), ROOT, tracked("*.c"))
    crossing = [t for m, ts in graph.items() for t in ts if folder_of(m) != folder_of(t)]
    assert len(crossing) > 300  # edges between folders were read
    offenders = upward(graph, floors())
    assert not offenders, (f"{len(offenders)} import(s) not going down a floor (test_folder_order.py's "
                           "table); move the piece both need into the lower folder:\n  "
                           + "\n  ".join(offenders))


def test_libs_never_imports_spark_delta_or_pipelines():
    offenders = {p: found for p in _product() if p.startswith("libs/")
                 for found in [foreign_imports(p)] if found}
    assert offenders == {}


def test_pipelines_root_keeps_only_entry_points():
    roots = [p for p in _product() if p.startswith("pipelines/") and p.count("/") == 1]
    assert "pipelines/replicate.py" in roots
    without_main = []
    for path in roots:
        tree = ast.parse((ROOT / path).read_text(encoding="utf-8"))
        if path != "pipelines/__init__.py" and not any(
                isinstance(n, ast.FunctionDef) and n.name == "main" for n in tree.body):
            without_main.append(path)
    assert without_main == [], "not an entry point: move it to the pipelines/ folder of its role"


def test_only_the_codec_reads_the_binlog_header_by_hand():
    offsets = _header_layout_names()
    assert {"EVENT_TYPE_OFFSET", "COMMON_HEADER"} <= offsets
    found = [r for p in _product() if not p.startswith("libs/binlog/") for r in header_reads(p, offsets)]
    assert found == [], "read the header through libs/binlog/header.py:\n  " + "\n  ".join(found)


def test_the_checks_see_an_upward_import_a_sideways_one_and_a_hand_read_header(tmp_path):
    graph = {"libs.binlog.a": {"libs.stream.b"},                  # up: the codec importing the stream
             "libs.stream.b": {"libs.replay.c", "libs.binlog.a"},  # sideways (same floor), and down
             "libs.replay.c": set(), "libs.newfolder.d": {"libs.binlog.a"},
             "pipelines.stages.sink": {"pipelines.apply.applier", "libs.apply.plan"},
             "pipelines.apply.applier": {"pipelines.stages.sink"}}
    assert upward(graph, floors()) == [
        "libs.binlog.a (libs/binlog) -> libs.stream.b (libs/stream)",
        "libs.newfolder.d (libs/newfolder) -> libs.binlog.a (libs/binlog)",
        "libs.stream.b (libs/stream) -> libs.replay.c (libs/replay)",
        "pipelines.apply.applier (pipelines/apply) -> pipelines.stages.sink (pipelines/stages)"]
    (tmp_path / "m.py").write_text("from libs.binlog.constants import EVENT_TYPE_OFFSET\nimport pyspark.sql\n"
                                   "t = frame[4]\nflag = last_frame[19 + 12] & 1\nrow = pair[4]\n")
    assert header_reads("m.py", {"EVENT_TYPE_OFFSET"}, tmp_path) == [
        "m.py:1 imports EVENT_TYPE_OFFSET", "m.py:3 reads frame[4]", "m.py:4 reads last_frame[19 + 12]"]
    assert foreign_imports("m.py", tmp_path) == ["pyspark.sql"]

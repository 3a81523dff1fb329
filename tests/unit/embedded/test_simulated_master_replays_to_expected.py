"""The embedded default's data path without Spark (issue #6 "The embedded default", issue #5
"Replay semantics"): the simulator writes a binlog (no DDL after the CREATE TABLEs), the codec
and assembler turn it into change records, libs.replay replays them onto empty targets declared
by the simulator's own targets.sql, and every table must equal the simulator's expected table.
The Spark run of the same path is tests/integration/embedded."""
from __future__ import annotations

import pytest

from libs.apply.plan import group_changes
from libs.stream.assembler import InMemorySpillStore
from libs.replay import replay
from libs.simulator.compare import compare_table, load_expected
from libs.simulator.expected import write_expected
from libs.simulator.run import SimulationOptions, simulate
from libs.simulator.sinks import FileSink
from libs.stages.assembly import InputFrame, assemble_group
from tests.change_builders import decoded
from libs.targets import load_targets


def replicate_in_memory(opts: SimulationOptions, tmp_path):
    sink = FileSink()
    result = simulate(opts, sink)
    expected = write_expected(tmp_path / "expected", result.master.model, opts.as_dict(),
                              result.master.statements)
    frames = [InputFrame(f.data, opts.file_name, f.pos) for f in sink.frames]
    records, _ = assemble_group("sim", None, frames, InMemorySpillStore())
    assert not [r for r in records if r["kind"] == "quarantine"]
    changes = decoded(records)
    catalog = load_targets(None, [str(expected / "targets.sql")])
    tables = {}
    for (database, table), group in group_changes(changes).items():
        target = catalog.get(database, table)
        if target is None:  # CREATE DATABASE: recorded in the change log, no table to replay on
            assert {c.op for c in group} == {"ddl"}, (database, table)
            continue
        tables[f"{database}.{table}"] = replay(target, [], group).final_table([])
    return expected, tables


@pytest.mark.parametrize("row_image", ["minimal", "noblob", "full"])
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_replayed_tables_equal_the_masters(row_image, seed, tmp_path):
    opts = SimulationOptions(row_image=row_image, seed=seed, transactions=400, ddl_rate=0.0)
    expected, tables = replicate_in_memory(opts, tmp_path)
    manifest, rows = load_expected(expected)
    results = [compare_table(name, entry, rows[name], tables.get(name, []))
               for name, entry in sorted(manifest["tables"].items())]
    assert all(r.equal for r in results), "\n".join(r.summary() for r in results if not r.equal)
    assert sum(r.expected_rows for r in results) > 50  # the workload left rows to compare

"""The fold (libs/apply/fold.py) against the exact replay on real streams: the simulator's binlogs
in every row image format, and the corpus' binlogs written by a real MariaDB, decoded as the job
decodes them, cut into batches; batch after batch, fold + the replay of what it leaves must give
the replay's table, change log and deleted rows (or the same stop), and fold most changes."""
from __future__ import annotations

from operator import attrgetter

import pytest

from libs.stream.assembler import InMemorySpillStore
from libs.binlog import iter_frames
from libs.replay import ReplayStopped, replay
from libs.simulator.run import SimulationOptions, simulate
from libs.simulator.schema import replica_ddl, standard_tables
from libs.simulator.sinks import FileSink
from libs.stages.assembly import InputFrame, assemble_group
from tests.change_builders import decoded
from libs.targets import build_catalog, parse_ddl
from libs.targets.decoding import DecodeHints
from tests.unit.apply.fold_harness import by_fold, by_replay
from tests.unit.replay.replay_builders import mariadb_corpus


def _changes(binlog: bytes, name: str, hints=None) -> list[dict]:
    frames = [InputFrame(raw, name, pos, 0, i) for i, (pos, raw) in enumerate(iter_frames(binlog, file=name))]
    records, _ = assemble_group("src", None, frames, InMemorySpillStore(), now=0)
    return decoded(records, hints)


def _compare_in_batches(catalog, changes, batches: int = 3) -> tuple[int, int]:
    """Every target's changes, batch by batch: (changes folded, changes in all)."""
    folded = total = 0
    for target in catalog.targets:
        mine = sorted((c for c in changes if (c.database, c.table) == (target.database, target.table)
                       and c.op in ("insert", "update", "delete")), key=attrgetter("order"))
        stored: list[dict] = []
        size = -(-len(mine) // batches) or 1
        for start in range(0, len(mine), size):
            batch = mine[start:start + size]
            try:
                expected = by_replay(target, batch, stored)
            except ReplayStopped as stop:
                with pytest.raises(ReplayStopped) as ours:
                    by_fold(target, batch, stored)
                assert str(ours.value.error) == str(stop.error)
                break
            table, log, deleted, result = by_fold(target, batch, stored)
            assert (table, log, deleted) == expected, target.qualified_name
            folded, total = folded + len(result.log.at), total + len(batch)
            stored = replay(target, stored, batch).final_table(stored)
    return folded, total


@pytest.mark.parametrize("image", ["minimal", "noblob", "full"])
def test_simulated_streams_fold_as_they_replay(image):
    sink = FileSink()
    simulate(SimulationOptions(row_image=image, ddl_rate=0.0, transactions=300, seed=11), sink)
    ddl = replica_ddl(standard_tables("mariadb"), "sim")
    catalog = build_catalog(None, "sim.sql", parse_ddl(ddl, "sim.sql"))
    folded, total = _compare_in_batches(catalog, _changes(sink.bytes(), "sim-bin.000001"))
    assert total > 500 and folded > total // 2, (folded, total)


@pytest.mark.parametrize("scenario", ["row_minimal", "row_noblob", "row_full", "all_types"])
def test_corpus_streams_fold_as_they_replay(scenario):
    catalog, binlog, _ = mariadb_corpus(scenario)
    folded, total = _compare_in_batches(catalog, _changes(binlog.read_bytes(), binlog.name,
                                                          DecodeHints(catalog.targets)))
    assert total > 0 and folded > 0, (folded, total)

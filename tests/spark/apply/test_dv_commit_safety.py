"""The position index of writes.deletion_vector_commits (pipelines/apply/position_writes.py, issue
#57 item 3) can never make a wrong table. The oracle: the same batches applied with the setting
off (MERGEs), the tables after each batch, every column and `_lineage` included. Against it, with
the setting on: an index forgotten or damaged between batches (an entry at another live row, past
its file's rows, at a file not in the table, at a deleted row; an entry missing); a job killed -9
between its deletion-vector files and its commit, started again on the same batch, then a
compaction, a VACUUM and a further batch, every version read back by time travel. And another
writer's commit that Delta lets in between the DV commit's read and its commit."""
from __future__ import annotations

import logging
import subprocess
import sys
import threading
import time
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from libs.apply.position_index import Positions, _ids_of
from libs.config.sections import WritesSettings
from libs.tables.table_location import TableLocation
from pipelines.apply import DeltaApplier
from pipelines.apply import tables as D
from pipelines.apply.known_targets import KnownTargets
from pipelines.apply.position_writes import PositionCommit, PositionTable, read_positions
from pipelines.delta.delta_txn import TXN_APP_ID_CONF, TXN_VERSION_CONF
from pipelines.delta.dv_commit import DvTable, TableMoved
from tests.change_builders import Source

from .builders import catalog_from_ddl, changes_df, config, delta, version
from .test_dv_commits import DDL as SHOP_DDL
from .test_dv_commits import MERGES
from .test_dv_commits import _operations, _table

pytestmark = pytest.mark.spark

DDL = ";\n".join(s for s in SHOP_DDL.split(";\n") if "shop.b " not in s)  # shop.a (keyed), shop.k (keyless)
TABLES = ("shop__a", "shop__k")
REPO = Path(__file__).resolve().parents[3]
MODULE = "tests.spark.apply.test_dv_commit_safety"  # run as the killed job by `python -m`
GONE = "part-00000-00000000-0000-0000-0000-000000000000-c000.snappy.parquet"  # no file of the table


def _batches():
    """Batch 1 writes a's file F1 (images of 1, 2, 12, 13); batches 2 and 3 update 1, 13 and 2
    again: F1 stays with a live row (12) and deleted ones."""
    a, k = Source("shop", "a", ["id", "v", "n"]), Source("shop", "k", ["x", "y"])
    k.trx = 200  # one source stream: transaction numbers must not repeat

    def up(i, v):
        return a.update({"id": i}, {"v": v})
    return [
        [*(a.insert({"id": i, "v": f"v{i}", "n": i}) for i in range(1, 11)),
         k.insert({"x": 1, "y": "p"}), k.insert({"x": 1, "y": "p"}), k.insert({"x": 2, "y": "t"})],
        [up(1, "b1"), up(2, "b1"), a.insert({"id": 12}), a.insert({"id": 13}),
         k.update({"x": 1, "y": "p"}, {"y": "q"})],
        [up(1, "b2"), up(13, "b2"), up(4, "b2"), k.update({"x": 2, "y": "t"}, {"y": "u"})],
        [up(6, "b3"), up(2, "b3"), a.delete({"id": 7}), k.update({"x": 1, "y": "p"}, {"y": "r"})],
        [up(1, "b4"), up(8, "b4"), a.insert({"id": 11}), k.insert({"x": 3, "y": "s"})],
    ]


BATCHES = _batches()


def _dv_config(root: Path):
    return config(root, target_overwrite_max_rows=0, writes=WritesSettings(deletion_vector_commits=True))


def _tables(spark, cfg, version_of=None):
    """{name: rows} of TABLES, at Delta version version_of[name] when given."""
    if version_of is None:
        return {name: _table(spark, cfg, name) for name in TABLES}
    return {name: sorted(spark.read.format("delta").option("versionAsOf", version_of[name])
                         .load(D.table_path(cfg.delta_root, name)).toJSON().collect()) for name in TABLES}


@pytest.fixture(scope="module")
def merged(spark, tmp_path_factory):
    """The MERGE path's tables after each batch of BATCHES."""
    cfg = config(tmp_path_factory.mktemp("merged"), target_overwrite_max_rows=0, writes=MERGES)
    applier = DeltaApplier(catalog_from_ddl(DDL), cfg)
    out = []
    for batch_id, batch in enumerate(BATCHES):
        applier(changes_df(spark, batch), batch_id)
        out.append(_tables(spark, cfg))
    assert "UPDATE" not in _operations(spark, cfg, "shop__a")  # no DV commit
    return out


def _location(cfg, name) -> TableLocation:
    return TableLocation(path=D.table_path(cfg.delta_root, name))


def _held(spark, applier, cfg, name) -> PositionTable:
    """The table's index as the next batch will use it: the applier's own when it is current,
    else one read now (and given to the applier)."""
    known, location = applier.known, _location(cfg, name)
    held = known.positions.get(location)
    if not (isinstance(held, PositionTable) and held.index.valid_at(version(spark, cfg, name))):
        held = known.positions[location] = read_positions(spark, location.path, known.position_max_rows)
    return held


def _place(held: PositionTable, row_id: str, position: tuple[str, int]) -> None:
    """Damage: the index says `row_id` is at `position` (AddFile.path, row index)."""
    index = held.index
    at = int(index._find(_ids_of([row_id]))[0])
    assert at >= 0, row_id
    index._file_of[at], index._row_of[at] = index._number(position[0]), position[1]


def _drop(held: PositionTable, row_id: str) -> None:
    """Damage: the index forgets a stored row."""
    held.index.apply_commit(held.index.version, [row_id], Positions([], [], []))


def _damage(spark, applier, cfg, batch_id: int, saved: dict) -> dict[str, str]:
    """What is done to the index before batch `batch_id`: {table: what refuses it}."""
    if batch_id == 1:  # forgotten (a restarted job has none either): read again, then used
        applier.known.positions.clear()
        return {}
    a, k = _held(spark, applier, cfg, "shop__a"), _held(spark, applier, cfg, "shop__k")
    row = {r["id"]: r["_row_id"] for r in delta(spark, cfg, "shop__a").collect()}
    k_row = {r["y"]: r["_row_id"] for r in delta(spark, cfg, "shop__k").collect()}
    if batch_id == 2:  # a: 4 said to be where 9 is, a live row; k: the row the batch updates missing
        saved["1 after batch 1"] = a.index.position(row[1])  # (in F1)
        _place(a, row[4], a.index.position(row[9]))
        _drop(k, k_row["t"])  # else taken for a new row, and stored twice
        return {"shop__a": "no position write (PositionsWrong)",  # the row there is not 4
                "shop__k": "no position write (PositionsWrong)"}  # one row less than the table
    if batch_id == 3:  # a: a file that is not the table's; k: a row index past its file's rows
        _place(a, row[6], (GONE, 0))
        _place(k, k_row["p"], (k.index.position(k_row["p"])[0], 10**6))
        return {"shop__a": "no position write (KeyError)", "shop__k": "no position write (PositionsWrong)"}
    # a: 1 said to be at its batch 1 image: its own `_row_id` there, but a deleted row of F1
    _place(a, row[1], saved["1 after batch 1"])
    return {"shop__a": "position commit not made (PositionsWrong)"}  # F1's deletion vector has it


def test_a_forgotten_or_damaged_index_gives_the_merge_paths_tables(spark, tmp_path, merged, caplog):
    caplog.set_level(logging.DEBUG, logger="pipelines.apply.position_writes")
    cfg = _dv_config(tmp_path)
    applier, saved = DeltaApplier(catalog_from_ddl(DDL), cfg), {}
    for batch_id, batch in enumerate(BATCHES):
        refused = _damage(spark, applier, cfg, batch_id, saved) if batch_id else {}
        caplog.clear()
        applier(changes_df(spark, batch), batch_id)
        assert _tables(spark, cfg) == merged[batch_id], batch_id
        said = [r.getMessage() for r in caplog.records]
        for name in TABLES:
            last = _operations(spark, cfg, name)[-1]
            if name not in refused:
                assert last == "UPDATE", (batch_id, name, said)  # a DV commit
            else:
                assert last == "MERGE", (batch_id, name, said)
                assert any(f"/{name}: {refused[name]}" in m for m in said), (batch_id, name, said)


def _vacuum(spark, cfg, name) -> None:
    session = spark.newSession()  # as pipelines/apply/maintenance.py runs it
    session.conf.set("spark.databricks.delta.retentionDurationCheck.enabled", "false")
    session.conf.set("spark.sql.sources.parallelPartitionDiscovery.parallelism", "2")
    session.sql(f"VACUUM delta.`{D.table_path(cfg.delta_root, name)}` RETAIN 0 HOURS").collect()


def _files(cfg, name, pattern="*") -> set[str]:
    return {p.name for p in Path(D.table_path(cfg.delta_root, name)).glob(pattern) if p.is_file()}


def _crash_child(root: str, markers: str) -> None:
    """The job of the kill test (run as `python -m` this module): batch 1 applied with each
    table's commit held right after its deletion-vector file and its new rows' files are written
    (a marker file per table says so), where it waits for the test's kill -9."""
    import pipelines.delta.dv_commit as dv
    from pipelines.job.spark_session import SessionOptions, build_session

    spark = build_session(SessionOptions(app_name="dv-kill", driver_memory="1g"))
    held, real_dvs, real_appended = threading.local(), dv.DvTable._deletion_vectors, dv._appended

    def dvs(self, touched, outcome, *args):
        held.path, actions = self.path, real_dvs(self, touched, outcome, *args)
        held.dv_files = outcome.dv_files
        return actions

    def appended(written, outcome):
        actions = real_appended(written, outcome)
        Path(markers, Path(held.path).name).write_text(str(held.dv_files))
        time.sleep(600)  # the kill comes first
        return actions

    dv.DvTable._deletion_vectors, dv._appended = dvs, appended
    DeltaApplier(catalog_from_ddl(DDL), _dv_config(Path(root)))(changes_df(spark, BATCHES[1]), 1)


def _kill_at_the_commit(tmp_path: Path) -> None:
    """Batch 1 applied by a job (another process) that is killed -9 once every table has its
    deletion-vector and data files written and its commit not made."""
    from tests.integration.process_tree import sigkill_tree

    markers = tmp_path / "markers"
    markers.mkdir()
    with open(tmp_path / "killed_job.log", "wb") as out:
        job = subprocess.Popen([sys.executable, "-m", MODULE, str(tmp_path), str(markers)], cwd=REPO,
                               stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + 240
        while len(list(markers.iterdir())) < len(TABLES):
            assert job.poll() is None, (tmp_path / "killed_job.log").read_text()[-3000:]
            assert time.monotonic() < deadline, "the job did not reach its commits"
            time.sleep(0.2)
        assert {p.name: p.read_text() for p in markers.iterdir()} == {name: "1" for name in TABLES}
    finally:
        if job.poll() is None:
            sigkill_tree(job)


def test_a_job_killed_between_its_dv_files_and_its_commit_then_compaction_and_vacuum(spark, tmp_path, merged):
    cfg = _dv_config(tmp_path)
    DeltaApplier(catalog_from_ddl(DDL), cfg)(changes_df(spark, BATCHES[0]), 0)
    versions = [{name: version(spark, cfg, name) for name in TABLES}]  # per batch: what it wrote
    before = {name: _files(cfg, name) for name in TABLES}
    _kill_at_the_commit(tmp_path)
    orphans = {}
    for name in TABLES:  # nothing committed; its deletion vector and new rows' files left behind
        assert version(spark, cfg, name) == versions[0][name], name
        orphans[name] = _files(cfg, name) - before[name]
        assert any(f.startswith("deletion_vector_") for f in orphans[name]), (name, orphans[name])
        assert any(f.endswith(".parquet") for f in orphans[name]), (name, orphans[name])
    assert _tables(spark, cfg) == merged[0]
    applier = DeltaApplier(catalog_from_ddl(DDL), cfg)  # the job started again: the same batch, then on
    for batch_id in (1, 2):
        applier(changes_df(spark, BATCHES[batch_id]), batch_id)
        versions.append({name: version(spark, cfg, name) for name in TABLES})
        assert _tables(spark, cfg) == merged[batch_id], batch_id
    assert [_operations(spark, cfg, name)[-2:] for name in TABLES] == [["UPDATE", "UPDATE"]] * 2  # DV commits
    for batch_id, at in enumerate(versions):  # every version written so far, by time travel
        assert _tables(spark, cfg, at) == merged[batch_id], batch_id
    stored = {name: _files(cfg, name, "*.parquet") for name in TABLES}
    for name in TABLES:  # a compaction, then a VACUUM of everything it and the kill left
        spark.sql(f"OPTIMIZE delta.`{D.table_path(cfg.delta_root, name)}`")
        _vacuum(spark, cfg, name)
        assert not orphans[name] & _files(cfg, name), name  # the killed job's files: gone
        assert stored[name] - _files(cfg, name, "*.parquet"), name  # compacted files: gone
        assert not _files(cfg, name, "deletion_vector_*"), name  # (none in use after the OPTIMIZE)
    compacted = {name: version(spark, cfg, name) for name in TABLES}
    assert _tables(spark, cfg) == merged[2]
    applier(changes_df(spark, BATCHES[3]), 3)  # its positions read again: the files are others
    assert [_operations(spark, cfg, name)[-1] for name in TABLES] == ["UPDATE"] * 2
    assert _tables(spark, cfg) == merged[3]
    assert _tables(spark, cfg, compacted) == merged[2]
    assert _tables(spark, cfg, {name: version(spark, cfg, name) for name in TABLES}) == merged[3]
    with pytest.raises(Exception):  # a version before the VACUUM: its files are gone (it was real)
        _tables(spark, cfg, versions[1])


def test_a_commit_delta_puts_after_another_writers_is_not_built_on(spark, tmp_path, monkeypatch):
    """Delta lets another writer's commit that adds no file and removes none this one read (a
    DELETE of a whole file) in between the DV commit's snapshot and its commit, and puts ours
    after it: the live files and positions held then miss that change. They were kept, and the
    next commit at a row of the removed file added the file back, its deleted rows with it."""
    path = str(tmp_path / "t")
    for ids, mode in ((range(10), "overwrite"), (range(10, 13), "append")):  # files of 10 and 3 rows
        spark.createDataFrame([(i, str(i)) for i in ids], "id long, _row_id string").coalesce(1).write \
            .format("delta").mode(mode).option("delta.enableDeletionVectors", "true").save(path)
    location = TableLocation(path=path)
    known = KnownTargets("app", 100, position_commits=True, position_max_rows=100)
    held = known.positions[location] = read_positions(spark, path, 100)
    rows = {file: int(add.numLogicalRecords().get()) for file, add in held.table.files.items()}
    ten, three = sorted(rows, key=lambda file: -rows[file])
    real = DvTable._deletion_vectors

    def another_writer_first(self, *args):  # inside the transaction: after its snapshot, before its commit
        other = threading.Thread(target=spark.sql, args=(f"DELETE FROM delta.`{path}` WHERE id < 10",))
        other.start()  # (another JVM thread: not in this transaction)
        other.join()
        return real(self, *args)

    monkeypatch.setattr(DvTable, "_deletion_vectors", another_writer_first)
    session = spark.newSession()  # the txn confs, as pipelines/delta/delta_txn.py sets them
    session.conf.set(TXN_APP_ID_CONF, "app")
    session.conf.set(TXN_VERSION_CONF, "1")
    PositionCommit(session, known, location, held, {three: [0]}, None, ["10"],
                   merge=lambda: pytest.fail("the commit fell back to the MERGE"))(path)
    monkeypatch.setattr(DvTable, "_deletion_vectors", real)
    from delta.tables import DeltaTable

    history = DeltaTable.forPath(spark, path).history().orderBy("version").collect()
    assert [r["operation"] for r in history] == ["WRITE", "WRITE", "DELETE", "UPDATE"]  # ours after it
    assert location not in known.positions  # the next batch reads its positions again
    with pytest.raises(TableMoved):  # and no commit from what it held
        held.table.commit({ten: np.array([5])}, None, "app", 2)
    assert sorted(r["id"] for r in spark.read.format("delta").load(path).collect()) == [11, 12]


def test_a_runtime_without_delta_sparks_classes_plans_the_merge(spark, tmp_path, monkeypatch):
    """Databricks Runtime's Delta is not delta-spark 4.0.0: its classes are not there. py4j makes
    a missing class's name a JavaPackage, and calling it raises TypeError: the planning gives
    None (the MERGE), the batch does not fail. Here with Databricks' name, which this JVM lacks."""
    import pipelines.apply.position_writes as P

    def absent(spark_, location):  # snapshot() as it would reach Databricks' DeltaLog
        log = spark_.sparkContext._jvm.com.databricks.sql.transaction.tahoe.DeltaLog
        return log.forTableWithSnapshot(spark_._jsparkSession, location.path)._2()

    monkeypatch.setattr(P, "snapshot", absent)
    known = KnownTargets("app", 100, position_commits=True, position_max_rows=100)
    plan = SimpleNamespace(path=str(tmp_path / "t"), upserts=[], deletes=[])
    assert P.position_write(known, spark, plan, merge=lambda: pytest.fail("planned")) is None


if __name__ == "__main__":
    _crash_child(*sys.argv[1:3])

"""writes.deletion_vector_commits (pipelines/apply/position_writes.py, issue #57 item 3): a current
target written by ONE commit of deletion vectors at its rows' known positions plus their new
images. The oracle: the same batches applied with the setting off (root A: MERGEs) and on (root
B) give equal tables, every column and `_lineage` included, after every batch; B's steady
batches are DV commits (Delta's UPDATE operation), not MERGEs; a foreign commit between batches
(the same on both roots) makes B read its positions again; B's last batch applied again changes
nothing;
_cdc_progress records B's commits' versions as it records the MERGE's."""

import pytest

from libs.tables.system_tables import PROGRESS
from libs.tables.table_location import TableLocation
from pipelines.apply import DeltaApplier
from pipelines.apply import tables as D
from pipelines.apply.known_targets import KnownTargets
from libs.apply.keyed_copy import KeyedCopy
from pipelines.apply import position_writes
from pipelines.apply.position_writes import PositionTable
from pipelines.delta.dv_commit import DvTable
from libs.config.sections import WritesSettings

from .builders import Source, catalog_from_ddl, changes_df, config, delta, version

pytestmark = pytest.mark.spark

DDL = ("CREATE TABLE shop.a (id int NOT NULL, v varchar(10) DEFAULT 'dflt', n int DEFAULT 900,"
       " PRIMARY KEY (id));\n"
       "CREATE TABLE shop.b (id int NOT NULL, w varchar(10), PRIMARY KEY (id));\n"
       "CREATE TABLE shop.k (x int, y varchar(5))")  # keyless: identical rows are distinct rows
TABLES = ("shop__a", "shop__b", "shop__k")
MERGES = WritesSettings(deletion_vector_commits=False)  # the oracle's writes: MERGEs


def _batches():
    a, b = Source("shop", "a", ["id", "v", "n"]), Source("shop", "b", ["id", "w"])
    k = Source("shop", "k", ["x", "y"])
    b.trx, k.trx = 100, 200  # one source stream: transaction numbers must not repeat
    return [
        [*(a.insert({"id": i, "v": f"v{i}", "n": i}) for i in range(1, 8)),
         *(b.insert({"id": i, "w": f"w{i}"}) for i in range(1, 5)),
         k.insert({"x": 1, "y": "p"}), k.insert({"x": 1, "y": "p"})],
        # updates (one minimal image), a key change, a key deleted and inserted again in the batch
        [a.update({"id": 1}, {"v": "y"}), a.update({"id": 2}, {"id": 20}), a.delete({"id": 3}),
         a.insert({"id": 3, "v": "again"}), b.update({"id": 1}, {"w": "x1"}), b.delete({"id": 2}),
         k.update({"x": 1, "y": "p"}, {"y": "q"})],
        # an update that changes nothing, a delete, a new row
        [a.update({"id": 4}, {"v": "v4", "n": 4}), a.delete({"id": 5}), a.insert({"id": 8}),
         b.insert({"id": 5, "w": "w5"}), k.delete({"x": 1, "y": "q"}), k.insert({"x": 2})],
        [a.delete({"id": 6}), a.update({"id": 7}, {"n": 70}), b.update({"id": 3}, {"w": "x3"})],
        # a key deleted in the last batch inserted again; deletes only on b
        [a.insert({"id": 6, "v": "back"}), a.update({"id": 20}, {"n": 21}), b.delete({"id": 4})],
        [a.update({"id": 4}, {"v": "z"}), b.update({"id": 5}, {"w": "x5"}), k.insert({"x": 3})],
    ]


def _table(spark, cfg, name):
    """Every column, `_row_id` and `_lineage` included, as sorted JSON rows."""
    return sorted(delta(spark, cfg, name).toJSON().collect())


def _operations(spark, cfg, name):
    from delta.tables import DeltaTable

    history = DeltaTable.forPath(spark, D.table_path(cfg.delta_root, name)).history().orderBy("version")
    return [r["operation"] for r in history.select("operation").collect()]


def _foreign_commits(spark, cfg):
    """What another writer does to both roots alike: an UPDATE of a column, a compaction."""
    a = D.table_path(cfg.delta_root, "shop__a")
    spark.sql(f"UPDATE delta.`{a}` SET n = n + 1000 WHERE id = 7")
    spark.sql(f"OPTIMIZE delta.`{D.table_path(cfg.delta_root, 'shop__b')}`")


def _progress_versions(spark, cfg, batch_id):
    rows = delta(spark, cfg, PROGRESS).where(f"batch_id = {batch_id}").collect()
    return {name: v for r in rows for name, v in (r["table_versions"] or {}).items()}


FAILED_COMMIT = (2, "a")  # (batch, table) whose DV commit fails on the copies' root: its MERGE instead


@pytest.fixture
def index_reads(monkeypatch):
    """The tables whose position index was read or confirmed, and one DV commit made to fail."""
    seen = {"index": [], "batch": 0}
    real_read, real_confirm = position_writes.read_positions, position_writes.confirm
    real_commit = DvTable.commit

    def read(spark, path, max_rows):
        seen["index"].append((seen["batch"], path))
        return real_read(spark, path, max_rows)

    def confirm(spark, held, placed):
        seen["index"].append((seen["batch"], held.table.path))
        return real_confirm(spark, held, placed)

    def commit(self, *args, **kwargs):
        if (seen["batch"], self.path.rstrip("/").rsplit("__", 1)[-1]) == FAILED_COMMIT and "/c/" in self.path:
            raise RuntimeError("a DV commit that fails")
        return real_commit(self, *args, **kwargs)

    monkeypatch.setattr(position_writes, "read_positions", read)
    monkeypatch.setattr(position_writes, "confirm", confirm)
    monkeypatch.setattr(DvTable, "commit", commit)
    return seen


def test_dv_commits_give_the_merge_paths_tables_after_every_batch_and_once(spark, tmp_path, monkeypatch,
                                                                          index_reads):
    """Root B: small mirrored tables (the position index); root C: a and b held as keyed copies
    with their rows' positions (target_copy_max_rows), k read by the replay (read positions)."""
    merged = config(tmp_path / "a", target_overwrite_max_rows=0, writes=MERGES)
    positioned = config(tmp_path / "b", target_overwrite_max_rows=0,
                        writes=WritesSettings(deletion_vector_commits=True))
    copied = config(tmp_path / "c", target_mirror_max_rows=1, target_copy_max_rows=1000,
                    writes=WritesSettings(deletion_vector_commits=True))
    roots = (merged, positioned, copied)
    appliers = {id(cfg): DeltaApplier(catalog_from_ddl(DDL), cfg) for cfg in roots}
    assert not appliers[id(merged)].known.position_commits
    for batch_id, batch in enumerate(_batches()):
        index_reads["batch"] = batch_id
        if batch_id == 4:
            for cfg in roots:
                _foreign_commits(spark, cfg)
        for cfg in roots:
            appliers[id(cfg)](changes_df(spark, batch), batch_id)
        for name in TABLES:
            assert _table(spark, positioned, name) == _table(spark, merged, name), (batch_id, name)
            assert _table(spark, copied, name) == _table(spark, merged, name), (batch_id, name)
        for cfg in (positioned, copied):  # the commit's version recorded as the MERGE's is
            versions = _progress_versions(spark, cfg, batch_id)
            assert versions and all(versions[t] == version(spark, cfg, t) for t in versions), versions
    for name in ("shop__a", "shop__b"):
        ops = _operations(spark, positioned, name)
        assert "MERGE" not in ops, (name, ops)
        assert ops.count("UPDATE") >= 5, (name, ops)  # every batch one DV commit (Delta's UPDATE)
        assert "MERGE" in _operations(spark, merged, name)
    assert ["OPTIMIZE", "UPDATE"] == _operations(spark, positioned, "shop__b")[-3:-1]
    known = appliers[id(positioned)].known
    for name in ("shop__a", "shop__b"):  # the index read again after the foreign commits, then kept
        held = known.positions[TableLocation(path=D.table_path(positioned.delta_root, name))]
        assert isinstance(held, PositionTable) and held.index.version == version(spark, positioned, name)
        assert len(held.index) == delta(spark, positioned, name).count()
    _copies_took_their_positions(spark, copied, appliers[id(copied)].known, index_reads["index"])
    _applied_again_changes_nothing(spark, positioned, appliers[id(positioned)], monkeypatch)


def _copies_took_their_positions(spark, cfg, known, index_reads) -> None:
    """Root C after the batches: from batch 1 on (the tables exist) no index was read or
    confirmed; every batch a DV commit but the failed one (a MERGE); the copies of a and b kept
    at their tables' last version with their positions (loaded again after the MERGE and after
    the foreign commits)."""
    assert not [(b, path) for b, path in index_reads if b > 0 and "/c/" in path]
    for name in ("shop__a", "shop__b"):
        ops = _operations(spark, cfg, name)
        expected = ["MERGE"] if name[-1] == FAILED_COMMIT[1] else []
        assert [op for op in ops if op == "MERGE"] == expected, (name, ops)
        assert ops[-1] == "UPDATE" and ops.count("UPDATE") >= 5, (name, ops)
        copy = known.mirrors[TableLocation(path=D.table_path(cfg.delta_root, name))]
        assert isinstance(copy, KeyedCopy) and copy.positioned and not copy.positions_behind
        assert copy.version == version(spark, cfg, name) and len(copy) == delta(spark, cfg, name).count()


def _applied_again_changes_nothing(spark, cfg, applier, monkeypatch, last_ops=("UPDATE",) * 3) -> None:
    """The last batch, whose tables were written as `last_ops` says (DV commits: UPDATE), applied
    again by a restarted job and by the same applier: no new version, no other row (a second
    write would add a keyless row)."""
    batches = _batches()
    last = len(batches) - 1
    assert [_operations(spark, cfg, t)[-1] for t in TABLES] == list(last_ops)
    before = {t: (version(spark, cfg, t), _table(spark, cfg, t)) for t in TABLES}
    DeltaApplier(catalog_from_ddl(DDL), cfg)(changes_df(spark, batches[last]), last)  # a restarted job
    assert {t: (version(spark, cfg, t), _table(spark, cfg, t)) for t in TABLES} == before
    # Not even the applier's own "already committed" check: the commit's txn check must skip it.
    monkeypatch.setattr(KnownTargets, "already_committed", lambda *args: False)
    applier(changes_df(spark, batches[last]), last)
    assert {t: (version(spark, cfg, t), _table(spark, cfg, t)) for t in TABLES} == before


def test_a_table_that_moved_before_the_commit_is_merged_then_read_again(spark, tmp_path, monkeypatch):
    from pipelines.apply.batch_writes import BatchWrites

    cfg = config(tmp_path, target_overwrite_max_rows=0, writes=WritesSettings(deletion_vector_commits=True))
    first, second, third = _batches()[:3]
    applier = DeltaApplier(catalog_from_ddl(DDL), cfg)
    applier(changes_df(spark, first), 0)
    a_path = D.table_path(cfg.delta_root, "shop__a")
    real_commit = BatchWrites._commit

    def other_writer_first(self, spark_, batch_id, target, path, make):  # after the write was made
        def made_then_other(session):
            write = make(session)
            if target.table == "a":
                spark.sql(f"INSERT INTO delta.`{a_path}` (id, v, n, _row_id)"
                          " VALUES (99, 'other', 1, 'other')")
            return write
        real_commit(self, spark_, batch_id, target, path, made_then_other)

    monkeypatch.setattr(BatchWrites, "_commit", other_writer_first)
    applier(changes_df(spark, second), 1)
    monkeypatch.setattr(BatchWrites, "_commit", real_commit)
    assert _operations(spark, cfg, "shop__a")[-2:] == ["WRITE", "MERGE"]  # the INSERT, then ours
    applier(changes_df(spark, third), 2)
    assert _operations(spark, cfg, "shop__a")[-1] == "UPDATE"  # positions read again
    rows = sorted((r["id"], r["v"], r["n"]) for r in delta(spark, cfg, "shop__a").collect())
    assert rows == [(1, "y", 1), (3, "again", 900), (4, "v4", 4), (6, "v6", 6), (7, "v7", 7),
                    (8, "dflt", 900), (20, "v2", 2), (99, "other", 1)]


def test_a_table_without_deletion_vectors_is_merged(spark, tmp_path):
    cfg = config(tmp_path, target_overwrite_max_rows=0,
                 writes=WritesSettings(deletion_vectors=False, deletion_vector_commits=True))
    applier = DeltaApplier(catalog_from_ddl(DDL), cfg)
    for batch_id, batch in enumerate(_batches()[:2]):
        applier(changes_df(spark, batch), batch_id)
    assert _operations(spark, cfg, "shop__a") == ["CREATE TABLE", "WRITE", "MERGE"]
    assert not applier.known.positions

"""writes.deletion_vector_commits on tables the driver does not mirror (target_mirror_max_rows=0):
the DV commit at the positions the replay's own read gave (`_metadata.file_path` / `row_index`
at a version pinned for the batch, pipelines/apply/touched_rows.py PinnedRead / ReadPositions),
no position index and no confirm read. The oracle, as in test_dv_commits.py: the same batches
applied with the setting off (root A: MERGEs) and on (root B) give equal tables, `_row_id` and
`_lineage` included, after every batch; B's batches are DV commits (Delta's UPDATE) except where
another writer committed between B's read and its commit (then a MERGE); the positions never
reach a table or the change log; B's last batch applied again changes nothing."""

import pytest

from libs.config.sections import WritesSettings
from libs.tables.system_tables import CHANGE_LOG
from libs.tables.table_location import TableLocation
from pipelines.apply import DeltaApplier
from pipelines.apply import position_writes
from pipelines.apply.applier import DeltaApplier as _Applier
from pipelines.apply.batch_writes import BatchWrites
from pipelines.apply.touched_rows import POSITION_COLUMNS, PinnedRead

from .builders import catalog_from_ddl, changes_df, config, delta, version
from .test_dv_commits import (DDL, MERGES, TABLES, _applied_again_changes_nothing, _batches,
                              _foreign_commits, _operations, _table)

pytestmark = pytest.mark.spark

MOVED_AT_COMMIT = (1, "b")  # (batch, table): another writer commits after B planned its write
MOVED_AFTER_READ = (3, "a")  # another writer commits after B's replay read the table
# New rows the replay did not look up by key (libs/apply/unread_rows.py): beside a change of a
# stored row, a MERGE; alone (the replay read nothing), the append the MERGE root makes too.
KEYLESS_NEW_ROWS = {(2, "k"): "MERGE", (5, "k"): "WRITE"}


@pytest.fixture
def other_writer(spark, monkeypatch):
    """Foreign commits on both roots alike at MOVED_AT_COMMIT / MOVED_AFTER_READ (an UPDATE of a
    row the batch does not touch), and what the reads and the index path did."""
    seen = {"batch": 0, "pinned": [], "index": 0, "done": set()}
    real_commit, real_read = BatchWrites._commit, _Applier._read_touched

    def foreign(location: TableLocation, table: str) -> None:
        if (seen["batch"], table, location.path) in seen["done"]:
            return  # (a reader may be called again: the lookup fixed point)
        seen["done"].add((seen["batch"], table, location.path))
        sql = {"a": "SET n = n + 1000 WHERE id = 8", "b": "SET w = concat(w, '!') WHERE id = 4"}[table]
        spark.sql(f"UPDATE delta.`{location.path}` {sql}")

    def commit(self, spark_, batch_id, target, path, make):
        def made_then_foreign(session):  # after the write was made, before its commit
            write = make(session)
            if (batch_id, target.table) == MOVED_AT_COMMIT:
                foreign(path, target.table)
            return write
        real_commit(self, spark_, batch_id, target, path, made_then_foreign)

    def read(self, spark_, path, target, lookups):
        rows = real_read(spark_, path, target, lookups)
        if isinstance(path, PinnedRead):
            seen["pinned"].append((seen["batch"], target.table, path.version))
        if (seen["batch"], target.table) == MOVED_AFTER_READ:
            foreign(path.path if isinstance(path, PinnedRead) else path, target.table)
        return rows

    def index_used(*args, **kwargs):
        seen["index"] += 1
        raise AssertionError("the position index path on a table read by the replay")

    monkeypatch.setattr(BatchWrites, "_commit", commit)
    monkeypatch.setattr(_Applier, "_read_touched", read)
    seen["patch_index"] = lambda: (monkeypatch.setattr(position_writes, "read_positions", index_used),
                                   monkeypatch.setattr(position_writes, "confirm", index_used))
    return seen


def _no_positions_in(spark, cfg):
    """No position column, nor its values, in any target table or the change log."""
    for name in (*TABLES, CHANGE_LOG):
        frame = delta(spark, cfg, name)
        assert not set(frame.columns) & {*POSITION_COLUMNS, "_metadata"}, (name, frame.columns)
        text = "\n".join(frame.toJSON().collect())
        assert not any(c in text for c in (*POSITION_COLUMNS, "_metadata", "file:/", ".parquet")), name


def test_read_positions_give_the_merge_paths_tables_after_every_batch_and_once(spark, tmp_path,
                                                                              other_writer, monkeypatch):
    merged = config(tmp_path / "a", target_overwrite_max_rows=0, target_mirror_max_rows=0, writes=MERGES)
    positioned = config(tmp_path / "b", target_mirror_max_rows=0,
                        writes=WritesSettings(deletion_vector_commits=True))
    appliers = {id(cfg): DeltaApplier(catalog_from_ddl(DDL), cfg) for cfg in (merged, positioned)}
    known = appliers[id(positioned)].known
    for batch_id, batch in enumerate(_batches()):
        other_writer["batch"] = batch_id
        if batch_id == 1:  # batch 0 made the tables (no read: they did not exist); from now on read
            other_writer["patch_index"]()
        if batch_id == 4:  # between batches: a new version to pin, the live files read again
            for cfg in (merged, positioned):
                _foreign_commits(spark, cfg)
        before = {t: version(spark, positioned, t) if batch_id else -1 for t in TABLES}
        for cfg in (merged, positioned):
            appliers[id(cfg)](changes_df(spark, batch), batch_id)
        for name in TABLES:
            assert _table(spark, positioned, name) == _table(spark, merged, name), (batch_id, name)
        assert not known.read_positions  # each taken by its table's write
        if batch_id == 0:
            continue
        for name in TABLES:
            if version(spark, positioned, name) == before[name]:
                continue  # (no change of this table in the batch)
            ops = _operations(spark, positioned, name)
            if (batch_id, name[-1]) in (MOVED_AT_COMMIT, MOVED_AFTER_READ):
                assert ops[-2:] == ["UPDATE", "MERGE"], (batch_id, name, ops)  # the foreign UPDATE, ours
            elif (batch_id, name[-1]) in KEYLESS_NEW_ROWS:
                assert ops[-1] == KEYLESS_NEW_ROWS[batch_id, name[-1]], (batch_id, name, ops)
            else:
                assert ops[-1] == "UPDATE", (batch_id, name, ops)  # a DV commit
    assert other_writer["index"] == 0
    # one pinned version per table and batch, the table's version before the batch's write
    pinned = {}
    for batch_id, table, pinned_version in other_writer["pinned"]:
        assert pinned.setdefault((batch_id, table), pinned_version) == pinned_version
    assert {t for b, t in pinned if b == 5} == {"a", "b", "k"}
    _no_positions_in(spark, positioned)
    for name in ("shop__a", "shop__b"):
        assert "MERGE" in _operations(spark, merged, name)
        assert _operations(spark, positioned, name).count("MERGE") == 1
    _applied_again_changes_nothing(spark, positioned, appliers[id(positioned)], monkeypatch,
                                   ["UPDATE", "UPDATE", "WRITE"])


def test_a_target_whose_mode_writes_no_deletion_vectors_is_read_unpinned(spark, tmp_path, other_writer):
    """A soft-delete target keeps its deleted rows (README "Soft deletes"): its batches are
    MERGEs with the setting on, so the replay's read is not pinned and carries no positions."""
    cfg = config(tmp_path, target_mirror_max_rows=0, writes=WritesSettings(deletion_vector_commits=True))
    applier = DeltaApplier(catalog_from_ddl(DDL, {"shop.a": {"delete": "soft"}}), cfg)
    for batch_id, batch in enumerate(_batches()[:3]):
        other_writer["batch"] = batch_id
        applier(changes_df(spark, batch), batch_id)
    assert not applier.known.read_positions
    assert {t for _, t, _ in other_writer["pinned"]} == {"b", "k"}  # the current targets only
    assert _operations(spark, cfg, "shop__a")[-2:] == ["MERGE", "MERGE"]

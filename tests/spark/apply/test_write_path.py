"""The targets' write path (issue #37, DESIGN.md "Cost follows the changes", "Tables stay
healthy unattended"): deletion vectors, the MERGE bounded by the keys the replay read, inserts
appended, and the job's compaction and VACUUM; always the same tables as before."""
import hashlib
from pathlib import Path

import pytest
from delta.tables import DeltaTable

from libs.apply.maintenance import OPTIMIZE, OPTIMIZE_WIDE, VACUUM, MaintenancePolicy
from pipelines.apply import DeltaApplier
from pipelines.apply import tables as D
from tests.delta_log import commit_actions

from .builders import Source, catalog_from_ddl, changes_df, config, delta

pytestmark = pytest.mark.spark

DDL = "CREATE TABLE shop.a (id int NOT NULL, v varchar(10) DEFAULT 'dflt', PRIMARY KEY (id))"
MERGES = {"deletion_vector_commits": False}
MERGE_ONLY = dict(target_mirror_max_rows=0, target_overwrite_max_rows=0)  # every write a MERGE (with MERGES)


def _history(spark, cfg, name="shop__a"):
    table = DeltaTable.forPath(spark, D.table_path(cfg.delta_root, name))
    return [r.asDict() for r in table.history().orderBy("version").collect()]


def _whole(spark, cfg, name="shop__a"):
    return sorted(delta(spark, cfg, name).toJSON().collect())


def _inserts(src, ids):
    return [src.insert({"id": i, "v": f"v{i}"}) for i in ids]


def test_a_merge_marks_changed_rows_and_copies_none_giving_the_same_table(spark, tmp_path):
    marked = config(tmp_path / "dv", writes=MERGES, **MERGE_ONLY)
    rewritten = config(tmp_path / "plain", writes={"deletion_vectors": False, **MERGES}, **MERGE_ONLY)
    for cfg in (marked, rewritten):
        src = Source("shop", "a", ["id", "v"])
        applier = DeltaApplier(catalog_from_ddl(DDL), cfg)
        applier(changes_df(spark, _inserts(src, range(1, 201))), 0)
        applier(changes_df(spark, [src.update({"id": 5}, {"v": "five"}), src.delete({"id": 6}),
                                   src.update({"id": 7}, {"id": 700})]), 1)
    assert _whole(spark, marked) == _whole(spark, rewritten)
    dv, plain = _history(spark, marked)[-1], _history(spark, rewritten)[-1]
    assert (dv["operation"], plain["operation"]) == ("MERGE", "MERGE")
    assert int(dv["operationMetrics"]["numTargetRowsCopied"]) == 0
    assert int(dv["operationMetrics"]["numTargetDeletionVectorsAdded"]) >= 1
    assert int(plain["operationMetrics"]["numTargetRowsCopied"]) > 0  # the files' other rows rewritten
    props = spark.sql(
        f"DESCRIBE DETAIL delta.`{D.table_path(marked.delta_root, 'shop__a')}`").first()["properties"]
    assert props["delta.enableDeletionVectors"] == "true"


def test_the_first_batch_of_only_inserts_is_an_append(spark, tmp_path):
    cfg = config(tmp_path, writes=MERGES, **MERGE_ONLY)
    src = Source("shop", "a", ["id", "v"])
    applier = DeltaApplier(catalog_from_ddl(DDL), cfg)
    applier(changes_df(spark, _inserts(src, range(1, 4))), 0)
    applier(changes_df(spark, _inserts(src, range(4, 6)) + [src.update({"id": 1}, {"v": "one"})]), 1)
    assert [h["operation"] for h in _history(spark, cfg)] == ["CREATE TABLE", "WRITE", "MERGE"]
    assert sorted((r["id"], r["v"]) for r in delta(spark, cfg, "shop__a").collect()) == [
        (1, "one"), (2, "v2"), (3, "v3"), (4, "v4"), (5, "v5")]


def test_an_existing_target_without_deletion_vectors_is_upgraded_once(spark, tmp_path):
    old = config(tmp_path, writes={"deletion_vectors": False, **MERGES}, **MERGE_ONLY)
    src = Source("shop", "a", ["id", "v"])
    DeltaApplier(catalog_from_ddl(DDL), old)(changes_df(spark, _inserts(src, range(1, 21))), 0)
    new = config(tmp_path, writes=MERGES, **MERGE_ONLY)  # the same delta root, DVs on by default
    applier = DeltaApplier(catalog_from_ddl(DDL), new)
    applier(changes_df(spark, [src.update({"id": 2}, {"v": "two"})]), 1)
    applier(changes_df(spark, [src.delete({"id": 3})]), 2)
    operations = [h["operation"] for h in _history(spark, new)]
    assert operations == ["CREATE TABLE", "WRITE", "SET TBLPROPERTIES", "MERGE", "MERGE"]
    for merge in _history(spark, new)[-2:]:  # rows marked in a deletion vector, none copied
        metrics = {k: int(v) for k, v in merge["operationMetrics"].items() if k.startswith("numTarget")}
        assert metrics["numTargetRowsCopied"] == 0, metrics
        assert (metrics["numTargetDeletionVectorsAdded"]
                + metrics["numTargetDeletionVectorsUpdated"] >= 1), metrics
        assert metrics["numTargetFilesRemoved"] == 0, metrics
    assert sorted((r["id"], r["v"]) for r in delta(spark, new, "shop__a").collect()) == [
        (1, "v1"), (2, "two"), *((i, f"v{i}") for i in range(4, 21))]


def test_the_merge_reads_only_the_files_whose_keys_it_touches(spark, tmp_path):
    """Four appends of 50 ids each: files with disjoint key ranges. The files of ids 1-50
    are then removed from the disk behind Delta's back: a read or MERGE that opened it would
    fail, so a batch touching only ids of other files shows that both skip it."""
    cfg = config(tmp_path, writes=MERGES, **MERGE_ONLY)
    src = Source("shop", "a", ["id", "v"])
    applier = DeltaApplier(catalog_from_ddl(DDL), cfg)
    for batch_id in range(4):
        applier(changes_df(spark, _inserts(src, range(1 + 50 * batch_id, 51 + 50 * batch_id))), batch_id)
    path = D.table_path(cfg.delta_root, "shop__a")
    files = spark.read.format("delta").load(path).selectExpr("input_file_name() AS f", "id")
    holders = {r["f"] for r in files.where("id <= 50").collect()}
    assert holders and not {r["f"] for r in files.where("id > 50").collect()} & holders
    for holder in holders:
        Path(holder.removeprefix("file:")).unlink()
    applier(changes_df(spark, [src.update({"id": 75}, {"v": "x"}), src.delete({"id": 180}),
                               src.update({"id": 120}, {"id": 121000})]), 4)
    after = spark.read.format("delta").load(path).where("id > 50")
    assert sorted((r["id"], r["v"]) for r in after.where("id IN (75, 180, 120, 121000)").collect()) == [
        (75, "x"), (121000, "v120")]
    assert after.count() == 149


def _live_files(spark, cfg, name):
    """The table's files at its latest version, as Delta counts them."""
    return int(DeltaTable.forPath(spark, D.table_path(cfg.delta_root, name)).detail().first()["numFiles"])


def _live_files_by_version(path: str) -> list[int]:
    """The table's live data files at each version, from its log's commits: each one's removes,
    then its adds (a deletion vector's commit removes and re-adds the same path)."""
    live, counts = set(), []
    for actions in commit_actions(path):
        live -= {a["remove"]["path"] for a in actions if "remove" in a}
        live |= {a["add"]["path"] for a in actions if "add" in a}
        counts.append(len(live))
    return counts


def test_maintenance_compacts_vacuums_and_keeps_batches_exactly_once(spark, tmp_path):
    cfg = config(tmp_path, writes={"optimize_after_commits": 3, "vacuum_retention_hours": 0,
                                   "maintenance_per_batch": 3, **MERGES}, **MERGE_ONLY)
    src = Source("shop", "a", ["id", "v"])
    applier = DeltaApplier(catalog_from_ddl(DDL), cfg)
    planner = applier.writes.maintenance.planner
    planner.policy = MaintenancePolicy(3, None, 3)  # compaction only, at first
    batches = [_inserts(src, range(1, 6))] + [[src.update({"id": 1 + k % 5}, {"v": f"b{k}"})]
                                              for k in range(1, 10)]
    for batch_id, batch in enumerate(batches[:-1]):
        applier(changes_df(spark, batch), batch_id)
    ran = {(Path(table).name, op) for table, op, _ in applier.writes.maintenance.ran}
    assert ran == {("shop__a", OPTIMIZE), ("_cdc_progress", OPTIMIZE), ("_cdc_change_log", OPTIMIZE)}
    for name in ("_cdc_progress", "_cdc_change_log", "shop__a"):  # not a file per batch forever
        files = _live_files_by_version(D.table_path(cfg.delta_root, name))
        assert files[-1] == _live_files(spark, cfg, name), name  # the log read as Delta reads it
        assert max(files) <= 2 * 3 + 1 and files[-1] < len(batches) - 1, (name, files)
    _every_version_a_batch_state(spark, cfg, batches[:-1])
    planner.policy = MaintenancePolicy(0, 0.0, 3)  # now VACUUM every table, retention 0 h
    applier(changes_df(spark, batches[-1]), len(batches) - 1)
    assert {(Path(t).name, op) for t, op, _ in applier.writes.maintenance.ran[-3:]} == {
        ("shop__a", VACUUM), ("_cdc_progress", VACUUM), ("_cdc_change_log", VACUUM)}
    for name in ("_cdc_progress", "_cdc_change_log"):  # only the live files are left on disk
        on_disk = list(Path(D.table_path(cfg.delta_root, name)).glob("*.parquet"))
        assert len(on_disk) == _live_files(spark, cfg, name), name
    expected = sorted((r["id"], r["v"]) for r in delta(spark, cfg, "shop__a").collect())
    assert expected == [(1, "b5"), (2, "b6"), (3, "b7"), (4, "b8"), (5, "b9")]
    assert delta(spark, cfg, "_cdc_progress").count() == len(batches)
    assert delta(spark, cfg, "_cdc_change_log").count() == 5 + 9
    again = DeltaApplier(catalog_from_ddl(DDL), cfg)  # a restarted job retries the last batches
    for batch_id in (8, 9):
        again(changes_df(spark, batches[batch_id]), batch_id)
    assert sorted((r["id"], r["v"]) for r in delta(spark, cfg, "shop__a").collect()) == expected
    assert delta(spark, cfg, "_cdc_change_log").count() == 5 + 9


def _every_version_a_batch_state(spark, cfg, batches):
    """What a time-travel reader sees at each version of shop__a: the state after a batch (the
    test's batches: ids 1-5 inserted as v<id>, then batch k sets id 1 + k % 5 to b<k>), and at an
    OPTIMIZE version the rows of the version before it: compaction moves rows, never adds, loses
    or alters one."""
    state = {i: f"v{i}" for i in range(1, 6)}
    states = [sorted(state.items())]
    for k in range(1, len(batches)):
        state[1 + k % 5] = f"b{k}"
        states.append(sorted(state.items()))
    path = D.table_path(cfg.delta_root, "shop__a")
    seen, compacted = [], 0
    for entry in _history(spark, cfg):
        at = sorted((r["id"], r["v"]) for r in
                    spark.read.format("delta").option("versionAsOf", entry["version"]).load(path).collect())
        if entry["operation"] == "OPTIMIZE":
            compacted += 1
            assert at == seen[-1], entry["version"]
        elif at or seen:  # the table's creation (empty) is no batch's state
            seen.append(at)
    assert compacted >= 1 and seen == states


def test_a_failed_maintenance_step_is_one_line_and_the_job_goes_on(spark, tmp_path, capsys, monkeypatch):
    from pipelines.apply.maintenance import TableMaintenance

    cfg = config(tmp_path, writes={"optimize_after_commits": 1, **MERGES}, **MERGE_ONLY)
    src = Source("shop", "a", ["id", "v"])
    applier = DeltaApplier(catalog_from_ddl(DDL), cfg)

    def refused(self, session, table, wide):
        raise RuntimeError("[DELTA_CONCURRENT_WRITE] another writer\n\tat org.apache.spark...")

    monkeypatch.setattr(TableMaintenance, "_optimize", refused)
    applier(changes_df(spark, _inserts(src, range(1, 4))), 0)
    applier(changes_df(spark, [src.update({"id": 1}, {"v": "one"})]), 1)
    lines = [line for line in capsys.readouterr().err.splitlines() if "skipped until its next turn" in line]
    assert lines and all(line.endswith("[DELTA_CONCURRENT_WRITE] another writer") for line in lines), lines
    assert sorted((r["id"], r["v"]) for r in delta(spark, cfg, "shop__a").collect()) == [
        (1, "one"), (2, "v2"), (3, "v3")]


BIG_DDL = "CREATE TABLE shop.b (id int NOT NULL, v varchar(2000), PRIMARY KEY (id))"
ROWS = 4000


def _noise(i: int) -> str:
    """1,920 characters that Parquet cannot squeeze much: 4,000 rows make files over 1 MB."""
    return "".join(hashlib.sha256(f"{i}-{k}".encode()).hexdigest() for k in range(30))


def _live_sizes(spark, cfg, name="shop__b") -> dict[str, int]:
    """The table's live files (path -> bytes), from its log's latest state."""
    table = DeltaTable.forPath(spark, D.table_path(cfg.delta_root, name))
    table.toDF().count()  # (a read: the state is current)
    files = spark.read.format("delta").load(D.table_path(cfg.delta_root, name)).inputFiles()
    return {Path(f.replace("file:", "")).name: Path(f.replace("file:", "")).stat().st_size for f in files}


def test_a_compaction_leaves_the_big_files_and_a_wide_one_takes_them(spark, tmp_path):
    """libs/apply/maintenance.py's tiers: a compaction takes only files under optimize_new_file_mb
    (the batches' small files); every optimize_wide_every-th takes every file under
    optimize_small_file_mb. Before the tiers, each compaction rewrote a small table whole."""
    cfg = config(tmp_path, writes={"optimize_after_commits": 3, "optimize_new_file_mb": 1,
                                   "optimize_wide_every": 2, "maintenance_per_batch": 3, **MERGES},
                 **MERGE_ONLY)
    src = Source("shop", "b", ["id", "v"])
    applier = DeltaApplier(catalog_from_ddl(BIG_DDL), cfg)
    applier(changes_df(spark, [src.insert({"id": i, "v": _noise(i)}) for i in range(1, ROWS + 1)]), 0)
    big = {f for f, size in _live_sizes(spark, cfg).items() if size > 1024 * 1024}
    assert big  # the snapshot-like first batch wrote files over optimize_new_file_mb
    ran = lambda: [op for t, op, _ in applier.writes.maintenance.ran if Path(t).name == "shop__b"]  # noqa: E731
    batch = 1
    while ran() != [OPTIMIZE]:
        applier(changes_df(spark, [src.update({"id": batch}, {"v": f"b{batch}"})]), batch)
        batch += 1
    live = _live_sizes(spark, cfg)
    # the small files in one, the big ones as they were
    assert big <= set(live) and len(live) == len(big) + 1, live
    while ran() != [OPTIMIZE, OPTIMIZE_WIDE]:
        applier(changes_df(spark, [src.update({"id": batch}, {"v": f"b{batch}"})]), batch)
        batch += 1
    assert not big & set(_live_sizes(spark, cfg))  # the wide one took the big files too
    assert sorted((r["id"], r["v"]) for r in delta(spark, cfg, "shop__b").collect()) == sorted(
        (i, f"b{i}" if i < batch else _noise(i)) for i in range(1, ROWS + 1))

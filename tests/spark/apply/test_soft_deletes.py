"""`delete: soft` targets (libs/apply/modes/soft_delete.py) through DeltaApplier on every write path:
the driver's whole-table overwrite of a small mirrored table, its MERGE (no mirror), the
executors' replay and MERGE, and snapshot rows made on the executors. A deleted row stays with
`_deleted` and the deleting change's time, GTID and position; a key inserted again is a new
live row; a TRUNCATE, or a snapshot starting the table anew, flags every live row; the live
rows equal the hard target's whole table (`_row_id` and `_lineage` included), and the change
log is the same."""
import pytest

from libs.runtime.paths import REPO_ROOT
from libs.replay import ROW_ID_COLUMN
from libs.snapshot.record import ROWS, TABLE
from libs.tables.system_tables import CHANGE_LOG
from libs.targets import TargetCatalog
from pipelines.apply import DeltaApplier, executor_parts
from libs.apply.stops import ApplyStopped

from tests.change_builders import truncates_of

from .builders import Source, catalog_from_ddl, changes_df, config, delta
from .test_snapshot_apply import snapshot

pytestmark = pytest.mark.spark

DDL = "CREATE TABLE shop.a (id int NOT NULL, v varchar(10), PRIMARY KEY (id))"
SOFT_COLUMNS = ("_deleted", "_deleted_at", "_deleted_gtid", "_deleted_file", "_deleted_pos")


def _batches():
    """Batches of changes, and (id, v) -> the change that deleted that row (None: live at the end)."""
    a = Source("shop", "a", ["id", "v"])
    b0 = [a.insert({"id": i, "v": f"v{i}"}) for i in range(1, 5)]
    b1 = [a.update({"id": 1}, {"v": "x1"}), a.delete({"id": 2}),  # a stored row only deleted
          a.insert({"id": 5, "v": "v5"}), a.delete({"id": 5}),  # born and deleted in the batch
          a.update({"id": 3}, {"v": "x3"}), a.delete({"id": 3})]  # written, then deleted
    b2 = [a.insert({"id": 2, "v": "again"}), a.delete({"id": 4}),  # a deleted key inserted again
          a.update({"id": 2}, {"v": "read"}), a.change("ddl", statement="TRUNCATE TABLE a"),
          a.insert({"id": 6, "v": "v6"})]  # row 1 is not read: only the truncate flags it
    b3 = [a.delete({"id": 6}), a.insert({"id": 1, "v": "new"})]  # (no truncate: on the executors too)
    deleted_by = {(2, "v2"): b1[1], (5, "v5"): b1[3], (3, "x3"): b1[5], (4, "v4"): b2[1], (1, "x1"): b2[3],
                  (2, "read"): b2[3], (6, "v6"): b3[0], (1, "new"): None}
    return [b0, b1, b2, b3], deleted_by


@pytest.fixture
def on_executors(monkeypatch):
    """The tables each batch's executor parts replayed (executor_parts: rows, snapshot rows)."""
    made = []
    for name in ("replay_on_executors", "snapshot_rows_on_executors"):
        real = getattr(executor_parts, name)
        monkeypatch.setattr(executor_parts, name,
                            lambda *a, real=real, name=name, **k: made.append(name) or real(*a, **k))
    return made


def _run(spark, cfg, catalog, batches):
    applier = DeltaApplier(catalog, cfg)
    for n, batch in enumerate(batches):  # as pipelines/stages/sink.py: a snapshot run's start first
        applier.prepare_batch(spark, truncates_of(batch), n)
        applier(changes_df(spark, batch), n)
    table = delta(spark, cfg, "shop__a")
    rows = sorted((r.asDict() for r in table.collect()), key=lambda r: r[ROW_ID_COLUMN])
    log = sorted(map(tuple, delta(spark, cfg, CHANGE_LOG).drop("batch_id").collect()), key=repr)
    return rows, log


def _readme_queries() -> list[str]:
    section = (REPO_ROOT / "README.md").read_text().split("## Soft deletes", 1)[1].split("\n## ", 1)[0]
    return [block.split("```", 1)[0].strip() for block in section.split("```sql")[1:]]


def _split(rows):
    """(live rows without the soft-delete columns, deleted rows)."""
    live = [{k: v for k, v in r.items() if k not in SOFT_COLUMNS} for r in rows if not r["_deleted"]]
    return live, [r for r in rows if r["_deleted"]]


def _flags(change):
    """The soft-delete columns a row deleted by `change` has (what its `_lineage` would say)."""
    return (True, change.commit_ts.replace(tzinfo=None), change.gtid, change.binlog_file,
            change.binlog_pos)


@pytest.fixture(scope="module")
def hard_run(spark, tmp_path_factory):
    """The hard target's table and change log (every write path gives the same: test_executor_replay.py)."""
    return _run(spark, config(tmp_path_factory.mktemp("hard")), catalog_from_ddl(DDL), _batches()[0])


@pytest.mark.parametrize("way", ["mirror_overwrite", "merge_and_executors"])
def test_soft_deletes_keep_every_deleted_row_and_the_live_rows_equal_the_hard_table(spark, tmp_path, way,
                                                                                     hard_run, on_executors):
    batches, deleted_by = _batches()
    # merge_and_executors: no mirror, so the truncate's batch (on the driver) reads Delta and
    # MERGEs; the other batches are replayed and MERGEd by the executors
    settings = {"mirror_overwrite": {},
                "merge_and_executors": {"target_mirror_max_rows": 0, "executor_apply_min_changes": 0}}[way]
    hard_rows, hard_log = hard_run
    soft_rows, soft_log = _run(spark, config(tmp_path, **settings),  # the YAML's setting
                               catalog_from_ddl(DDL, {"shop.a": {"delete": "soft"}}), batches)
    # the truncate's batch: driver
    assert on_executors == (["replay_on_executors"] * 3 if way != "mirror_overwrite" else [])
    assert "_deleted" not in hard_rows[0]
    live, deleted = _split(soft_rows)
    assert live == hard_rows
    assert soft_log == hard_log
    got = {(r["id"], r["v"]): tuple(r[c] for c in SOFT_COLUMNS) for r in soft_rows}
    assert got == {row: _flags(change) if change else (False, None, None, None, None)
                   for row, change in deleted_by.items()}
    assert len({r[ROW_ID_COLUMN] for r in soft_rows}) == len(soft_rows)  # re-inserts are new rows
    # a deleted row keeps the `_lineage` of the change that last wrote its values
    lineage = {(r["id"], r["v"]): r["_lineage"]["operation"] for r in deleted}
    assert lineage == {(2, "v2"): "insert", (5, "v5"): "insert", (3, "x3"): "update", (4, "v4"): "insert",
                       (1, "x1"): "update", (2, "read"): "update", (6, "v6"): "insert"}
    if way == "mirror_overwrite":  # the README's queries, as written
        delta(spark, config(tmp_path), "shop__a").createOrReplaceTempView("shop__a")
        live_sql, deleted_sql = _readme_queries()
        assert sorted((r.asDict() for r in spark.sql(live_sql).collect()),
                      key=lambda r: r[ROW_ID_COLUMN]) == live
        gone = sorted((c.binlog_pos, i, *_flags(c)[1:3]) for (i, _), c in deleted_by.items() if c is not None)
        assert [tuple(r) for r in spark.sql(deleted_sql).collect()] == [g[1:] for g in gone]


def test_an_update_of_a_deleted_key_finds_no_row(spark, tmp_path):
    a = Source("shop", "a", ["id", "v"])
    cfg = config(tmp_path, tables={"delete": "soft"})  # the job's default for every target
    applier = DeltaApplier(catalog_from_ddl(DDL), cfg)
    applier(changes_df(spark, [a.insert({"id": 1, "v": "x"}), a.delete({"id": 1})]), 0)
    with pytest.raises(ApplyStopped, match="1032.*'id': '1'"):  # (idempotent: quarantined, the same read)
        applier(changes_df(spark, [a.update({"id": 1}, {"v": "late"})]), 1)
    assert [(r["v"], r["_deleted"]) for r in delta(spark, cfg, "shop__a").collect()] == [("x", True)]


def test_a_snapshot_starting_the_table_anew_flags_the_earlier_rows(spark, tmp_path, on_executors):
    """On the executors (the driver's table anew is the MERGE of the truncate above)."""
    a = Source("shop", "a", ["id", "v"], names=False)
    late = a.delete({"id": 1}, trx=3)  # after the first run's position (1250)
    r2 = snapshot("r2", 1700, TABLE, ts=2 * 10**15)
    batches = [snapshot("r1", 1250, TABLE) + snapshot("r1", 1250, ROWS, [(1, "x"), (2, "y")]), [late],
               r2 + snapshot("r2", 1700, ROWS, [(2, "y2"), (3, "z")], ts=2 * 10**15)]
    cfg = config(tmp_path, tables={"delete": "soft"}, executor_apply_min_changes=0)
    rows, _ = _run(spark, cfg, TargetCatalog(()), batches)  # the target derived from SHOW CREATE TABLE
    assert on_executors == ["snapshot_rows_on_executors", "replay_on_executors", "snapshot_rows_on_executors"]
    truncate = truncates_of(r2)[0]
    got = {(r["id"], r["v"]): tuple(r[c] for c in SOFT_COLUMNS) for r in rows}
    assert got == {(1, "x"): _flags(late), (2, "y"): _flags(truncate),
                   (2, "y2"): (False, None, None, None, None), (3, "z"): (False, None, None, None, None)}

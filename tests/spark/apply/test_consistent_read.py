"""Consistent reads (issue #40): the Delta version each batch's target writes committed, kept in
`_cdc_progress.table_versions`, and the reads at one point (pipelines/reads/consistent_read.py,
libs/reads/consistent_read_sql.py): a table a batch did not write, a batch retried after its targets
were committed, the executors' MERGE, and the point of a GTID or a commit time. Every version is
checked by what the table holds there: the state the batches applied up to that point."""

import datetime as dt
import re
import uuid

import pytest

from libs.reads.versions import ConsistentReadError
from libs.config.job import JobConfig
from libs.reads.lineage_sql import table_ref
from libs.runtime.paths import REPO_ROOT
from libs.tables.system_tables import PROGRESS
from pipelines.apply import DeltaApplier
from pipelines.apply.batch_writes import BatchWrites
from pipelines.reads.consistent_read import consistent_point, read_consistent, statements_at
from pipelines.delta.delta_tables import read
from pipelines.replicate import prepare_tables

from .builders import COMMIT_TS, Source, catalog_from_ddl, changes_df, config

pytestmark = pytest.mark.spark

DDL = ("CREATE TABLE bank.a (id int NOT NULL, amount int, PRIMARY KEY (id));\n"
       "CREATE TABLE bank.b (id int NOT NULL, amount int, PRIMARY KEY (id))")
TABLES = ["bank__a", "bank__b"]


def _move(a: Source, b: Source, trx: int, a_row: tuple[int, int], b_row: tuple[int, int]) -> list[dict]:
    """One source transaction (GTID 0-1-trx) setting a row of each table."""
    return [a.update({"id": a_row[0]}, {"amount": a_row[1]}, trx=trx, seq=0),
            b.update({"id": b_row[0]}, {"amount": b_row[1]}, trx=trx, seq=1)]


def _states(spark, cfg, point_kw) -> dict:
    frames = read_consistent(spark, cfg.table_root, TABLES, **point_kw)
    return {name: sorted(tuple(r) for r in df.select("id", "amount").collect())
            for name, df in frames.items()}


EXPECTED = {0: {"bank__a": [(1, 100)], "bank__b": [(1, 0)]},
            1: {"bank__a": [(1, 80)], "bank__b": [(1, 0)]},
            2: {"bank__a": [(1, 70)], "bank__b": [(1, 30)]}}


@pytest.fixture(scope="module")
def batches(spark, tmp_path_factory):
    """Catalog tables (README "Consistent reads" queries run after USE): batch 0 writes both
    tables, batch 1 only bank__a, batch 2 moves an amount and dies after committing both targets,
    before its progress rows; Spark retries it."""
    cfg = JobConfig(delta_root=str(tmp_path_factory.mktemp("consistent")),
                    catalog_schema=f"spark_catalog.consistent_{uuid.uuid4().hex[:10]}")
    prepare_tables(spark, cfg)
    a, b = Source("bank", "a", ["id", "amount"]), Source("bank", "b", ["id", "amount"])
    apply = lambda changes, batch: DeltaApplier(catalog_from_ddl(DDL), cfg)(changes_df(spark, changes), batch)  # noqa: E731
    apply([a.insert({"id": 1, "amount": 100}, trx=1), b.insert({"id": 1, "amount": 0}, trx=1, seq=1)], 0)
    apply([a.update({"id": 1}, {"amount": 90}, trx=2),
           a.update({"id": 1}, {"amount": 80}, trx=3)], 1)  # b not written
    # Batch 2 dies after committing both targets, before its progress rows; Spark retries it.
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(BatchWrites, "append_progress",
                      lambda *args, **kw: (_ for _ in ()).throw(OSError("lost")))
        with pytest.raises(OSError):
            apply(_move(a, b, 4, (1, 70), (1, 30)), 2)
    committed = [tuple(r)
                 for r in read(spark, cfg.table_root.table("bank__b")).select("id", "amount").collect()]
    assert committed == [(1, 30)]  # by the first attempt
    apply(_move(a, b, 4, (1, 70), (1, 30)), 2)
    return cfg


def test_reads_at_a_batch_a_gtid_and_a_commit_time_across_unwritten_tables_and_a_retried_batch(
        spark, batches):
    cfg, expected = batches, EXPECTED
    for batch, state in expected.items():
        assert _states(spark, cfg, {"batch_id": batch}) == state, batch
    assert _states(spark, cfg, {}) == expected[2]  # the latest complete batch
    point = consistent_point(spark, cfg.table_root, TABLES, batch_id=1)
    assert (point.versions["bank__b"]
            == consistent_point(spark, cfg.table_root, ["bank__b"], batch_id=0).versions["bank__b"])
    sql = statements_at(cfg.table_root, point)
    assert sorted(tuple(r) for r in spark.sql(sql["bank__a"]).select("id", "amount").collect()) == [(1, 80)]
    progress = {r["batch_id"]: r for r in read(spark, cfg.table_root.table(PROGRESS)).collect()}
    assert sorted(progress[1]["table_versions"]) == ["bank__a"]  # only what batch 1 wrote
    assert [tuple(p) for p in progress[2]["gtid_positions"]] == [("0", 4, "0-1-4")]

    # GTIDs: the first batch whose position in domain 0 reached them
    assert consistent_point(spark, cfg.table_root, TABLES, gtid="0-1-1").batch_id == 0
    # another server, same domain
    assert consistent_point(spark, cfg.table_root, TABLES, gtid="0-2-2").batch_id == 1
    assert consistent_point(spark, cfg.table_root, TABLES, gtid="0-1-4").batch_id == 2
    for gtid, message in (("0-1-5", "GTID 0-1-5: no complete batch"),
                          ("1-1-1", "GTID 1-1-1: no complete batch"),
                          ("nope", "not a GTID")):
        with pytest.raises(ConsistentReadError, match=message):
            consistent_point(spark, cfg.table_root, TABLES, gtid=gtid)
    # Commit times: transaction n committed at COMMIT_TS + n s; a batch after the time is not read.
    at = lambda seconds: COMMIT_TS.replace(tzinfo=None) + dt.timedelta(seconds=seconds)  # noqa: E731
    assert _states(spark, cfg, {"commit_time": at(3.5)}) == expected[1]
    assert _states(spark, cfg, {"commit_time": at(2.5)}) == expected[0]  # batch 1 holds a later transaction
    assert _states(spark, cfg, {"commit_time": at(60)}) == expected[2]
    with pytest.raises(ConsistentReadError, match="no complete batch"):
        consistent_point(spark, cfg.table_root, TABLES, commit_time=at(0.5))
    with pytest.raises(ConsistentReadError, match="no batch up to 2 wrote bank__zz"):
        consistent_point(spark, cfg.table_root, ["bank__a", "bank__zz"])


def readme_queries() -> list[str]:
    section = (REPO_ROOT / "README.md").read_text().split("## Consistent reads", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```sql\n(.*?)```", section, re.S)


def test_the_readme_queries_give_their_rows(spark, batches):
    a, b = consistent_point(spark, batches.table_root, TABLES, batch_id=1).versions.values()
    assert (a, b) == (2, 1)  # the README's VERSION AS OF: each table created empty (0), then its writes
    # the latest batch; GTID 0-1-2's; as of 07:08:11.5 (batch 1 holds 0-1-3, after it)
    rows = [[(2,)], [(1,)], [(0,)],
            [("bank__a", a, 1), ("bank__b", b, 0)],  # the versions at batch 1
            [(1, 80, 0)]]  # the tables at batch 1
    spark.sql(f"USE {table_ref(*batches.catalog_schema.split('.'))}")
    try:
        queries = readme_queries()
        assert len(queries) == len(rows)
        for query, expected in zip(queries, rows):
            assert [tuple(r) for r in spark.sql(query).collect()] == expected, query
    finally:
        spark.sql("USE spark_catalog.default")


def test_a_table_merged_from_the_executors_records_its_version(spark, tmp_path):
    cfg = config(tmp_path, executor_apply_min_changes=0)
    a = Source("bank", "a", ["id", "amount"])
    apply = lambda changes, batch: DeltaApplier(catalog_from_ddl(DDL), cfg)(changes_df(spark, changes), batch)  # noqa: E731
    apply([a.insert({"id": i, "amount": i}, trx=1, seq=i) for i in range(5)], 0)
    apply([a.update({"id": i}, {"amount": -i}, trx=2, seq=i) for i in range(3)], 1)
    for batch, amounts in ((0, [0, 1, 2, 3, 4]), (1, [0, -1, -2, 3, 4])):
        frames = read_consistent(spark, cfg.table_root, ["bank__a"], batch_id=batch)
        assert [r["amount"] for r in frames["bank__a"].orderBy("id").collect()] == amounts

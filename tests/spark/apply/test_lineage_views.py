"""The lineage views (libs/reads/lineage_sql.py, pipelines/reads/lineage_views.py) over a batch the applier
wrote, each question through spark.sql with its exact rows: the README's "Lineage in SQL" queries
as written there, on catalog tables, and the same views over path tables."""

import datetime as dt
import re
import uuid

import pytest

from libs.reads import lineage_sql as L
from libs.config.job import JobConfig
from libs.runtime.paths import REPO_ROOT
from libs.tables.system_tables import LAST_CHANGE, LINEAGE_VIEWS, STATEMENT_ROWS, TRANSACTION_CHANGES
from pipelines.apply import DeltaApplier
from pipelines.reads.lineage_views import lineage_views
from pipelines.replicate import prepare_tables

from .builders import Source, catalog_from_ddl, changes_df

pytestmark = pytest.mark.spark

INSERT = "INSERT INTO t VALUES (1,'a'),(2,'b')"
SET_V, SET_ID = "UPDATE t SET v = 'x' WHERE id = 2", "UPDATE t SET id = 3 WHERE id = 2"
DELETE, MISSING = "DELETE FROM t WHERE id = 1", "UPDATE t SET v = 'q' WHERE id = 9"


def at(seconds: int) -> dt.datetime:
    """Commit time of transaction n (tests/change_builders.py: COMMIT_TS + n s), as collected."""
    return dt.datetime(2024, 5, 6, 7, 8, 9) + dt.timedelta(seconds=seconds)


def _apply(spark, cfg: JobConfig) -> None:
    """The README's binlog: transactions 0-1-1 .. 0-1-4, and 0-1-5 whose row is missing
    (idempotent mode: logged as skipped, no row changed)."""
    src = Source("shop", "t", ["id", "v"])
    applier = DeltaApplier(
        catalog_from_ddl("CREATE TABLE shop.t (id int NOT NULL, v varchar(9), PRIMARY KEY (id))"), cfg)
    applier(changes_df(spark, [src.insert({"id": 1, "v": "a"}, statement=INSERT),
                               src.insert({"id": 2, "v": "b"}, seq=1, trx=1, statement=INSERT)]), 0)
    applier(changes_df(spark, [src.update({"id": 2}, {"v": "x"}, statement=SET_V),
                               src.update({"id": 2}, {"id": 3}, statement=SET_ID),
                               src.delete({"id": 1}, statement=DELETE),
                               src.update({"id": 9}, {"v": "q"}, statement=MISSING)]), 1)


@pytest.fixture(scope="module")
def in_catalog(spark, tmp_path_factory):
    """The views in a catalog schema, made at the job's start; the session USEs that schema."""
    cfg = JobConfig(delta_root=str(tmp_path_factory.mktemp("views")), exec_mode="idempotent",
                    catalog_schema=f"spark_catalog.lineage_{uuid.uuid4().hex[:10]}")
    prepare_tables(spark, cfg)
    _apply(spark, cfg)
    spark.sql(f"USE {L.table_ref(*cfg.catalog_schema.split('.'))}")
    yield cfg
    spark.sql("USE spark_catalog.default")


def readme_queries() -> list[str]:
    text = (REPO_ROOT / "README.md").read_text()
    section = text.split("## Lineage in SQL", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```sql\n(.*?)```", section, re.S)


README_ROWS = [
    [("update", SET_ID, "0-1-3", at(3))],                      # which statement last changed row id 3
    [(3, SET_ID, "0-1-3")],                                    # the row's own _lineage
    [("insert", "1", 1050), ("insert", "2", 1051)],            # every row statement INSERT changed
    [("shop", "t", SET_ID, 0, 1, 0)],                          # what transaction 0-1-3 changed
    [(at(2), "0-1-2", "update", "2", SET_V), (at(3), "0-1-3", "update", "3", SET_ID)],  # between two times
]


def test_the_readme_queries_give_their_rows(spark, in_catalog):
    queries = readme_queries()
    assert len(queries) == len(README_ROWS)
    for query, expected in zip(queries, README_ROWS):
        assert [tuple(r) for r in spark.sql(query).collect()] == expected, query


def test_last_change_holds_each_row_once_followed_through_its_key_change(spark, in_catalog):
    got = spark.sql(f"SELECT key['id'], op, gtid, row_id IS NOT NULL "
                    f"FROM {LAST_CHANGE} ORDER BY gtid").collect()
    assert [tuple(r) for r in got] == [("3", "update", "0-1-3", True), ("1", "delete", "0-1-4", True)]


def test_statement_rows_hold_only_rows_written_or_deleted(spark, in_catalog):
    got = spark.sql(f"SELECT gtid, op, outcome, key['id'] "
                    f"FROM {STATEMENT_ROWS} ORDER BY binlog_pos").collect()
    assert [tuple(r) for r in got] == [
        ("0-1-1", "insert", "applied", "1"), ("0-1-1", "insert", "applied", "2"),
        ("0-1-2", "update", "applied", "2"), ("0-1-3", "update", "applied", "3"),
        ("0-1-4", "delete", "applied", "1")]


def test_transaction_changes_count_every_change_and_the_rows_it_changed(spark, in_catalog):
    got = spark.sql(f"SELECT gtid, statement, binlog_pos, inserted, updated, deleted, rows_changed, changes "
                    f"FROM {TRANSACTION_CHANGES} ORDER BY gtid").collect()
    assert [tuple(r) for r in got] == [
        ("0-1-1", INSERT, 1050, 2, 0, 0, 2, 2), ("0-1-2", SET_V, 1150, 0, 1, 0, 1, 1),
        ("0-1-3", SET_ID, 1250, 0, 1, 0, 1, 1), ("0-1-4", DELETE, 1350, 0, 0, 1, 1, 1),
        ("0-1-5", MISSING, 1450, 0, 0, 0, 0, 1)]


def test_the_python_queries_bind_their_values(spark, in_catalog):
    sql, args = L.last_change_of_key(LAST_CHANGE, "shop", "t", {"id": "1"})
    assert [tuple(r)[:3] for r in spark.sql(sql, args=args).collect()] == [("delete", DELETE, "0-1-4")]
    sql, args = L.changes_between(STATEMENT_ROWS, at(4), at(9))
    assert [tuple(r) for r in spark.sql(sql, args=args).collect()] == [
        (at(4), "src1", "0-1-4", "shop", "t", "delete", {"id": "1"}, DELETE)]


def test_views_over_path_tables_are_the_sessions_temporary_views(spark, tmp_path):
    cfg = JobConfig(delta_root=str(tmp_path / "delta"), exec_mode="idempotent")
    _apply(spark, cfg)
    refs = lineage_views(spark, cfg.delta_root)
    try:
        assert refs == {v: f"`{v}`" for v in LINEAGE_VIEWS}
        on_views = [q for q in readme_queries() if "_cdc_" in q]
        expected = [rows for q, rows in zip(readme_queries(), README_ROWS) if "_cdc_" in q]
        for query, rows in zip(on_views, expected):
            assert [tuple(r) for r in spark.sql(query).collect()] == rows, query
    finally:
        for view in LINEAGE_VIEWS:
            spark.catalog.dropTempView(view)

"""A target whose creation was killed (an empty `_delta_log` left behind) is created on the next run."""
from __future__ import annotations

from delta.tables import DeltaTable

from pipelines.apply import tables as D
from tests.spark.apply.builders import catalog_from_ddl


def test_an_empty_delta_log_left_by_a_killed_create_does_not_stop_the_target(spark, tmp_path):
    target = catalog_from_ddl("CREATE TABLE db.t (id INT PRIMARY KEY, v INT DEFAULT 7)").get("db", "t")
    path = str(tmp_path / "db__t")
    (tmp_path / "db__t" / "_delta_log").mkdir(parents=True)
    assert D.ensure_target(spark, path, target)  # this call's CREATE committed version 0
    assert DeltaTable.isDeltaTable(spark, path)
    assert not D.ensure_target(spark, path, target)  # existed: nothing committed
    assert [f.name for f in DeltaTable.forPath(spark, path).toDF().schema.fields][:2] == ["id", "v"]

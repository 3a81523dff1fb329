"""What `_cdc_progress` records for consistent reads (libs/reads/versions.py, issue #40) and the
consistent-read SQL's arguments (libs/reads/consistent_read_sql.py): GTID domains, the batch's last GTID
per domain, table_versions in the progress rows, and one-line refusals."""
import dataclasses
import datetime as dt

import pytest

from libs.apply.plan import last_changes, progress_rows
from libs.reads.versions import ConsistentReadError, versions_of
from libs.contracts.position import GtidFormatError, gtid_domain_seq, gtid_positions
from libs.reads.consistent_read_sql import point_query, select_as_of, table_versions_at
from tests.change_builders import Source

UUID = "3E11FA47-71CA-11E1-9E33-C80AA9429562"


@pytest.mark.parametrize("gtid, expected", [
    ("0-1-42", ("0", 42)), ("12-7-3", ("12", 3)),
    (f"{UUID}:23", (UUID.lower(), 23)), (f"{UUID}:tag_1:5", (UUID.lower() + ":tag_1", 5)),
])
def test_gtid_domain_and_seq(gtid, expected):
    assert gtid_domain_seq(gtid) == expected


@pytest.mark.parametrize("text", ["", "0-1", "a-b-c", "mdb-bin.000002:1050", f"{UUID}", "0-1-2,0-1-3"])
def test_a_text_that_is_no_gtid_is_refused(text):
    with pytest.raises(GtidFormatError, match="not a GTID"):
        gtid_domain_seq(text)


def test_the_last_gtid_of_each_domain_in_commit_order_over_the_driver_and_the_executors_parts():
    src = Source("d", "t", ["id"])
    first, second = src.insert({"id": 1}, trx=5), src.insert({"id": 2}, trx=9)
    other = dataclasses.replace(src.insert({"id": 3}, trx=7), gtid="3-2-70")  # another domain, between them
    executors = src.insert({"id": 4}, trx=12)  # the executors' part's last change of the source
    mysql = dataclasses.replace(Source("d", "t", ["id"], source="my").insert({"id": 1}, trx=1),
                                gtid=f"{UUID}:8")
    no_gtid = dataclasses.replace(Source("d", "t", ["id"], source="files").insert({"id": 1}, trx=1),
                                  gtid=None)
    positions = gtid_positions([second, other, first, mysql, no_gtid], last_changes([executors]))
    assert positions == {"src1": [{"gtid_domain": "0", "gtid_seq": 12, "gtid": "0-1-12"},
                                  {"gtid_domain": "3", "gtid_seq": 70, "gtid": "3-2-70"}],
                         "my": [{"gtid_domain": UUID.lower(), "gtid_seq": 8, "gtid": f"{UUID}:8"}]}


def test_progress_rows_carry_the_batch_table_versions_and_a_heartbeat_repeat_none():
    src = Source("d", "t", ["id"])
    changes = [src.insert({"id": 1}), src.insert({"id": 2})]
    (row,) = progress_rows(changes, "job", 3, versions={"d__t": 7, "d__a": 2})
    assert row["table_versions"] == {"d__a": 2, "d__t": 7}
    assert row["gtid_positions"] == [{"gtid_domain": "0", "gtid_seq": 2, "gtid": "0-1-2"}]
    (idle,) = progress_rows([], "job", 4, {"src1": 1}, previous={"src1": row})
    assert (idle["batch_id"], idle["changes"], idle["table_versions"], idle["gtid_positions"]) == (
        4, 0, None, None)
    (plain,) = progress_rows(changes, "job", 5)  # a heartbeat-only batch's append: no versions given
    assert plain["table_versions"] is None


def test_versions_of_names_every_table_no_batch_wrote():
    assert versions_of(["b", "a", "b"], {"a": 3, "b": 1, "c": 9}, 4, "x") == {"b": 1, "a": 3}
    with pytest.raises(ConsistentReadError, match=r"^GTID 0-1-9: no batch up to 4 wrote c, d \(_cdc_batch"):
        versions_of(["a", "c", "d"], {"a": 3}, 4, "GTID 0-1-9")


def test_point_queries_bind_every_value_and_take_one_point():
    sql, args, asked = point_query("p", "job", gtid=f"{UUID}:23")
    assert (args, asked) == ({"app_id": "job", "domain": UUID.lower(), "seq": 23}, f"GTID {UUID}:23")
    assert UUID.lower() not in sql and "23" not in sql
    at = dt.datetime(2024, 5, 6, 7, 8, 9)
    assert point_query("p", "job", commit_time=at)[1] == {"app_id": "job", "at": at}
    assert point_query("p", "job")[2] == "the latest batch"
    with pytest.raises(ConsistentReadError, match="give one of"):
        point_query("p", "job", gtid="0-1-1", batch_id=3)
    with pytest.raises(ConsistentReadError, match="not a GTID"):
        point_query("p", "job", gtid="0-1-x")
    sql, args = table_versions_at("p", "job", 4, ["x`y", "z"])
    assert "x`y" not in sql and args == {"app_id": "job", "batch_id": 4, "t0": "x`y", "t1": "z"}
    assert select_as_of("delta.`/d/t`", "7") == "SELECT * FROM delta.`/d/t` VERSION AS OF 7"

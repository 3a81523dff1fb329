"""libs.apply.change_log against the entries' own dicts: the change log the applier writes is
copied from the collected change records (Arrow) plus the replay's decisions, and must equal
`from_pylist(entry.to_dict())` row for row, whatever the outcome, image or order."""
from __future__ import annotations

import dataclasses

import pyarrow as pa
import pytest
from pyspark.sql.pandas.types import to_arrow_schema

from libs.apply.plan import UNDECLARED_QUARANTINE, replay_touched, undeclared
from libs.apply.change_log import change_log_table
from pipelines.apply import tables as D
from pipelines.apply.applier import DeltaApplier
from tests.spark.apply.builders import Source, catalog_from_ddl, changes_df

DDL = """
CREATE TABLE shop.a (id INT PRIMARY KEY, v VARCHAR(10), b VARBINARY(8));
CREATE TABLE shop.bag (x INT, y INT);
"""


def _batch():
    a = Source("shop", "a", ["id", "v", "b"])
    bag = Source("shop", "bag", ["x", "y"], names=False)  # trx ids as a's: pairing is by row
    ghost = Source("shop", "ghost", ["z"], source="src2")
    changes = [
        a.insert({"id": 1, "v": "one", "b": b"\x00\xff"}),
        a.insert({"id": 2, "v": None}, statement="INSERT INTO a VALUES (2, NULL)"),
        a.update({"id": 1}, {"v": "uno"}, statement="UPDATE a SET v='uno' WHERE id=1"),
        a.delete({"id": 9}),  # row not found: skipped in idempotent mode
        a.insert({"id": 2, "v": "dup"}),  # duplicate key: overwritten
        a.change("ddl", statement="ALTER TABLE a ADD c INT"),
        a.change("statement", statement="DELETE FROM a"),
        bag.insert({"x": 1, "y": 1}), bag.insert({"x": 1, "y": 1}),
        bag.delete({"x": 1, "y": 1}, statement="DELETE FROM bag LIMIT 1"),
        ghost.change("ddl", statement="CREATE TABLE ghost (z INT)"),
        ghost.insert({"z": 5}),
    ]
    changes[0] = dataclasses.replace(changes[0], gtid=None)  # file:pos identity
    return changes


def _entries(changes):
    """The replay's entries per table and the row of each one's change (as DeltaApplier pairs them)."""
    catalog = catalog_from_ddl(DDL, {"shop.a": {"on_statement": "quarantine"}})
    log, rows = [], []
    for name in ("a", "bag", "ghost"):
        mine = [i for i, c in enumerate(changes) if c.table == name]
        group = [changes[i] for i in mine]
        if name == "ghost":
            log.extend(undeclared(c, UNDECLARED_QUARANTINE)[0] for c in group)
        else:
            log.extend(replay_touched(catalog.get("shop", name), group, None, mode="idempotent").change_log)
        rows.extend(mine)
    return log, rows


def test_change_log_table_equals_the_entries_dicts_in_any_order(spark):
    changes = _batch()
    collected = DeltaApplier._collect(changes_df(spark, changes))
    log, rows = _entries(changes)
    schema = to_arrow_schema(D.change_log_schema())
    outcomes = {e.outcome for e in log}
    assert {"applied", "overwritten", "skipped_row_not_found", "ddl_recorded", "quarantined_statement",
            "undeclared_table"} <= outcomes
    for entries, at in ((log, rows), (log[::-1], rows[::-1])):
        expected = pa.Table.from_pylist([{**e.to_dict(), "batch_id": 7} for e in entries], schema=schema)
        actual = change_log_table(collected, entries, at, 7, schema)
        assert actual.schema == schema
        assert actual.to_pylist() == expected.to_pylist()
        assert actual.equals(expected)
    assert change_log_table(collected, [], [], 7, schema).num_rows == 0


def test_an_entry_paired_with_another_change_is_named(spark):
    changes = _batch()
    collected = DeltaApplier._collect(changes_df(spark, changes))
    log, rows = _entries(changes)
    schema = to_arrow_schema(D.change_log_schema())
    with pytest.raises(ValueError, match=r"entry 1 \(GTID 0-1-2 at mdb-bin.000002:1150, trx_id '0-1-2'\) "
                                         r"paired with a change whose trx_id is '0-1-3'"):
        change_log_table(collected, log, [rows[0], rows[2], *rows[2:]], 7, schema)
    with pytest.raises(ValueError, match="12 change-log entries but 11 change rows"):
        change_log_table(collected, log, rows[1:], 7, schema)

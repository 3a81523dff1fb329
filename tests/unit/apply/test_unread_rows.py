"""libs/apply/unread_rows.py: an upsert the replay did not read is appended by a DV commit only
when the replay looked it up by one of its enforced keys; a table of cases."""
import pytest

from libs.apply.unread_rows import looked_up_by_key
from libs.replay import LINEAGE_COLUMN, ROW_ID_COLUMN
from tests.unit.replay.replay_builders import target_from_ddl

KEYED = "CREATE TABLE d.t (id int NOT NULL PRIMARY KEY, a int)"
TWO_KEYS = "CREATE TABLE d.t (id int NOT NULL, b int NOT NULL, u int, PRIMARY KEY (id, b), UNIQUE KEY (u))"
UNIQUE_ONLY = "CREATE TABLE d.t (u int, a int, UNIQUE KEY (u))"  # a nullable unique key
KEYLESS = "CREATE TABLE d.t (x int, y varchar(5))"


def upsert(operation="insert", **values):
    return {**values, ROW_ID_COLUMN: "r", LINEAGE_COLUMN: {"operation": operation}}


@pytest.mark.parametrize("ddl, row, appended", [
    (KEYED, upsert(id=1, a=None), True),                       # its primary key was looked up
    (KEYED, upsert("update", id=1, a=2), True),
    (KEYED, upsert("snapshot", id=1, a=2), False),             # snapshot rows are not looked up
    (TWO_KEYS, upsert(id=1, b=2, u=None), True),               # the primary key, though u is null
    (TWO_KEYS, upsert(id=1, b=None, u=7), True),               # (the unique key then)
    (UNIQUE_ONLY, upsert(u=5, a=1), True),
    (UNIQUE_ONLY, upsert(u=None, a=1), False),                 # a null key looks nothing up
    (KEYLESS, upsert(x=1, y="p"), False),                      # nothing looked up by key
])
def test_which_unread_upsert_a_dv_commit_may_append(ddl, row, appended):
    assert looked_up_by_key(target_from_ddl(ddl), row) is appended

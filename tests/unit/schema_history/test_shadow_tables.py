"""libs/apply/shadow_tables.py: which tables are an online schema change tool's working
tables (issue #39 item 1), as a table of (name, tables followed in its database, gone at the
batch's end) -> ended working table, and the tools' names -> the table they belong to."""
from __future__ import annotations

import pytest

from libs.apply.shadow_tables import ends_as_shadow, shadow_of


@pytest.mark.parametrize("name, owner", [
    ("_t_new", "t"), ("_t_old", "t"),                    # pt-online-schema-change
    ("__t_new", "t"), ("___orders_old", "orders"),       # pt-osc when `_t_new` was taken
    ("_t_gho", "t"), ("_t_ghc", "t"), ("_t_del", "t"),   # gh-ost
    ("_t_20240131120000_del", "t"),                       # gh-ost --timestamp-old-table
    ("_sbtest2_new", "sbtest2"), ("_my_table_gho", "my_table"),
    ("t", None), ("t_new", None), ("_t_newer", None), ("_new", None), ("new_t_gho", None), ("_t_ghost", None),
])
def test_the_tools_names(name, owner):
    assert shadow_of(name) == owner


@pytest.mark.parametrize("name, followed, gone, ended", [
    ("_t_new", {"t", "_t_new"}, True, True),       # renamed onto t (the swap)
    ("_t_old", {"t", "_t_old"}, True, True),       # t renamed away, then dropped
    ("_t_ghc", {"t", "_t_ghc"}, True, True),       # gh-ost's changelog, dropped
    ("_T_gho", {"t"}, True, True),                 # names compare folded, as the server's do
    ("_t_new", {"t", "_t_new"}, False, False),     # still on the server: the tool is copying
    ("_t_del", {"t", "_t_del"}, False, False),     # gh-ost without --ok-to-drop-table: a kept table
    ("_x_new", {"t", "_x_new"}, True, False),      # no followed table of that name: any table
    ("archive", {"t", "archive"}, True, False),    # not a tool's name
])
def test_an_ended_working_table(name, followed, gone, ended):
    assert ends_as_shadow(name, followed, gone) is ended

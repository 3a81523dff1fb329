"""The snapshot protocol's rules as tables (libs/snapshot/protocol.py docstring)."""
import pytest

from libs.snapshot.protocol import (
    FOLLOW, INITIAL, RESNAPSHOT, RUN, LastRecord, StartPlan, plan_start, superseded,
)
from libs.contracts.position import BinlogPosition

L = BinlogPosition("mdb-bin.000003", 900)
C = BinlogPosition("mdb-bin.000002", 120)

START_TABLE = [
    # last record,                                      mode,       plan
    (None,                                              INITIAL,    StartPlan(RUN, None)),
    (None,                                              RESNAPSHOT, StartPlan(RUN, None)),
    (LastRecord(L),                                     INITIAL,    StartPlan(FOLLOW, L)),
    (LastRecord(L),                                     RESNAPSHOT, StartPlan(RUN, L)),
    (LastRecord(C, "rows", ("d.b", "d.c")),             INITIAL,    StartPlan(RUN, C, ("d.b", "d.c"))),
    (LastRecord(C, "table_end", ("d.c",)),              RESNAPSHOT, StartPlan(RUN, C, ("d.c",))),
    (LastRecord(C, "begin", ("d.a", "d.b")),            INITIAL,    StartPlan(RUN, C, ("d.a", "d.b"))),
    (LastRecord(C, "table_end", ()),                    INITIAL,    StartPlan(RUN, C, ())),
    (LastRecord(C, "end", ()),                          INITIAL,    StartPlan(FOLLOW, C)),
    (LastRecord(C, "end", ()),                          RESNAPSHOT, StartPlan(RUN, C)),
]


@pytest.mark.parametrize("last, mode, plan", START_TABLE)
def test_start_plan(last, mode, plan):
    assert plan_start(last, mode) == plan


def test_unknown_mode_is_refused():
    with pytest.raises(ValueError, match="snapshot mode"):
        plan_start(None, "always")


SNAP = BinlogPosition("mdb-bin.000009", 5000)
SUPERSEDED_TABLE = [
    # snapshot at, change at,                           superseded
    (SNAP,  BinlogPosition("mdb-bin.000009", 4999),  True),
    (SNAP,  BinlogPosition("mdb-bin.000009", 5000),  True),   # the transaction ending at P is in the snapshot
    (SNAP,  BinlogPosition("mdb-bin.000009", 5001),  False),
    (SNAP,  BinlogPosition("mdb-bin.000010", 4),     False),  # numbered order, not text order
    (SNAP,  BinlogPosition("mdb-bin.000008", 99999), True),
    (BinlogPosition("mdb-bin.999999", 4), BinlogPosition("mdb-bin.1000000", 4), False),
    (None,  BinlogPosition("mdb-bin.000001", 4),     False),  # no snapshot: every change applies
]


@pytest.mark.parametrize("snapshot_at, change_at, expected", SUPERSEDED_TABLE)
def test_superseded(snapshot_at, change_at, expected):
    assert superseded(snapshot_at, change_at) is expected

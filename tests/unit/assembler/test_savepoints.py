"""SAVEPOINT / ROLLBACK TO SAVEPOINT inside GTID-opened transactions (MySQL GTID + BEGIN,
MariaDB transactional GTID): WL#4162 classifies them INSIDE (a Query that is neither BEGIN nor
COMMIT/ROLLBACK, not immediately logged), so the group goes on to its Xid and its rows stay."""
import pytest

from libs.stream.assembler import Assembler, InMemorySpillStore, to_change_records
from tests.unit.assembler.stream import place
from tests.unit.boundary import events as e

ROLLBACK_TO = ["ROLLBACK TO a", "ROLLBACK TO SAVEPOINT a", "rollback work to savepoint `a`",
               "  ROLLBACK  TO `a`"]


def _feed(opening, flavour, rollback_to):
    events = opening + [e.query("SAVEPOINT a"), e.table_map(), e.write_rows({0: 1}),
                        e.query(rollback_to), e.table_map(), e.write_rows({0: 2}), e.xid()]
    assembler = Assembler("src1", InMemorySpillStore(), flavour=flavour)
    return assembler.feed(place(events))


@pytest.mark.parametrize("rollback_to", ROLLBACK_TO)
@pytest.mark.parametrize("opening, flavour", [
    ([e.mysql_gtid(5), e.query("BEGIN")], "mysql"),
    ([e.maria_gtid(5)], "mariadb"),
    ([e.query("BEGIN")], "mysql"),
])
def test_rollback_to_savepoint_keeps_the_group_open_until_its_xid(opening, flavour, rollback_to):
    out = _feed(opening, flavour, rollback_to)
    assert not out.quarantined and out.counters["invalid_transitions"] == 0
    [trx] = out.transactions
    assert trx.end_pos == sum(ev.header.event_size for ev in opening) + 7 * 40 + 4
    records = to_change_records(trx)
    assert [r["op"] for r in records] == ["insert", "insert"]  # savepoint control is no change

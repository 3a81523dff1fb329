"""The replay's dispatch (issue #55 item 2): a change goes to its operation through one declared
table, _Replayer.HANDLERS (libs/replay/engine.py), never by its op's text as an attribute name.
Every op a change can carry has its operation; an op without one stops the batch, naming the op,
the table and the change's binlog position."""

import dataclasses

import pytest

from libs.contracts.change import Op
from libs.replay import ReplayStopped, replay
from libs.replay.engine import _Replayer
from libs.replay.errors import UNKNOWN_OP
from replay_builders import Source, rows, target_from_ddl

PK = "CREATE TABLE test.t (id int NOT NULL, name varchar(10), qty int, PRIMARY KEY (id))"
SRC = ["id", "name", "qty"]

# op -> (before, after, statement) of one change, and the outcome its operation logs
CASES = {
    Op.INSERT: ((None, {"id": 2, "name": "b", "qty": 2}, None), "applied"),
    Op.UPDATE: (({"id": 1}, {"qty": 3}, None), "applied"),
    Op.DELETE: (({"id": 1}, None, None), "applied"),
    Op.STATEMENT: ((None, None, "DELETE FROM t"), "statement_not_executed"),
    Op.DDL: ((None, None, "ALTER TABLE t ADD COLUMN x int"), "ddl_recorded"),
    Op.SNAPSHOT: ((None, {"id": 2, "name": "b", "qty": 2}, None), "applied"),
    Op.TRUNCATE: ((None, None, None), "table_replaced"),
    Op.SUPERSEDED: (({"id": 1}, {"qty": 3}, None), "superseded_by_ddl"),
}


def test_every_op_has_its_operation_in_the_table():
    assert set(_Replayer.HANDLERS) == set(Op) == set(CASES)
    assert {op: handler.__name__ for op, handler in _Replayer.HANDLERS.items()} == {op: op.value for op in Op}


@pytest.mark.parametrize("op", list(Op))
def test_each_op_reaches_its_operation(op):
    target = target_from_ddl(PK, apply="both")  # rows and statements: every op can be taken
    (before, after, statement), outcome = CASES[op]
    change = Source("test", "t", SRC).change(op.value, before, after, statement=statement)
    result = replay(target, rows(target, (1, "a", 1)), [change])
    assert [(e.op, e.outcome) for e in result.change_log] == [(op, outcome)]


def _unknown_op_stop(change):
    with pytest.raises(ReplayStopped) as stopped:
        replay(target_from_ddl(PK), rows(target_from_ddl(PK), (1, "a", 1)), [change], mode="idempotent")
    assert stopped.value.error.kind == UNKNOWN_OP
    return str(stopped.value)


def test_an_op_the_table_lacks_stops_naming_op_table_and_position(monkeypatch):
    monkeypatch.setattr(_Replayer, "HANDLERS", {o: h for o, h in _Replayer.HANDLERS.items() if o != Op.DDL})
    change = Source("test", "t", SRC).change("ddl", statement="ALTER TABLE t ADD COLUMN x int")
    message = _unknown_op_stop(change)
    for part in ("op 'ddl'", "dispatch table", "_Replayer.HANDLERS", "test.t", "GTID 0-1-1",
                 "mdb-bin.000002:1050"):
        assert part in message
    assert "\n" not in message


def test_an_op_no_change_record_has_stops_instead_of_reaching_an_attribute():
    # the former getattr(self, op) would have called _Replayer.run here
    change = dataclasses.replace(Source("test", "t", SRC).insert({"id": 2}), op="run")
    message = _unknown_op_stop(change)
    assert "op 'run'" in message and "mdb-bin.000002:1050" in message

"""libs/apply/modes/: the one reading of a target's `history` and `delete` (select.mode_of), and
what each mode decides, as a table (README "Soft deletes", "History targets")."""
from __future__ import annotations

import dataclasses

import pytest

from libs.apply.modes.current import CURRENT
from libs.apply.modes.scd2 import SCD2
from libs.apply.modes.select import MODES, mode_of
from libs.apply.modes.soft_delete import DELETED, SOFT_DELETE
from libs.contracts.avro_schemas import avro_schema
from libs.replay.engine import replay
from libs.replay.versions import IS_CURRENT, replay_versions
from libs.targets import build_catalog, parse_ddl
from tests.change_builders import Source

DDL = "CREATE TABLE d.t (id INT NOT NULL, v INT, PRIMARY KEY (id))"
TARGET = build_catalog(None, "t.yaml", parse_ddl(DDL, "t.sql")).get("d", "t")
T = Source("d", "t", ["id", "v"])

# (history, delete) -> mode; scd2 with delete soft is refused where targets are declared
SELECTION = [("current", None, CURRENT), ("current", "hard", CURRENT), ("current", "soft", SOFT_DELETE),
             ("scd2", None, SCD2), ("scd2", "hard", SCD2)]

#        mode         columns            live                folds  executors mirrors job delete
DECIDES = [(CURRENT,     None,              None,               True,  True,     True,   True),
           (SOFT_DELETE, "soft_delete",     (DELETED, False),   False, True,     True,   True),
           (SCD2,        "history_columns", (IS_CURRENT, True), False, False,    False,  False)]


@pytest.mark.parametrize("history, delete, mode", SELECTION)
def test_a_target_has_the_mode_its_declaration_names(history, delete, mode):
    assert mode_of(dataclasses.replace(TARGET, history=history, delete=delete)) is mode


@pytest.mark.parametrize("mode, columns, live, folds, on_executors, mirrors, takes_job_delete", DECIDES)
def test_what_each_mode_decides(mode, columns, live, folds, on_executors, mirrors, takes_job_delete):
    assert (mode.columns, mode.live, mode.folds, mode.on_executors, mode.mirrors, mode.takes_job_delete) == (
        columns, live, folds, on_executors, mirrors, takes_job_delete)
    if columns is not None:  # its columns are a schema of schemas/, and its live column one of them
        assert live[0] in [f["name"] for f in avro_schema(columns)["fields"]]


def test_every_mode_is_listed_once_and_replays_with_its_engine():
    assert [m.name for m in MODES] == ["current", "soft_delete", "scd2"]
    batch = [T.insert({"id": 1, "v": 2}), T.update({"id": 1}, {"v": 3})]
    rows = replay(TARGET, [], batch).upserts
    assert [w.values for w in rows] == [{"id": 1, "v": 3}]
    for mode in (CURRENT, SOFT_DELETE):
        assert mode.replay(TARGET, [], batch, mode="strict").upserts == rows
    versioned = SCD2.replay(TARGET, [], batch, mode="strict")
    assert versioned.upserts == rows  # the same replay, plus its versions: one per transaction
    assert [v.values for v in versioned.versions] == [{"id": 1, "v": 2}, {"id": 1, "v": 3}]
    assert type(versioned) is type(replay_versions(TARGET, [], batch))

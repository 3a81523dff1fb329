"""WL#5092, scenario by scenario: the seed's R1 logging tables (INSERTS / UPDATES / DELETES per
binlog_row_image), BLOBS R1-R4, the PKE, and DEFAULT VALUES R1-R2 (its MASTER>/SLAVE> examples),
each run through the real chain: the simulated master executes the statement and writes binlog
bytes, the codec and assembler turn them into change records, libs.replay replays them onto the
replica's own table (its DEFAULTs). A row states what the seed says: the columns of the before
and after image, and the replica's table afterwards. Expectations are written by hand.

One departure from the seed's literal examples: DEFAULT VALUES R1.2 declares `t1 (a int DEFAULT
100, b int)` without a key, and a server logs every column of a keyless table under every mode
(libs/simulator/images.py, from the corpus), so the master's 100 would travel in the image. The
row "R1.2" therefore gives t1 a primary key; the keyless shape is its own row ("R1.2 keyless").
"""
from __future__ import annotations

import pytest

from libs.stream.assembler import InMemorySpillStore
from libs.replay import replay
from libs.simulator.master import Master, Session
from libs.simulator.schema import Table, blob, int_col, varchar
from libs.simulator.sinks import FileSink
from libs.simulator.statements import Delete, Insert, Update
from libs.stages.assembly import InputFrame, assemble_group
from tests.change_builders import decoded
from replay_builders import target_from_ddl

# t: PK id, a NOT NULL column with a DEFAULT, a nullable one with a DEFAULT, a blob
T = Table("t", (int_col("id", nullable=False), int_col("n", nullable=False, default=0),
                varchar("label", 10, default=b"lbl"), blob("b")), primary_key=("id",))
T_DDL = ("CREATE TABLE sim.t (id int NOT NULL, n int NOT NULL DEFAULT 0, label varchar(10) DEFAULT 'lbl', "
         "b blob, PRIMARY KEY (id))")
T_UK = Table("t", (int_col("code", nullable=False), int_col("val")), unique_keys=(("code",),))
T_UK_DDL = "CREATE TABLE sim.t (code int NOT NULL, val int, UNIQUE KEY (code))"
T_NOKEY = Table("t", (int_col("a"), int_col("b")))
T_NOKEY_DDL = "CREATE TABLE sim.t (a int, b int)"
# DEFAULT VALUES R1.1: the slave has an extra column with a DEFAULT
T_R11_DDL = "CREATE TABLE sim.t (a int, b int, c int DEFAULT 100)"
# DEFAULT VALUES R1.2: master DEFAULT 100, slave DEFAULT 900 (with a PK, see the docstring)
T_R12 = Table("t", (int_col("id", nullable=False), int_col("a", default=100), int_col("b")),
              primary_key=("id",))
T_R12_DDL = "CREATE TABLE sim.t (id int NOT NULL, a int DEFAULT 900, b int, PRIMARY KEY (id))"
T_R12_NOKEY = Table("t", (int_col("a", default=100), int_col("b")))
T_R12_NOKEY_DDL = "CREATE TABLE sim.t (a int DEFAULT 900, b int)"

ROW1 = Insert("t", ({0: 1, 1: 0, 2: b"lbl", 3: b"\x01"},))  # (1, 0, 'lbl', x'01')
ALL = ("id", "n", "label", "b")
FULL_ROW = (1, 0, "lbl", b"\x01")

# name, binlog_row_image, master table, replica DDL, setup, statement
#   -> before image columns, after image columns (None: no such image), replica table after
SCENARIOS = [
    # R1 INSERTS: minimal = specified (+autoinc); noblob = specified + non-blob; full = all
    ("insert naming a blob", "full", T, T_DDL, [], Insert("t", ({0: 1, 3: b"\x01"},)),
     None, ALL, [FULL_ROW]),
    ("insert naming a blob", "noblob", T, T_DDL, [], Insert("t", ({0: 1, 3: b"\x01"},)),
     None, ALL, [FULL_ROW]),  # BLOBS R3: a written blob is logged
    ("insert naming a blob", "minimal", T, T_DDL, [], Insert("t", ({0: 1, 3: b"\x01"},)),
     None, ("id", "b"), [FULL_ROW]),  # n, label: the replica's DEFAULTs
    ("insert without the blob", "noblob", T, T_DDL, [], Insert("t", ({0: 1},)),
     None, ("id", "n", "label"), [(1, 0, "lbl", None)]),  # BLOBS R4
    ("insert without the blob", "minimal", T, T_DDL, [], Insert("t", ({0: 1},)),
     None, ("id",), [(1, 0, "lbl", None)]),
    # R1 UPDATES: minimal = PKE / specified; noblob = PKE + non-blob / specified + non-blob
    ("update of a non-blob", "full", T, T_DDL, [ROW1], Update("t", {0: 1}, {1: 5}),
     ALL, ALL, [(1, 5, "lbl", b"\x01")]),
    ("update of a non-blob", "noblob", T, T_DDL, [ROW1], Update("t", {0: 1}, {1: 5}),
     ("id", "n", "label"), ("id", "n", "label"), [(1, 5, "lbl", b"\x01")]),  # BLOBS R2, R4; R2.2
    ("update of a non-blob", "minimal", T, T_DDL, [ROW1], Update("t", {0: 1}, {1: 5}),
     ("id",), ("n",), [(1, 5, "lbl", b"\x01")]),  # DEFAULT VALUES R2.2: the rest keeps its value
    ("update of the blob", "noblob", T, T_DDL, [ROW1], Update("t", {0: 1}, {3: b"\x02"}),
     ("id", "n", "label"), ALL, [(1, 0, "lbl", b"\x02")]),  # BLOBS R3
    ("update of the key", "minimal", T, T_DDL, [ROW1], Update("t", {0: 1}, {0: 7}),
     ("id",), ("id",), [(7, 0, "lbl", b"\x01")]),
    # R1 DELETES: minimal = PKE; noblob = PKE + non-blob; full = all
    ("delete", "full", T, T_DDL, [ROW1], Delete("t", {0: 1}), ALL, None, []),
    ("delete", "noblob", T, T_DDL, [ROW1], Delete("t", {0: 1}), ("id", "n", "label"), None, []),
    ("delete", "minimal", T, T_DDL, [ROW1], Delete("t", {0: 1}), ("id",), None, []),
    # PKE 2: a UK of NOT NULL columns; PKE 3: no key -> all columns, every mode
    ("NOT NULL unique key is the PKE", "minimal", T_UK, T_UK_DDL, [Insert("t", ({0: 1, 1: 1},))],
     Update("t", {0: 1}, {1: 2}), ("code",), ("val",), [(1, 2)]),
    ("no key: the PKE is every column", "minimal", T_NOKEY, T_NOKEY_DDL, [Insert("t", ({0: 1, 1: 1},))],
     Update("t", {0: 1}, {1: 2}), ("a", "b"), ("a", "b"), [(1, 2)]),
    ("no key, identical rows: one changes per row event", "minimal", T_NOKEY, T_NOKEY_DDL,
     [Insert("t", ({0: 1, 1: 1}, {0: 1, 1: 1}))], Delete("t", {0: 1}), ("a", "b"), None, []),
    # DEFAULT VALUES R1.1: MASTER> t1 (a int, b int); SLAVE> t1 (a int, b int, c int DEFAULT 100);
    # MASTER> INSERT INTO t1 VALUES (1,1); SLAVE> SELECT * FROM t1 -> 1 1 100
    ("R1.1 extra slave column", "full", T_NOKEY, T_R11_DDL, [], Insert("t", ({0: 1, 1: 1},)),
     None, ("a", "b"), [(1, 1, 100)]),
    # DEFAULT VALUES R1.2: MASTER> INSERT INTO t1(b) VALUES (1); master (100, 1), SLAVE (900, 1)
    ("R1.2", "minimal", T_R12, T_R12_DDL, [], Insert("t", ({0: 1, 2: 1},)),
     None, ("id", "b"), [(1, 900, 1)]),
    ("R1.2", "full", T_R12, T_R12_DDL, [], Insert("t", ({0: 1, 2: 1},)),
     None, ("id", "a", "b"), [(1, 100, 1)]),  # the master's value travels in a full image
    ("R1.2 keyless", "minimal", T_R12_NOKEY, T_R12_NOKEY_DDL, [], Insert("t", ({1: 1},)),
     None, ("a", "b"), [(100, 1)]),
    # DEFAULT VALUES R2: an UPDATE unpacks its AI on top of the replica's row (900 stays)
    ("R2 update keeps the slave's value", "minimal", T_R12, T_R12_DDL, [Insert("t", ({0: 1, 2: 1},))],
     Update("t", {0: 1}, {2: 2}), ("id",), ("b",), [(1, 900, 2)]),
]
IDS = [f"{s[0]}-{s[1]}" for s in SCENARIOS]


def _changes(table: Table, row_image: str, statements) -> list[dict]:
    """The master executes `statements`; its binlog goes through the codec and the assembler."""
    sink = FileSink()
    master = Master([table], sink, flavour="mariadb", session=Session("ROW", row_image, True))
    for stmt in statements:
        master.execute(stmt)
    frames = [InputFrame(f.data, "sim-bin.000001", f.pos) for f in sink.frames]
    records, _ = assemble_group("sim", None, frames, InMemorySpillStore())
    assert not [r for r in records if r["kind"] == "quarantine"]
    return [c for c in decoded(records) if (c.database, c.table) == ("sim", "t")]


def _names(table: Table, image) -> tuple[str, ...] | None:
    return None if image is None else tuple(table.columns[v["ordinal"]].name for v in image)


@pytest.mark.parametrize("name,row_image,master,replica_ddl,setup,stmt,before,after,replica",
                         SCENARIOS, ids=IDS)
def test_scenario(name, row_image, master, replica_ddl, setup, stmt, before, after, replica):
    changes = _changes(master, row_image, [*setup, stmt])
    last_trx = changes[-1].trx_id
    logged = [c for c in changes if c.trx_id == last_trx and c.op != "ddl"]
    assert logged, "the statement logged no row change"
    assert {(_names(master, c.before), _names(master, c.after)) for c in logged} == {(before, after)}
    target = target_from_ddl(replica_ddl)
    table = replay(target, [], changes).final_table([])
    assert sorted(tuple(r[c] for c in target.column_names) for r in table) == sorted(replica)

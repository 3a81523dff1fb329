"""SCD2 history targets (README "History targets") on a real MariaDB equal the history the server
itself shows (issue #40: SCD2 from MINIMAL images equals the history rebuilt from the server or
from FULL-image runs of the same workload).

Two tables of one schema get the same snapshot rows and the same workload of transactions, one
written by a session with `binlog_row_image = MINIMAL`, the other by one with FULL. After every
COMMIT the workload reads the whole table back, with the commit's binlog position (SHOW MASTER
STATUS) and GTID (@@last_gtid): the oracle. A source row is followed through key-changing
updates by the workload, which knows which key became which; a key inserted again after its
DELETE is a new row. Its expected versions are its successive states across the post-commit
reads, each opened at the position of the transaction that made it (no transaction of the
workload leaves a row it writes as it was: InnoDB logs nothing for that, and the product makes a
version of a row changed and changed back, README)."""
from __future__ import annotations

import dataclasses

import pytest
from chispa import assert_df_equality
from pyspark.sql import Window
from pyspark.sql import functions as F

from libs.config.job import TablesSettings

from .helpers import job_config, replicate, ship_snapshot

pytestmark = pytest.mark.integration

DB = "sh_scd2"
IMAGES = {"t_min": "MINIMAL", "t_full": "FULL"}
DATA = ["id", "a", "b", "c"]
SNAPSHOT = "snapshot"  # the opening position of the snapshot's versions, in the oracle

# The scripted part of the workload: (statements of one transaction, {old key: new key}).
SCRIPTED = [
    (["UPDATE {t} SET a = a + 1 WHERE id = 1"], {}),
    (["UPDATE {t} SET b = NULL WHERE id = 2"], {}),
    (["UPDATE {t} SET c = CONCAT(c, '-x') WHERE id IN (3, 4)"], {}),
    (["INSERT INTO {t} VALUES (6, 60, 'six', 'text six')"], {}),
    (["UPDATE {t} SET a = 100 WHERE id = 5", "UPDATE {t} SET a = 101 WHERE id = 5",
      "UPDATE {t} SET b = 'five!' WHERE id = 5"], {}),
    (["UPDATE {t} SET id = 10 WHERE id = 1"], {1: 10}),
    (["DELETE FROM {t} WHERE id = 2"], {}),
    (["INSERT INTO {t} VALUES (2, 22, NULL, 'again')"], {}),
    (["UPDATE {t} SET a = a * 2 WHERE id IN (3, 6)", "DELETE FROM {t} WHERE id = 4",
      "INSERT INTO {t} VALUES (7, 70, 'seven', REPEAT('z', 300))",
      "UPDATE {t} SET b = 'ten' WHERE id = 10"], {}),
    (["UPDATE {t} SET id = 11, a = 111 WHERE id = 10"], {10: 11}),
    (["INSERT INTO {t} VALUES (50, 1, 'gone', 'in one transaction')", "UPDATE {t} SET b = 'two' WHERE id = 2",
      "DELETE FROM {t} WHERE id = 50"], {}),
    (["UPDATE {t} SET id = id + 100 WHERE id IN (3, 6)"], {3: 103, 6: 106}),
    (["UPDATE {t} SET b = CONCAT('all-', id) WHERE id > 0"], {}),
    (["UPDATE {t} SET c = 'short' WHERE id = 7", "UPDATE {t} SET id = 8 WHERE id = 7",
      "UPDATE {t} SET a = 88 WHERE id = 8"], {7: 8}),
    (["DELETE FROM {t} WHERE id = 103", "INSERT INTO {t} VALUES (4, 44, NULL, 'four again')"], {}),
]


def _generated(keys: list[int], i: int) -> list[str]:
    """Transaction i of the generated part over the table's live keys: every statement changes
    each row it matches (a + i + 1, a new text per i)."""
    one, other = keys[i % len(keys)], keys[(i + 1) % len(keys)]
    if i % 5 == 4:
        return [f"UPDATE {{t}} SET a = a + {i + 1}, c = CONCAT(c, '{i}') WHERE id IN ({one}, {other})"]
    if i % 7 == 6:
        return [f"UPDATE {{t}} SET a = a + {i + 1} WHERE id = {one}",
                f"UPDATE {{t}} SET b = 'g{i}' WHERE id = {one}",
                f"UPDATE {{t}} SET b = 'h{i}' WHERE id = {other}"]
    return [[f"UPDATE {{t}} SET a = a + {i + 1} WHERE id = {one}",
             f"UPDATE {{t}} SET b = 'g{i}' WHERE id = {one}",
             f"UPDATE {{t}} SET c = REPEAT('{chr(97 + i % 26)}', {100 + i}) WHERE id = {one}"][i % 3]]


class Oracle:
    """The server's history of one table: per source row, its states after each commit that
    changed it, with that commit's position and GTID; rows gone at the end: deleted."""

    def __init__(self, rows: list[tuple]):
        self.rows: dict[int, list] = {}  # source row -> [(pos, gtid, values), ...]
        self.live: dict[int, int] = {}  # key -> source row
        self.deleted: dict[int, tuple] = {}  # source row -> (pos, gtid) of the commit that deleted it
        self.commits: list[str] = []  # the workload's commit positions, in order
        self.record(rows, {}, SNAPSHOT, None)

    def record(self, rows: list[tuple], renames: dict[int, int], pos, gtid) -> None:
        live = {renames.get(k, k): row for k, row in self.live.items()}
        for row in set(live.values()) - {live[r[0]] for r in rows if r[0] in live}:
            self.deleted[row] = (pos, gtid)
        self.live = {}
        if pos != SNAPSHOT:
            self.commits.append(pos)
        for values in rows:
            row = live.get(values[0])
            if row is None:
                row = len(self.rows)
                self.rows[row] = []
            if not self.rows[row] or self.rows[row][-1][2] != values:
                self.rows[row].append((pos, gtid, values))
            self.live[values[0]] = row


def _values(row) -> tuple:
    return tuple(bytes(v) if isinstance(v, (bytes, bytearray)) else v for v in row)


def _run_workload(mariadb) -> dict[str, Oracle]:
    """The workload on both tables (each by its own session), the oracle of each."""
    sessions = {t: mariadb.connect(database=DB) for t in IMAGES}
    try:
        cursors = {t: s.cursor() for t, s in sessions.items()}
        for t, image in IMAGES.items():
            cursors[t].execute(f"SET SESSION binlog_row_image = '{image}'")
            cursors[t].execute("SELECT @@session.binlog_row_image")
            assert cursors[t].fetchone() == (image,)

        def read(t):
            cursors[t].execute(f"SELECT * FROM {t}")
            return sorted(_values(r) for r in cursors[t].fetchall())
        oracles = {t: Oracle(read(t)) for t in IMAGES}
        workload = list(SCRIPTED) + [None] * 24
        for i, step in enumerate(workload):
            statements, renames = step or (_generated([r[0] for r in read("t_min")], i - len(SCRIPTED)), {})
            for t in IMAGES:
                cursors[t].execute("BEGIN")
                for statement in statements:
                    cursors[t].execute(statement.format(t=t))
                    assert cursors[t].rowcount > 0, statement
                cursors[t].execute("COMMIT")
                cursors[t].execute("SHOW MASTER STATUS")
                file, pos = cursors[t].fetchone()[:2]
                cursors[t].execute("SELECT @@last_gtid")
                (gtid,) = cursors[t].fetchone()
                oracles[t].record(read(t), renames, f"{file}:{int(pos)}", gtid)
        assert read("t_min") == read("t_full")
        return oracles
    finally:
        for s in sessions.values():
            s.close()


def _history(spark, cfg, table):
    """The target's versions, each with its row's ordinal (by _row_id) and its own within the row."""
    df = spark.read.format("delta").load(f"{cfg.delta_root}/{DB}__{table}")
    pos = F.split("_from_pos", ":")
    order = [pos.getItem(0), pos.getItem(1).cast("long")]
    return df.withColumn("_version", F.row_number().over(Window.partitionBy("_row_id").orderBy(*order)))


def test_scd2_from_minimal_and_full_images_equals_the_servers_history(mariadb, kafka_broker, topic, spark,
                                                                     tmp_path):
    (default,) = mariadb.query("SELECT @@global.binlog_row_image")[0]
    assert default == "FULL"  # the server's default: the FULL table needs no more than its session's setting
    create = "(id INT PRIMARY KEY, a INT NOT NULL, b VARCHAR(20) NULL, c TEXT)"
    rows = "(1, 10, 'one', 'text one'), (2, 20, 'two', NULL), (3, 30, NULL, 'text three'), " \
           "(4, 40, 'four', 'text four'), (5, 50, 'five', 'text five')"
    mariadb.sql(f"DROP DATABASE IF EXISTS {DB}; CREATE DATABASE {DB}; "
                + "".join(f"CREATE TABLE {DB}.{t} {create}; INSERT INTO {DB}.{t} VALUES {rows}; "
                          for t in IMAGES))
    cfg = job_config(kafka_broker, topic, tmp_path, DB)
    cfg = dataclasses.replace(cfg, tables=TablesSettings(include=cfg.tables.include, history="scd2"))
    ship_snapshot(mariadb, kafka_broker, topic, DB)
    oracles = _run_workload(mariadb)
    ship_snapshot(mariadb, kafka_broker, topic, DB)  # the binlog to its end
    replicate(spark, cfg)

    for t, oracle in oracles.items():
        versions = _history(spark, cfg, t).collect()
        by_row: dict[str, list] = {}
        for v in sorted(versions, key=lambda v: v["_version"]):
            by_row.setdefault(v["_row_id"], []).append(v)
        positions = set(oracle.commits)
        # Each stored row's versions as the oracle has them: (opening position or SNAPSHOT, GTID, values).
        chains = {row_id: [(v["_from_pos"] if v["_from_pos"] in positions else SNAPSHOT,
                            v["_from_gtid"] if v["_from_pos"] in positions else None,
                            _values(v[c] for c in DATA)) for v in chain] for row_id, chain in by_row.items()}
        assert sorted(chains.values(), key=repr) == sorted(oracle.rows.values(), key=repr), t
        source_row = {repr(chain): row for row, chain in oracle.rows.items()}
        final = []
        for row_id, chain in by_row.items():
            row = source_row[repr(chains[row_id])]
            # Chained: each version closed by the row's next one; the last open, or closed by its DELETE.
            for v, after in zip(chain, chain[1:]):
                assert (v["_to_pos"], v["_to_gtid"], v["_valid_to"], v["_is_current"], v["_deleted"]) == \
                       (after["_from_pos"], after["_from_gtid"], after["_valid_from"], False, False), \
                       (t, v, after)
            last = chain[-1]
            if row in oracle.deleted:
                assert (last["_to_pos"], last["_to_gtid"], last["_is_current"], last["_deleted"]) == \
                       (*oracle.deleted[row], False, True), (t, last)
                assert last["_valid_to"] is not None, (t, last)
            else:
                assert (last["_to_pos"], last["_to_gtid"], last["_valid_to"], last["_is_current"],
                        last["_deleted"]) == (None, None, None, True, False), (t, last)
                final.append(_values(last[c] for c in DATA))
        assert len(versions) == sum(map(len, oracle.rows.values())), t
        assert sum(1 for v in versions if v["_is_current"]) == len(oracle.live) == len(final), t
        assert sorted(final) == sorted(_values(r) for r in mariadb.query(f"SELECT * FROM {DB}.{t}")), t
        assert len(oracle.deleted) == 3, t  # the workload deleted rows 2, 4 and 103 (50 never committed)

    # MINIMAL equals FULL: the same versions (values, order within the row, open / deleted), rows
    # told apart by their first version's key and the workload step that opened it.
    def comparable(t):
        steps = {p: step for step, p in enumerate(oracles[t].commits)}
        step_of = F.udf(lambda p: steps.get(p, -1), "int")
        df = _history(spark, cfg, t)
        row = Window.partitionBy("_row_id").orderBy("_version")
        return (df.withColumn("_first_id", F.first("id").over(row))
                .withColumn("_first_step", F.first(step_of("_from_pos")).over(row))
                .select("_first_step", "_first_id", "_version", *DATA, "_is_current", "_deleted"))

    assert_df_equality(comparable("t_min"), comparable("t_full"), ignore_row_order=True)

"""Online schema change tools as schema changes (issue #39 items 1-2), on a real MariaDB: gh-ost's
and pt-online-schema-change's statement patterns by plain SQL, with the whole cycle in one batch
and with the shadow filled in one batch and swapped in the next.

Asserted for each: every Delta version of `t` committed during the cycle is a state the server's
`t` had (its columns and rows: never empty, never partial); the end state equals the server's
SELECT; no Delta table is left for the tools' shadow and changelog tables; a row the copy did
not change keeps its lineage, and the copy is in the change log as what it is (the shadow's
INSERT ... SELECT)."""
from __future__ import annotations

import os

import pytest
from delta.tables import DeltaTable

from libs.system_tables import CHANGE_LOG, QUARANTINE

from .helpers import delta_table, job_config, replicate, server_table, ship_snapshot

pytestmark = pytest.mark.integration

# gh-ost: changelog table, ghost table created and altered, rows copied by INSERT ... SELECT,
# the binlog's changes to t applied to the ghost, the atomic cut-over's swap, then the drops.
GH_OST_COPY = [
    "CREATE TABLE _t_ghc (id BIGINT AUTO_INCREMENT, last_update TIMESTAMP DEFAULT CURRENT_TIMESTAMP, "
    "hint VARCHAR(64), value VARCHAR(4096), PRIMARY KEY (id), UNIQUE KEY (hint))",
    "INSERT INTO _t_ghc (hint, value) VALUES ('state', 'GhostTableMigrated')",
    "CREATE TABLE _t_gho LIKE t",
    "ALTER TABLE _t_gho ADD COLUMN note VARCHAR(20) DEFAULT 'x'",
    "INSERT IGNORE INTO _t_gho (id, a) SELECT id, a FROM t",
    "INSERT INTO t VALUES (100, 'new')",
    "REPLACE INTO _t_gho (id, a) VALUES (100, 'new')",
]
GH_OST_SWAP = [
    "UPDATE t SET a = 'changed' WHERE id = 2",
    "REPLACE INTO _t_gho (id, a) VALUES (2, 'changed')",
    "REPLACE INTO _t_ghc (hint, value) VALUES ('state', 'AllEventsUpToLockProcessed')",
    "RENAME TABLE t TO _t_del, _t_gho TO t",
    "DROP TABLE IF EXISTS _t_ghc",
    "DROP TABLE IF EXISTS _t_del",
    "INSERT INTO t VALUES (101, 'after', 'y')",
]
# pt-online-schema-change: the new table created and altered, triggers on t feed it, the rows
# copied by INSERT LOW_PRIORITY IGNORE ... SELECT, the swap, the old table and triggers dropped.
PT_OSC_COPY = [
    "CREATE TABLE _t_new LIKE t",
    "ALTER TABLE _t_new ADD COLUMN note VARCHAR(20) DEFAULT 'x'",
    "CREATE TRIGGER pt_osc_t_del AFTER DELETE ON t FOR EACH ROW DELETE IGNORE FROM _t_new WHERE id = OLD.id",
    "CREATE TRIGGER pt_osc_t_upd AFTER UPDATE ON t FOR EACH ROW REPLACE INTO _t_new (id, a) VALUES (NEW.id, NEW.a)",
    "CREATE TRIGGER pt_osc_t_ins AFTER INSERT ON t FOR EACH ROW REPLACE INTO _t_new (id, a) VALUES (NEW.id, NEW.a)",
    "INSERT LOW_PRIORITY IGNORE INTO _t_new (id, a) SELECT id, a FROM t LOCK IN SHARE MODE",
    "INSERT INTO t VALUES (100, 'new')",
]
PT_OSC_SWAP = [
    "UPDATE t SET a = 'changed' WHERE id = 2",
    "DELETE FROM t WHERE id = 3",
    "RENAME TABLE t TO _t_old, _t_new TO t",
    "DROP TABLE IF EXISTS _t_old",
    "DROP TRIGGER IF EXISTS pt_osc_t_del",
    "DROP TRIGGER IF EXISTS pt_osc_t_upd",
    "DROP TRIGGER IF EXISTS pt_osc_t_ins",
    "INSERT INTO t VALUES (101, 'after', 'y')",
]
TOOLS = {"gh_ost": (GH_OST_COPY, GH_OST_SWAP, ("_t_gho", "_t_ghc", "_t_del"), "INSERT IGNORE INTO _t_gho"),
         "pt_osc": (PT_OSC_COPY, PT_OSC_SWAP, ("_t_new", "_t_old"), "INSERT LOW_PRIORITY IGNORE INTO _t_new")}


def _run(mariadb, name: str, statements, states: list) -> None:
    """Each statement on its own, the server's t recorded after each (the states it had)."""
    for statement in statements:
        mariadb.sql(statement, database=name)
        states.append(server_table(mariadb, f"{name}.t"))


def _versions(spark, path: str, after: int) -> list[tuple[int, tuple]]:
    """Every Delta version of the table after version `after`, each as delta_table reads it."""
    latest = DeltaTable.forPath(spark, path).history(1).collect()[0]["version"]
    out = []
    for version in range(after + 1, latest + 1):
        df = spark.read.format("delta").option("versionAsOf", version).load(path).drop("_row_id", "_lineage")
        out.append((version, (df.columns, sorted((tuple(r) for r in df.collect()),
                                                  key=lambda row: [(v is not None, v) for v in row]))))
    return out


def _lineages(spark, path: str) -> dict[int, tuple]:
    rows = spark.read.format("delta").load(path).select("id", "_lineage.binlog_pos", "_lineage.statement").collect()
    return {r["id"]: (r["binlog_pos"], r["statement"]) for r in rows}


@pytest.mark.parametrize("tool", sorted(TOOLS))
@pytest.mark.parametrize("across", [False, True], ids=["one_batch", "across_batches"])
def test_an_online_schema_change_is_one_commit_of_the_new_table(mariadb, kafka_broker, topic, spark, tmp_path,
                                                               tool, across):
    copy, swap, shadows, copy_statement = TOOLS[tool]
    name = f"osc_{tool}_{'across' if across else 'one'}"
    mariadb.sql(f"DROP DATABASE IF EXISTS {name}; CREATE DATABASE {name}; "
                f"CREATE TABLE {name}.t (id INT PRIMARY KEY, a VARCHAR(10)); "
                f"INSERT INTO {name}.t VALUES (1, 'one'), (2, 'two'), (3, 'three'); "
                f"INSERT INTO {name}.t VALUES (4, 'four'), (5, 'five')")
    cfg = job_config(kafka_broker, topic, tmp_path, name)
    path = f"{cfg.delta_root}/{name}__t"
    ship_snapshot(mariadb, kafka_broker, topic, name)
    mariadb.sql("UPDATE t SET a = 'FIVE' WHERE id = 5", database=name)  # a lineage other than the snapshot's
    ship_snapshot(mariadb, kafka_broker, topic, name)
    replicate(spark, cfg)
    states = [server_table(mariadb, f"{name}.t")]
    assert delta_table(spark, path) == states[0]
    start = DeltaTable.forPath(spark, path).history(1).collect()[0]["version"]
    before = _lineages(spark, path)

    _run(mariadb, name, copy, states)
    if across:  # the shadow filled in one batch, swapped in the next
        ship_snapshot(mariadb, kafka_broker, topic, name)
        replicate(spark, cfg)
    _run(mariadb, name, swap, states)
    ship_snapshot(mariadb, kafka_broker, topic, name)
    replicate(spark, cfg)

    # Every version of t a reader could see is a state the server's t had.
    versions = _versions(spark, path, start)
    assert versions, "the cycle committed nothing to t"
    for version, content in versions:
        assert content in states, f"version {version} of t: {content} is no state of the server's t"
    assert delta_table(spark, path) == server_table(mariadb, f"{name}.t")
    assert server_table(mariadb, f"{name}.t")[0] == ["id", "a", "note"]  # the cycle ran as written
    # No Delta table left for the tool's shadow and changelog tables.
    left = sorted(d for d in os.listdir(cfg.delta_root) if any(d == f"{name}__{s}" for s in shadows))
    assert left == []
    assert spark.read.format("delta").load(f"{cfg.delta_root}/{QUARANTINE}").count() == 0
    # Rows the cycle did not change keep their lineage (1 and 4 from the snapshot, 5 its UPDATE);
    # the changed ones name the statements that changed them, as the server ran them on t.
    after = _lineages(spark, path)
    assert {k: after[k] for k in (1, 4, 5)} == {k: before[k] for k in (1, 4, 5)}
    assert after[5][1] == "UPDATE t SET a = 'FIVE' WHERE id = 5"
    assert after[101][1] == "INSERT INTO t VALUES (101, 'after', 'y')"
    # The copy is in the change log as what it is: the shadow's INSERT ... SELECT.
    log = spark.read.format("delta").load(f"{cfg.delta_root}/{CHANGE_LOG}").where(f"database = '{name}'")
    copied = log.where(log["lineage.statement"].startswith(copy_statement)).collect()
    assert {(r["table"], r["op"]) for r in copied} == {(shadows[0], "insert")} and len(copied) == 5

"""Online schema change tools as schema changes (issue #39 items 1-2), on a real MariaDB: gh-ost's
and pt-online-schema-change's statement patterns by plain SQL, with the whole cycle in one batch
and with the shadow filled in one batch and swapped in the next.

Asserted for each: every Delta version of `t` committed during the cycle is a state the server's
`t` had (its columns and rows: never empty, never partial); the end state equals the server's
SELECT; no Delta table is left for the tools' shadow and changelog tables; a row the copy did
not change keeps its lineage, and the copy is in the change log as what it is (the shadow's
INSERT ... SELECT). Then the same with pt-online-schema-change itself during a write workload."""
from __future__ import annotations

import json
import os
import random
import subprocess
import threading
from pathlib import Path

import pytest
from delta.tables import DeltaTable

from libs.tables.system_tables import CHANGE_LOG, QUARANTINE

from .helpers import delta_table, job_config, replicate, server_table, ship_snapshot

pytestmark = pytest.mark.integration

# gh-ost: changelog table, ghost table created and altered, rows copied by INSERT ... SELECT,
# the binlog's changes to t applied to the ghost, the atomic cut-over's swap, then the drops.
GH_OST_COPY = [
    "CREATE TABLE _{t}_ghc (id BIGINT AUTO_INCREMENT, last_update TIMESTAMP DEFAULT CURRENT_TIMESTAMP, "
    "hint VARCHAR(64), value VARCHAR(4096), PRIMARY KEY (id), UNIQUE KEY (hint))",
    "INSERT INTO _{t}_ghc (hint, value) VALUES ('state', 'GhostTableMigrated')",
    "CREATE TABLE _{t}_gho LIKE {t}",
    "ALTER TABLE _{t}_gho ADD COLUMN note VARCHAR(20) DEFAULT 'x'",
    "INSERT IGNORE INTO _{t}_gho (id, a) SELECT id, a FROM {t}",
    "INSERT INTO {t} VALUES (100, 'new')",
    "REPLACE INTO _{t}_gho (id, a) VALUES (100, 'new')",
]
GH_OST_SWAP = [
    "UPDATE {t} SET a = 'changed' WHERE id = 2",
    "REPLACE INTO _{t}_gho (id, a) VALUES (2, 'changed')",
    "REPLACE INTO _{t}_ghc (hint, value) VALUES ('state', 'AllEventsUpToLockProcessed')",
    "RENAME TABLE {t} TO _{t}_del, _{t}_gho TO {t}",
    "DROP TABLE IF EXISTS _{t}_ghc",
    "DROP TABLE IF EXISTS _{t}_del",
    "INSERT INTO {t} VALUES (101, 'after', 'y')",
]
# pt-online-schema-change: the new table created and altered, triggers on t feed it, the rows
# copied by INSERT LOW_PRIORITY IGNORE ... SELECT, the swap, the old table and triggers dropped.
PT_OSC_COPY = [
    "CREATE TABLE _{t}_new LIKE {t}",
    "ALTER TABLE _{t}_new ADD COLUMN note VARCHAR(20) DEFAULT 'x'",
    "CREATE TRIGGER pt_osc_{t}_del AFTER DELETE ON {t} FOR EACH ROW "
    "DELETE IGNORE FROM _{t}_new WHERE id = OLD.id",
    "CREATE TRIGGER pt_osc_{t}_upd AFTER UPDATE ON {t} FOR EACH ROW "
    "REPLACE INTO _{t}_new (id, a) VALUES (NEW.id, NEW.a)",
    "CREATE TRIGGER pt_osc_{t}_ins AFTER INSERT ON {t} FOR EACH ROW "
    "REPLACE INTO _{t}_new (id, a) VALUES (NEW.id, NEW.a)",
    "INSERT LOW_PRIORITY IGNORE INTO _{t}_new (id, a) SELECT id, a FROM {t} LOCK IN SHARE MODE",
    "INSERT INTO {t} VALUES (100, 'new')",
]
PT_OSC_SWAP = [
    "UPDATE {t} SET a = 'changed' WHERE id = 2",
    "DELETE FROM {t} WHERE id = 3",
    "RENAME TABLE {t} TO _{t}_old, _{t}_new TO {t}",
    "DROP TABLE IF EXISTS _{t}_old",
    "DROP TRIGGER IF EXISTS pt_osc_{t}_del",
    "DROP TRIGGER IF EXISTS pt_osc_{t}_upd",
    "DROP TRIGGER IF EXISTS pt_osc_{t}_ins",
    "INSERT INTO {t} VALUES (101, 'after', 'y')",
]
# table -> (copy, swap, the tool's working tables, its copy statement's start, swapped in a later batch)
TABLES = {"gh_one": (GH_OST_COPY, GH_OST_SWAP, ("gho", "ghc", "del"), "INSERT IGNORE INTO _{t}_gho", False),
          "gh_across": (GH_OST_COPY, GH_OST_SWAP, ("gho", "ghc", "del"), "INSERT IGNORE INTO _{t}_gho", True),
          "pt_one": (PT_OSC_COPY, PT_OSC_SWAP, ("new", "old"), "INSERT LOW_PRIORITY IGNORE INTO _{t}_new",
                     False),
          "pt_across": (PT_OSC_COPY, PT_OSC_SWAP, ("new", "old"), "INSERT LOW_PRIORITY IGNORE INTO _{t}_new",
                        True)}


def _run(mariadb, name: str, t: str, statements, states: dict) -> None:
    """Each statement on its own, the server's t recorded after each (the states it had)."""
    for statement in statements:
        mariadb.sql(statement.format(t=t), database=name)
        states[t].append(server_table(mariadb, f"{name}.{t}"))


def _version(spark, path: str) -> int:
    return DeltaTable.forPath(spark, path).history(1).collect()[0]["version"]


def _versions(spark, path: str, after: int) -> list[tuple[int, tuple]]:
    """Every Delta version of the table after version `after`, each as delta_table reads it."""
    out = []
    for version in range(after + 1, _version(spark, path) + 1):
        df = spark.read.format("delta").option("versionAsOf", version).load(path).drop("_row_id", "_lineage")
        out.append((version, (df.columns, sorted((tuple(r) for r in df.collect()),
                                                  key=lambda row: [(v is not None, v) for v in row]))))
    return out


def _idempotent(path: str, after: int) -> bool:
    """Every write of the job's to the table after version `after` (not a compaction) carries
    Delta's txn (app id, batch): a retried batch does not write it again."""
    for commit in sorted(Path(path, "_delta_log").glob("[0-9]*.json")):
        actions = [json.loads(line) for line in commit.read_text().splitlines() if line.strip()]
        write = any(a["commitInfo"].get("operation") in ("WRITE", "MERGE")
                    for a in actions if "commitInfo" in a)
        if int(commit.stem) > after and write and not any("txn" in a for a in actions):
            return False
    return True


def _lineages(spark, path: str) -> dict[int, tuple]:
    rows = (spark.read.format("delta").load(path)
            .select("id", "_lineage.binlog_pos", "_lineage.statement").collect())
    return {r["id"]: (r["binlog_pos"], r["statement"]) for r in rows}


def test_an_online_schema_change_is_one_commit_of_the_new_table(mariadb, kafka_broker, topic, spark,
                                                                tmp_path):
    """gh-ost's and pt-osc's cycles side by side, each once within one batch and once with the
    shadow filled in one batch and swapped in the next."""
    name = "osc_swaps"
    mariadb.sql(f"DROP DATABASE IF EXISTS {name}; CREATE DATABASE {name}; " + "".join(
        f"CREATE TABLE {name}.{t} (id INT PRIMARY KEY, a VARCHAR(10)); "
        f"INSERT INTO {name}.{t} VALUES (1, 'one'), (2, 'two'), (3, 'three'); "
        f"INSERT INTO {name}.{t} VALUES (4, 'four'), (5, 'five'); " for t in TABLES))
    cfg = job_config(kafka_broker, topic, tmp_path, name)
    path = {t: f"{cfg.delta_root}/{name}__{t}" for t in TABLES}
    ship_snapshot(mariadb, kafka_broker, topic, name)
    for t in TABLES:  # a lineage other than the snapshot's
        mariadb.sql(f"UPDATE {t} SET a = 'FIVE' WHERE id = 5", database=name)
    ship_snapshot(mariadb, kafka_broker, topic, name)
    replicate(spark, cfg)
    states = {t: [server_table(mariadb, f"{name}.{t}")] for t in TABLES}
    assert all(delta_table(spark, path[t]) == states[t][0] for t in TABLES)
    start = {t: _version(spark, path[t]) for t in TABLES}
    before = {t: _lineages(spark, path[t]) for t in TABLES}

    for t, (copy, _swap, _shadows, _statement, across) in TABLES.items():
        if across:  # the shadow filled in one batch, swapped in the next
            _run(mariadb, name, t, copy, states)
    ship_snapshot(mariadb, kafka_broker, topic, name)
    replicate(spark, cfg)
    for t, (copy, swap, _shadows, _statement, across) in TABLES.items():
        _run(mariadb, name, t, swap if across else copy + swap, states)
    ship_snapshot(mariadb, kafka_broker, topic, name)
    replicate(spark, cfg)

    log = spark.read.format("delta").load(f"{cfg.delta_root}/{CHANGE_LOG}").where(f"database = '{name}'")
    for t, (_copy, _swap, shadows, copy_statement, _across) in TABLES.items():
        # Every version of t a reader could see is a state the server's t had.
        versions = _versions(spark, path[t], start[t])
        assert versions, f"{t}: the cycle committed nothing"
        for version, content in versions:
            assert content in states[t], (f"version {version} of {t}: {content} "
                                          f"is no state of the server's {t}")
        assert delta_table(spark, path[t]) == server_table(mariadb, f"{name}.{t}")
        assert server_table(mariadb, f"{name}.{t}")[0] == ["id", "a", "note"]  # the cycle ran as written
        assert _idempotent(path[t], start[t]), f"{t}: a commit of the cycle without its batch's txn"
        # No Delta table left for the tool's working tables.
        assert not [s for s in shadows if os.path.exists(f"{cfg.delta_root}/{name}___{t}_{s}")], t
        # Rows the cycle did not change keep their lineage (1 and 4 from the snapshot, 5 its UPDATE).
        after = _lineages(spark, path[t])
        assert {k: after[k] for k in (1, 4, 5)} == {k: before[t][k] for k in (1, 4, 5)}, t
        assert after[5][1] == f"UPDATE {t} SET a = 'FIVE' WHERE id = 5"
        assert after[101][1] == f"INSERT INTO {t} VALUES (101, 'after', 'y')"
        # The copy is in the change log as what it is: the working table's INSERT ... SELECT.
        copied = log.where(log["lineage.statement"].startswith(copy_statement.format(t=t))).collect()
        assert ({(r["table"], r["op"]) for r in copied} == {(f"_{t}_{shadows[0]}", "insert")}
                and len(copied) == 5)
    assert spark.read.format("delta").load(f"{cfg.delta_root}/{QUARANTINE}").count() == 0


def test_pt_online_schema_change_during_writes(mariadb, kafka_broker, topic, spark, tmp_path):
    """Percona Toolkit's pt-online-schema-change itself (Debian's percona-toolkit) adds a column
    while a writer inserts and updates rows; the job reads in small micro-batches, so the copy,
    the triggers' writes and the swap spread over several batches. Every Delta version of t has
    a row count the server's t had (the writer only inserts: every count from the start to the
    end was one), its end equals the server's, no `_t_new` / `_t_old` Delta table remains, rows
    nothing changed keep their snapshot lineage, and the copy is in the change log under `_t_new`."""
    name = "osc_pt_tool"
    mariadb.sql(f"DROP DATABASE IF EXISTS {name}; CREATE DATABASE {name}; "
                f"CREATE TABLE {name}.t (id INT AUTO_INCREMENT PRIMARY KEY, k INT, c VARCHAR(40)); "
                f"INSERT INTO {name}.t (k, c) SELECT seq, CONCAT('row ', seq) FROM {name}.seq_1_to_1000")
    cfg = job_config(kafka_broker, topic, tmp_path, name, max_offsets_per_trigger=40)
    path = f"{cfg.delta_root}/{name}__t"
    ship_snapshot(mariadb, kafka_broker, topic, name)
    replicate(spark, cfg)
    start, before = _version(spark, path), _lineages(spark, path)
    first = mariadb.query(f"SELECT COUNT(*) FROM {name}.t")[0][0]

    updated: set[int] = set()
    done = threading.Event()

    def writer():
        conn, rng = mariadb.connect(), random.Random(39)
        with conn.cursor() as cur:
            while not done.is_set():
                cur.execute(f"INSERT INTO {name}.t (k, c) VALUES (%s, 'written')", (rng.randrange(1000),))
                row = rng.randrange(1, 1000)
                cur.execute(f"UPDATE {name}.t SET k = k + 1 WHERE id = %s", (row,))
                updated.add(row)
                done.wait(0.05)
        conn.close()

    thread = threading.Thread(target=writer)
    thread.start()
    try:
        tool = subprocess.run(
            ["pt-online-schema-change", "--alter", "ADD COLUMN note VARCHAR(20) DEFAULT 'x'", "--execute",
             "--chunk-size", "200", "--recursion-method", "none", "--no-check-unique-key-change",
             f"h={mariadb.host},P={mariadb.port},u={mariadb.user},p={mariadb.password},D={name},t=t"],
            capture_output=True, text=True, timeout=300)
    finally:
        done.set()
        thread.join()
    assert tool.returncode == 0, tool.stdout + tool.stderr
    assert "Successfully altered" in tool.stdout, tool.stdout
    last = mariadb.query(f"SELECT COUNT(*) FROM {name}.t")[0][0]
    ship_snapshot(mariadb, kafka_broker, topic, name)
    replicate(spark, cfg)

    counts = [len(rows) for _version_id, (_columns, rows) in _versions(spark, path, start)]
    assert counts and all(first <= n <= last for n in counts), (first, last, counts)
    assert counts == sorted(counts), counts  # the writer only inserts: the server's count never fell
    assert delta_table(spark, path) == server_table(mariadb, f"{name}.t")
    assert server_table(mariadb, f"{name}.t")[0] == ["id", "k", "c", "note"]
    assert [d for d in os.listdir(cfg.delta_root) if d.startswith(f"{name}___t_")] == []
    after = _lineages(spark, path)
    untouched = [i for i in range(1, first + 1) if i not in updated]
    assert len(untouched) > first // 2 and all(after[i] == before[i] for i in untouched)
    log = spark.read.format("delta").load(f"{cfg.delta_root}/{CHANGE_LOG}").where(f"database = '{name}'")
    copied = log.where(log["lineage.statement"].startswith("INSERT LOW_PRIORITY IGNORE INTO")).collect()
    assert {r["table"] for r in copied} == {"_t_new"} and len(copied) >= first
    assert spark.read.format("delta").load(f"{cfg.delta_root}/{QUARANTINE}").count() == 0

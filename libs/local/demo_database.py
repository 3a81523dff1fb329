"""The demo database: five tables a CDC must get right (primary key, composite key, unique key
only, no key with duplicate rows, BLOB/TEXT in utf8mb4), filled by the server itself, and a
deterministic workload over them. Used by the onboarding demo (pipelines/onboard_demo.py), the
snapshot tests and bench/snapshot_bench.py, so the demo runs what the tests check.

    db.sql(create_script("demo", sizes(100_000)))
    for statement in workload_transaction(random.Random(7), i, set(TABLES)): ...   # '{db}' in each
"""
from __future__ import annotations

import random

TABLES = ("t_blob", "t_cpk", "t_nokey", "t_pk", "t_uk")

def workload_transaction(rng: random.Random, i: int, tables: set[str]) -> list[str]:
    """One deterministic transaction over the test schema (tables_schema), only `tables`."""
    r = rng.randint(1, 2000)
    out = []
    if "t_pk" in tables:
        out += [f"UPDATE {{db}}.t_pk SET qty = qty + 1, note = CONCAT(IFNULL(note, ''), 'u') "
                f"WHERE id = {r}",
                f"INSERT INTO {{db}}.t_pk (id, name, qty) VALUES ({1_000_000_000 + i}, 'w{i}', {i})"]
        if i % 3 == 0:
            out.append(f"DELETE FROM {{db}}.t_pk WHERE id = {r + 1}")
    if "t_cpk" in tables and i % 2 == 0:
        out.append(f"UPDATE {{db}}.t_cpk SET v = 'w{i}' WHERE a = {r % 50} AND b = {r % 37}")
    if "t_uk" in tables:
        out.append(f"INSERT INTO {{db}}.t_uk VALUES ('w{i}', {i} * 0.25)")
        out.append(f"UPDATE {{db}}.t_uk SET val = val + 1 WHERE code = 'c{r}'")
    if "t_nokey" in tables:
        out.append(f"INSERT INTO {{db}}.t_nokey VALUES ({r % 40}, 'dup')")
        if i % 2:
            out.append(f"DELETE FROM {{db}}.t_nokey WHERE a = {r % 40} AND b = 'dup' LIMIT 1")
    if "t_blob" in tables and i % 2 == 1:
        out.append(f"UPDATE {{db}}.t_blob SET data = UNHEX(REPEAT('00FF{i % 256:02X}', "
                   f"{i % 50 + 1})), txt = CONCAT(txt, 'é') WHERE id = {r}")
    return out


TABLES_SQL = """
CREATE TABLE {db}.t_pk (id INT PRIMARY KEY, name VARCHAR(40), qty INT DEFAULT 7, note TEXT);
CREATE TABLE {db}.t_cpk (a INT, b INT, v VARCHAR(20), PRIMARY KEY (a, b));
CREATE TABLE {db}.t_uk (code VARCHAR(12) NOT NULL, val DOUBLE, UNIQUE KEY (code));
CREATE TABLE {db}.t_nokey (a INT, b VARCHAR(20));
CREATE TABLE {db}.t_blob (id INT PRIMARY KEY, data BLOB, txt TEXT) DEFAULT CHARSET=utf8mb4;
"""
LOAD_SQL = """
INSERT INTO {db}.t_pk SELECT seq, CONCAT('n', seq), seq % 17,
  IF(seq % 5 = 0, NULL, REPEAT('t', seq % 40)) FROM seq_1_to_{n_pk};
INSERT INTO {db}.t_cpk SELECT seq % 50, seq DIV 50, CONCAT('v', seq) FROM seq_0_to_{n_cpk_1};
INSERT INTO {db}.t_uk SELECT CONCAT('c', seq), seq / 8 FROM seq_1_to_{n_uk};
INSERT INTO {db}.t_nokey SELECT seq % 40, 'dup' FROM seq_1_to_{n_nokey};
INSERT INTO {db}.t_blob SELECT seq, UNHEX(REPEAT(LPAD(HEX(seq % 256), 2, '0'), seq % 300)),
  REPEAT('ü', seq % 30) FROM seq_1_to_{n_blob};
"""


def sizes(rows: int) -> dict[str, int]:
    """`rows` over the tables: 40% t_pk, 25% t_cpk, 15% t_uk, 10% t_nokey, 10% t_blob."""
    return dict(n_pk=rows * 40 // 100, n_cpk=rows * 25 // 100, n_uk=rows * 15 // 100,
                n_nokey=rows * 10 // 100, n_blob=rows - rows * 90 // 100)


def create_script(name: str, table_sizes: dict[str, int]) -> str:
    """SQL that (re)creates database `name` with the tables and rows of `table_sizes`
    (sizes()); needs MariaDB's sequence engine (seq_1_to_N)."""
    script = (f"DROP DATABASE IF EXISTS {name}; CREATE DATABASE {name}; USE {name};"
              + TABLES_SQL.format(db=name))
    return script + LOAD_SQL.format(db=name, n_cpk_1=table_sizes["n_cpk"] - 1, **table_sizes)

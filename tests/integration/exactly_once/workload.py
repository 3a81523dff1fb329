"""The source workload of the exactly-once test: three tables covering the row-lookup rules of
WL#5092 (a primary key, only a NOT NULL unique key, no key at all) under
binlog_row_image=MINIMAL, and rounds of DML that exercise what a replica must get right.

Each round (seeded: values vary with the seed, the shape does not) holds:
  * inserts omitting columns (the target's DEFAULTs fill them, WL#5092 "slave-side defaults")
    and full-row inserts, single- and multi-row;
  * identical rows in the keyless table, then UPDATE ... LIMIT 1 / DELETE ... LIMIT 1 on them
    (exactly one of the identical rows changes, as on a real replica);
  * one-column updates (MINIMAL after image = that column only);
  * key-changing updates (`SET id = id + 100000000`, above the ids of every round below
    MAX_ROUNDS, and unique-key value changes);
  * a multi-statement transaction touching one row several times (delete, re-insert, update);
  * a ROLLBACK (nothing reaches the binlog) and a ROLLBACK TO SAVEPOINT (half of it does);
  * changes to rows of the previous round.
No DDL after the CREATE TABLEs: the apply stage records DDL, it never executes it (issue #5).
"""
from __future__ import annotations

import random

TABLES = ("t_pk", "t_uk", "t_nokey")
MAX_ROUNDS = 10_000  # round r uses ids r*1000 + (0..99): below the key-change offset


def schema_sql(db: str) -> str:
    # Literal defaults only: a CURRENT_TIMESTAMP default is evaluated on the replica at apply
    # time (WL#5092 slave-side default) and could never equal the master's value.
    return f"""
DROP DATABASE IF EXISTS {db}; CREATE DATABASE {db}; USE {db};
CREATE TABLE t_pk (id INT PRIMARY KEY, name VARCHAR(40) NOT NULL DEFAULT 'anon', qty INT DEFAULT 7,
                   price DECIMAL(10,2) DEFAULT 1.50, note TEXT,
                   made DATETIME(3) DEFAULT '2020-01-02 03:04:05.678') ENGINE=InnoDB;
CREATE TABLE t_uk (code VARCHAR(16) NOT NULL, val DOUBLE, cnt INT NOT NULL DEFAULT 0,
                   UNIQUE KEY uk_code (code)) ENGINE=InnoDB;
CREATE TABLE t_nokey (a INT, b VARCHAR(20) DEFAULT 'dflt', c BLOB) ENGINE=InnoDB;
"""


def round_transactions(db: str, r: int, rng: random.Random) -> list[list[str]]:
    """Round r as transactions; a transaction is its statements, the last one COMMIT, ROLLBACK
    or (a single autocommit statement) the statement itself."""
    if not 0 <= r < MAX_ROUNDS:
        raise ValueError(f"round {r} outside 0..{MAX_ROUNDS - 1}")
    base, prev = r * 1000, (r - 1) * 1000
    word = lambda: "".join(rng.choice("abcdefghij") for _ in range(rng.randint(1, 12)))  # noqa: E731
    num = lambda: round(rng.uniform(-1e6, 1e6), 3)  # noqa: E731
    blob = lambda: "0x" + rng.randbytes(rng.randint(1, 40)).hex()  # noqa: E731
    t = lambda name: f"`{db}`.`{name}`"  # noqa: E731
    defaults = ", ".join(f"({base + i}, '{word()}')" for i in range(1, 11))
    full = ", ".join(f"({base + i}, '{word()}', {rng.randint(0, 99)}, {rng.randint(0, 9999)}.25, "
                     f"REPEAT('{word()}', {rng.randint(1, 200)}), '2024-0{rng.randint(1, 9)}-1{r % 10} "
                     f"10:11:12.{rng.randint(0, 999):03d}')" for i in range(11, 16))
    uk_rows = ", ".join(f"('r{r}k{i}', {num()})" for i in range(6))
    dup = blob()
    txns: list[list[str]] = [
        [f"INSERT INTO {t('t_pk')} (id, name) VALUES {defaults}"],
        [f"INSERT INTO {t('t_pk')} VALUES {full}"],
        ["BEGIN",
         f"INSERT INTO {t('t_uk')} (code, val) VALUES {uk_rows}",
         *[f"INSERT INTO {t('t_nokey')} (a, b, c) VALUES ({r}, 'dup', {dup})" for _ in range(3)],
         f"INSERT INTO {t('t_nokey')} (a) VALUES ({r}), ({r})",
         f"UPDATE {t('t_pk')} SET qty = qty + 1 WHERE id BETWEEN {base + 1} AND {base + 5}",
         "COMMIT"],
        ["BEGIN",
         f"UPDATE {t('t_nokey')} SET b = 'one' WHERE a = {r} AND b = 'dup' LIMIT 1",
         f"DELETE FROM {t('t_nokey')} WHERE a = {r} AND b = 'dup' LIMIT 1",
         f"UPDATE {t('t_nokey')} SET c = {blob()} WHERE a = {r} AND b = 'dflt' LIMIT 1",
         f"UPDATE {t('t_uk')} SET val = {num()} WHERE code = 'r{r}k1'",
         f"UPDATE {t('t_uk')} SET code = 'r{r}k2x' WHERE code = 'r{r}k2'",
         "COMMIT"],
        [f"UPDATE {t('t_pk')} SET id = id + 100000000 WHERE id BETWEEN {base + 6} AND {base + 8} "
         "ORDER BY id DESC"],
        ["BEGIN",
         f"DELETE FROM {t('t_pk')} WHERE id = {base + 9}",
         f"INSERT INTO {t('t_pk')} (id, name, note) VALUES ({base + 9}, 'again', REPEAT('n', 500))",
         f"UPDATE {t('t_pk')} SET name = '{word()}' WHERE id = {base + 9}",
         f"UPDATE {t('t_pk')} SET price = price + 1 WHERE id = {base + 9}",
         f"UPDATE {t('t_pk')} SET id = {base + 20} WHERE id = {base + 10}",
         "COMMIT"],
        ["BEGIN",
         f"INSERT INTO {t('t_pk')} (id, name) VALUES ({base + 50}, 'ghost')",
         f"UPDATE {t('t_nokey')} SET a = -1 WHERE a = {r}",
         "ROLLBACK"],
        ["BEGIN",
         f"INSERT INTO {t('t_pk')} (id, name) VALUES ({base + 60}, 'kept')",
         "SAVEPOINT s1",
         f"INSERT INTO {t('t_pk')} (id, name) VALUES ({base + 61}, 'undone')",
         f"DELETE FROM {t('t_uk')} WHERE code = 'r{r}k3'",
         "ROLLBACK TO SAVEPOINT s1",
         f"UPDATE {t('t_uk')} SET cnt = cnt + 1 WHERE code = 'r{r}k4'",
         "COMMIT"],
        [f"DELETE FROM {t('t_uk')} WHERE code = 'r{r}k0'"],
    ]
    if r > 0:
        txns.append(["BEGIN",
                     f"UPDATE {t('t_pk')} SET qty = NULL WHERE id = {prev + 3}",
                     f"UPDATE {t('t_pk')} SET made = '2023-12-31 23:59:59.999' WHERE id = {prev + 4}",
                     f"DELETE FROM {t('t_nokey')} WHERE a = {r - 1} LIMIT 1",
                     f"UPDATE {t('t_uk')} SET val = NULL WHERE code = 'r{r - 1}k5'",
                     "COMMIT"])
    return txns


def run_round(conn, db: str, r: int, rng: random.Random) -> None:
    """Execute round r on an autocommit PyMySQL connection whose session logs MINIMAL images."""
    with conn.cursor() as cur:
        for txn in round_transactions(db, r, rng):
            for statement in txn:
                cur.execute(statement)
